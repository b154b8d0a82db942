// @ts-check
import { AbortError, OutputError, PrerenderError } from '../errors.js';
import { isHtmlType, mimeOf, wantedFileName } from '../naming/file-names.js';
import { encodeScan, parseLinkLines } from '../document/rewrite.js';
import { createStepRunner } from './steps.js';
import { sha256 } from '../store/blobs.js';
import { intern } from './run.js';
import { warn } from '../warnings.js';
import { pickStored, reusable } from '../recrawl/prior.js';
import { failOrKeep, intactLinks, keepStored } from './carry.js';
import { redirect } from './outcomes.js';
import { admit, admitted, links } from './links.js';
import { cacheLifetime } from '../recrawl/freshness.js';

/**
 * Phase one: load → transforms → classify → scan → links → stage, `--concurrency` pages in flight. Nothing is written
 * to the tree here: bodies and scans go to the blob store, what is learnt to the record store.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../store/frontier.js').FrontierItem} FrontierItem
 * @typedef {{
 *   key: string, record: PageRecord, result: import('../fetch/http.js').LoadResult | undefined, url: URL | undefined,
 *   scan: { links: { key?: string | null, kind: import('../document/scan-html.js').LinkKind }[], nofollow?: boolean } | null,
 *   staged?: { scanBytes: Buffer, ids: string[], stored: boolean }, finished: boolean, requisitesSkipped?: number,
 *   linksTo?: import('./early.js').LinksTo, stored?: import('../recrawl/state.js').StoredPage | null,
 * }} PageInFlight
 *   staged: what a worker thread made; stored: the last run's copy if it can be kept, looked up once before the request
 */

/** @param {Record<string, string | string[] | undefined>} headers @param {string} name lower case */
function headerValue(headers, name) {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** @param {import('../fetch/http.js').LoadResult | undefined} result */
function loaded(result) {
  if (!result) throw new Error('no load result');
  return result;
}

/** Admit the roots, then crawl until the frontier is empty or the run is aborted. @param {CrawlRun} run @param {string[]} roots */
export async function discover(run, roots) {
  const rootItems = [];
  for (const root of roots) {
    const decision = run.scope.decide(root);
    if (decision.decision === 'crawl') rootItems.push({ key: root, kind: /** @type {const} */ ('navigation'), referrer: null, decision });
    else run.emit('link', { from: null, url: root, kind: 'navigation', followed: false, ...decision });
  }
  await admit(run, rootItems);
  await pump(run);
}

/** @param {CrawlRun} run */
function pump(run) {
  const { frontier, signal, stats } = run;
  // As many pages again may be past their request meanwhile, so connections never wait for the CPU work before.
  const requests = run.options.concurrency;
  // Shared crawl: lease no more than the slowest step can keep busy, or other processes starve.
  const narrowest = Math.min(...run.transforms.map((transform) => transform.concurrency ?? Infinity));
  const capacity = run.coordination.shared && narrowest < requests ? narrowest * 2 : requests * 2;
  const runPage = createStepRunner(/** @type {import('./steps.js').Step<PageInFlight>[]} */ ([
    { name: 'load', concurrency: requests, run: (page) => load(run, page) },
    ...run.transforms.map((transform) => ({ name: transform.name, concurrency: transform.concurrency, run: (/** @type {PageInFlight} */ page) => transform.run(page, run) })),
    { name: 'classify', run: (page) => classify(run, page) },
    { name: 'scan', run: (page) => scan(run, page) },
    { name: 'links', run: (page) => links(run, page) },
    { name: 'stage', run: (page) => stage(run, page) },
  ]));

  /** @param {string} key */
  const visit = async (key) => {
    const record = await run.records.get(key);
    if (!record) throw new Error(`no record for ${key}`);
    /** @type {PageInFlight} */ const page = { key, record, result: undefined, url: undefined, scan: null, finished: false };
    try {
          if (!(await run.hooks.beforeFetch(page))) await runPage(page);
    } catch (error) {
      if (error instanceof AbortError) {
        await frontier.retry(key);
        return;
      }
      if (error instanceof OutputError) throw error; // the run cannot go on
      await failOrKeep(run, page, error);
    }
    run.hooks.afterPage(page);
    const promoted = await frontier.done(key, { page: record.state === 'done', requisitesSkipped: page.requisitesSkipped, linksTo: page.linksTo });
    if (promoted.length > 0) await admitted(run, promoted, promoted.map(() => 'added'));
  };

  return new Promise((resolve, reject) => {
    let active = 0;
    /** @type {(() => void) | null} */ let wake = null;
    /** @type {Promise<void> | null} */ let idle = null;
    const loop = async () => {
      for (;;) {
        let took = -1;
        if (!signal.aborted && active < capacity) {
          const keys = await frontier.take(capacity - active);
          took = keys.length;
          for (const key of keys) {
            active++;
            visit(key).then(() => {
              active--;
              wake?.();
            }, reject);
          }
        }
        const counts = frontier.counts();
        stats.active = active;
        stats.queued = counts.queued;
        if (active === 0 && (signal.aborted || counts.queued === 0)) return;
        if (active > 0 && (active >= capacity || counts.queued === 0 || signal.aborted)) {
          await new Promise((/** @type {(value?: unknown) => void} */ done) => { wake = done; });
          wake = null;
        } else if (took === 0 && (idle = run.coordination.idle())) {
          // Work held elsewhere (other processes, politeness): wait a little, or for a page here.
          await Promise.race([idle, new Promise((/** @type {(value?: unknown) => void} */ done) => { wake = done; })]);
          wake = null;
        }
      }
    };
    loop().then(resolve, reject);
  });
}

/** @param {CrawlRun} run @param {PageInFlight} page */
async function load(run, page) {
  page.result = await run.loader.load(page.key, { signal: run.signal, headers: run.hooks.requestHeaders(page) });
}

/** A redirect ends here; a 304 with no earlier copy fails; a page gets its type, validators and wanted name. @param {CrawlRun} run @param {PageInFlight} page */
async function classify(run, page) {
  const result = loaded(page.result);
  const record = page.record;
  if (result.location !== undefined) {
    await redirect(run, page, result.status, result.location);
    page.finished = true;
    return;
  }
  if (result.notModified) {
    const stored = page.stored === undefined ? reusable(run.prior, page.key, run.blobs) : page.stored;
    if (!stored) throw new PrerenderError('HTTP 304 Not Modified, and there is no earlier copy of this page to keep', { code: 'NOT_MODIFIED' });
    if (!(await keepStored(run, page, stored, 'fetched in full'))) {
      // Its staged copy is damaged: fetched again without validators, as a new page.
      page.stored = null;
      page.result = await run.loader.load(page.key, { signal: run.signal });
      return classify(run, page);
    }
    // A 304 updates the validators it sends (RFC 9111, 4.3.4): the next run asks with those.
    const etag = headerValue(result.headers, 'etag');
    const lastModified = headerValue(result.headers, 'last-modified');
    if (etag) page.record.etag = etag;
    if (lastModified) page.record.lastModified = lastModified;
    // A 304 may carry the name header: a page renamed without a new body.
    if (result.headers['cache-control'] !== undefined) Object.assign(page.record, { maxAge: undefined, immutable: undefined }, cacheLifetime(result.headers));
    const header = headerValue(result.headers, 'x-builder-filename') ?? headerValue(result.headers, 'xbuilder-filename');
    if (header !== undefined) page.record.wanted = wantedName(run, page.key, page.url ?? new URL(page.key), /** @type {string} */ (page.record.contentType), result.headers);
    return;
  }
  const contentType = intern(run, headerValue(result.headers, 'content-type') ?? 'application/octet-stream');
  const html = isHtmlType(contentType);
  const css = !html && run.options.assets && mimeOf(contentType) === 'text/css';
  page.url = new URL(page.key);
  record.status = result.status;
  record.contentType = contentType;
  record.type = html ? 'html' : css ? 'css' : 'other';
  record.etag = headerValue(result.headers, 'etag');
  record.lastModified = headerValue(result.headers, 'last-modified');
  record.wanted = wantedName(run, page.key, page.url, contentType, result.headers);
  const { maxAge, immutable } = cacheLifetime(result.headers);
  record.maxAge = maxAge;
  record.immutable = immutable;
}

/**
 * The file a page asks for; an unsafe name header is a warning.
 * @param {CrawlRun} run @param {string} key @param {URL} url @param {string} contentType @param {Record<string, string | string[] | undefined>} headers
 */
function wantedName(run, key, url, contentType, headers) {
  const header = headerValue(headers, 'x-builder-filename') ?? headerValue(headers, 'xbuilder-filename');
  // A requisite of another origin (--assets-origins) goes under its host's directory.
  const hostDir = run.multiOrigin || !run.origins.has(url.origin);
  const wanted = wantedFileName(url, contentType, header, hostDir, run.nameRules.ruleFor(key) ?? {});
  if (wanted.refused) {
    if (wanted.refusedFrom === 'name rule') warn(run, key, 'NAME_RULE', wanted.refused.message.replace('unsafe file name', 'unsafe name from --name rule'));
    else warn(run, key, 'UNSAFE_NAME', wanted.refused.message);
  }
  return wanted.file;
}

/** Tokenise HTML or CSS once and resolve its links, on a thread once the crawl is big enough. @param {CrawlRun} run @param {PageInFlight} page */
async function scan(run, page) {
  const record = page.record;
  if (record.type === 'other' || page.scan) return;
  const body = loaded(page.result).body;
  if (await scanAsBefore(run, page, body)) return;
  // Only past the first pages and with enough of this work: a re-crawl answered by 304s has next to none.
  const from = run.options.threadsFrom;
  if (run.stats.fetched >= from && run.threads.requests >= from / 2) run.threads.warm();
  const url = page.url ?? new URL(page.key);
  const scanned = await run.threads.scan({
    body, type: record.type === 'css' ? 'css' : 'html', contentType: /** @type {string} */ (record.contentType), url: url.href,
    stageDir: record.change === 'not-modified' ? undefined : run.blobs?.stageDir,
  });
  record.charset = intern(run, scanned.charset);
  page.scan = { links: parseLinkLines(scanned.links), nofollow: scanned.nofollow };
  page.staged = { scanBytes: scanned.scanBytes, ids: [scanned.bodyId, scanned.scanId], stored: scanned.stored };
}

/**
 * Bytes equal to the last run's copy scan the same, so the stored scan is taken; body and scan are already staged.
 * @param {CrawlRun} run @param {PageInFlight} page @param {Buffer} body
 */
async function scanAsBefore(run, page, body) {
  const blobs = run.blobs;
  const prior = run.prior;
  if (!blobs?.locate || !prior?.reuse) return false;
  const record = page.record;
  const before = pickStored(prior.pages, page.key, ['state', 'type', 'contentType', 'charset', 'body', 'scan']);
  if (!before || before.state !== 'done' || before.type !== record.type || before.contentType !== record.contentType) return false;
  if (!before.body || !before.scan || !blobs.has(before.body) || !blobs.has(before.scan)) return false;
  // The length first: a changed page is seldom the same size, and costs no hash then.
  if (blobs.locate(before.body).length !== body.length || sha256(body) !== before.body) return false;
  const scan = await intactLinks(run, page.key, before.scan, 'scanned again');
  if (!scan) return false;
  page.scan = scan;
  record.charset = before.charset === undefined ? undefined : intern(run, before.charset);
  page.staged = { scanBytes: NO_BYTES, ids: [before.body, before.scan], stored: true };
  return true;
}

const NO_BYTES = Buffer.alloc(0);

/** Keep body and scan for phase two; record the page as fetched. @param {CrawlRun} run @param {PageInFlight} page */
async function stage(run, page) {
  const record = page.record;
  const body = loaded(page.result).body;
  if (run.blobs && record.change !== 'not-modified') {
    const ids = page.staged?.stored
      ? page.staged.ids
      : page.staged
      ? await run.blobs.put([body, page.staged.scanBytes], page.staged.ids)
      : await run.blobs.put(page.scan ? [body, encodeScan(/** @type {import('../document/rewrite.js').DocumentScan} */ (page.scan))] : [body]);
    const before = run.prior?.pages.get(page.key);
    record.compare = undefined;
    const sameBody = before?.body === ids[0];
    const same = (await run.hooks.sameAs(record, body, before, sameBody)) || sameBody;
    record.change = !before || before.state !== 'done' ? 'new' : same ? 'same-bytes' : 'changed';
    record.body = ids[0];
    record.scan = ids[1];
  } else if (!run.blobs) {
    record.body = page.staged?.ids[0] ?? sha256(body); // a dry run (preview) tells identical duplicates apart as a crawl does
  }
  if (record.type === 'other' && record.change !== 'not-modified') {
    record.bytes = body.length;
    record.sha256 = record.body;
  }
  record.referrers = undefined; // only failures need them
  record.state = 'done';
  record.fetched = run.now; // fetched or revalidated now: the age fresh rules and sitemap dates count from
  await run.records.put(record);
  run.hooks.recorded(record);
  run.stats.fetched++;
  run.emit('page', { url: page.key, wantedFile: record.wanted, status: record.status, contentType: record.contentType, bytes: body.length });
}
