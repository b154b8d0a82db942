// @ts-check
import { AbortError, OutputError, PrerenderError } from '../errors.js';
import { isHtmlType, mimeOf, wantedFileName } from '../naming/file-names.js';
import { encodeScan, parseLinkLines } from '../document/rewrite.js';
import { canonicalKey, parseHttpUrl } from '../url.js';
import { createStepRunner } from './steps.js';
import { sha256 } from '../store/blobs.js';
import { intern, warn } from './run.js';
import { conditionalHeaders, pickStored, reusable } from '../recrawl/prior.js';
import { failOrKeep, intactLinks, journal, keepStored, resumable, resumeFrom } from './carry.js';

/**
 * Phase one: every in-scope URL goes load → transforms → classify → scan and
 * resolve → decide links → stage, through the step runner, while the pump
 * keeps `--concurrency` pages in flight. Nothing is written to the tree here;
 * bodies and scans go to the blob store, what is learnt to the record store.
 *
 * @typedef {import('./run.js').CrawlRun} CrawlRun
 * @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../store/frontier.js').FrontierItem} FrontierItem
 * @typedef {{
 *   key: string,
 *   record: PageRecord,
 *   result: import('../fetch/http.js').LoadResult | undefined,
 *   url: URL | undefined,
 *   scan: { links: { key?: string | null, kind: import('../document/scan-html.js').LinkKind }[], nofollow?: boolean } | null,
 *   staged?: { scanBytes: Buffer, ids: string[], stored: boolean },
 *   finished: boolean,
 *   requisitesSkipped?: number,
 *   linksTo?: import('./early.js').LinksTo,
 *   stored?: import('../recrawl/state.js').StoredPage | null,
 * }} PageInFlight
 *   scan: the page's links, resolved (a DocumentScan, or the links a worker thread sent back);
 *   staged: the encoded scan and the blob ids of body and scan, when a worker thread made them
 *   (stored: and wrote them into the blob store's stageDir);
 *   requisitesSkipped: references to requisites of the roots' origins not fetched (no --assets);
 *   linksTo: with early writes (early.js), the URLs the page links to, and those of them that can
 *   never be a page of this crawl (as the links step decided them);
 *   stored: the last run's copy of the page, when it can be kept (looked up once, before the request)
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

/**
 * Admit the roots, then crawl until the frontier is empty or the run is aborted.
 * @param {CrawlRun} run
 * @param {string[]} roots
 */
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

/**
 * @param {CrawlRun} run
 */
function pump(run) {
  const { frontier, signal, stats } = run;
  // --concurrency requests in flight; as many pages again may be past their
  // request (tokenised, in a worker thread, staged) meanwhile, so that the
  // connections never wait for the CPU work of the pages before.
  const requests = run.options.concurrency;
  // In a shared crawl, no more pages leased than a slow step (the render tabs)
  // can keep busy: pages held here would wait while other processes starve.
  const narrowest = Math.min(...run.transforms.map((transform) => transform.concurrency ?? Infinity));
  const capacity = run.options.frontier && narrowest < requests ? narrowest * 2 : requests * 2;
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
    /** @type {PageInFlight} */
    const page = { key, record, result: undefined, url: undefined, scan: null, finished: false };
    try {
      const entry = run.resumed?.get(key);
      if (!entry || !resumable(run, entry) || !(await resumeFrom(run, page, entry))) await runPage(page);
    } catch (error) {
      if (error instanceof AbortError) {
        await frontier.retry(key);
        return;
      }
      if (error instanceof OutputError) throw error; // the run cannot go on
      await failOrKeep(run, page, error);
    }
    run.revalidator?.forget(key);
    run.early?.visited(page);
    const promoted = await frontier.done(key, { page: record.state === 'done', requisitesSkipped: page.requisitesSkipped, linksTo: page.linksTo });
    if (promoted.length > 0) await admitted(run, promoted, promoted.map(() => 'added'));
  };

  return new Promise((resolve, reject) => {
    let active = 0;
    /** @type {(() => void) | null} */
    let wake = null;
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
        } else if (took === 0 && frontier.idle) {
          // A shared frontier with work held elsewhere (other workers, politeness): wait a little, or for a page here.
          await Promise.race([frontier.idle(), new Promise((/** @type {(value?: unknown) => void} */ done) => { wake = done; })]);
          wake = null;
        }
      }
    };
    loop().then(resolve, reject);
  });
}

/**
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 */
async function load(run, page) {
  page.stored = reusable(run.prior, page.key, run.blobs);
  page.result = await run.loader.load(page.key, { signal: run.signal, headers: conditionalHeaders(run.prior, page.stored) });
}

/**
 * A redirect ends here (its target is admitted); a 304 without an earlier
 * copy is a failure; a page gets its type, validators and wanted file name.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 */
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
}

/**
 * A redirect is a result: its target is admitted, unless it closes a loop or
 * goes past --max-redirects; then the chain is a recorded failure and no hop
 * beyond the cap is fetched.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 * @param {number} status
 * @param {string} location
 */
export async function redirect(run, page, status, location) {
  const record = page.record;
  const target = parseHttpUrl(location, page.key);
  if (!target) throw new PrerenderError(`HTTP ${status} redirect to an unusable location ${JSON.stringify(location)}`, { code: 'BAD_REDIRECT' });
  const key = canonicalKey(target);
  record.state = 'redirect';
  record.status = status;
  record.location = key;
  await run.records.put(record);
  journal(run, record);
  run.redirects.push({ url: page.key, location: key, status });
  const decision = decideLink(run, key, record.kind);
  run.emit('redirect', { url: page.key, location: key, status, decision: decision.decision });
  if (decision.decision !== 'crawl') {
    // A root that leaves the crawl's scope (http:// to https://, a new host): nothing under it is
    // crawled. Said, for a run that writes nothing would otherwise look like a success.
    if (run.options.roots.includes(page.key)) {
      warn(run, page.key, 'ROOT_REDIRECT', `the root ${page.key} redirects (${status}) to ${key}, outside the crawl's scope: nothing under it is crawled; crawl ${key} instead`);
    }
    record.referrers = undefined;
    await run.records.put(record); // the store may keep a copy: stored again
    return;
  }
  const max = run.options.maxRedirects;
  const loop = await loopThrough(run, key, page.key, max);
  if (loop) {
    const message = loopMessage(loop);
    for (const member of loop) {
      const looped = await run.records.get(member);
      if (looped && looped.state === 'redirect') await fail(run, looped, new PrerenderError(message, { code: 'REDIRECT_LOOP' }));
    }
    return;
  }
  if (record.hops + 1 > max) {
    const chain = await chainTo(run, record, max);
    const start = await run.records.get(chain[0]);
    const message = `more than --max-redirects ${max} redirects: ${[...chain, key].join(' → ')}`;
    if (start) await fail(run, start, new PrerenderError(message, { code: 'TOO_MANY_REDIRECTS' }));
    return;
  }
  const [outcome] = await admit(run, [{ key, kind: record.kind, referrer: page.key, decision }]);
  if (outcome === 'added') {
    const next = await run.records.get(key);
    if (next) {
      next.via = page.key;
      next.hops = record.hops + 1;
      await run.records.put(next); // a store outside memory hands out copies
    }
  }
  record.referrers = undefined;
  await run.records.put(record); // the store may keep a copy: stored again
}

/**
 * The URLs of a loop when following redirects from `key` comes back to `from`.
 * @param {CrawlRun} run
 * @param {string} key
 * @param {string} from
 * @param {number} max
 * @returns {Promise<string[] | null>} from, then the hops back to it
 */
async function loopThrough(run, key, from, max) {
  const loop = [from];
  let current = key;
  for (let hop = 0; hop <= max; hop++) {
    if (current === from) return loop;
    const record = await run.records.get(current);
    if (!record || record.state !== 'redirect' || !record.location) return null;
    loop.push(current);
    current = record.location;
  }
  return null;
}

/**
 * A redirect loop's message: its members from the first in URL order, round
 * to it again, so that it reads the same whichever member was fetched first
 * (in a shared crawl, whichever process got there first).
 * @param {string[]} loop its members, in redirect order
 */
export function loopMessage(loop) {
  let first = 0;
  for (let i = 1; i < loop.length; i++) if (loop[i] < loop[first]) first = i;
  const from = [...loop.slice(first), ...loop.slice(0, first)];
  return `redirect loop: ${[...from, from[0]].join(' → ')}`;
}

/**
 * The chain of redirects that led to a record, from its start.
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {number} max
 */
async function chainTo(run, record, max) {
  const chain = [record.key];
  let current = record;
  for (let hop = 0; hop <= max && current.via; hop++) {
    const previous = await run.records.get(current.via);
    if (!previous) break;
    chain.unshift(previous.key);
    current = previous;
  }
  return chain;
}

/**
 * The file a page asks for; an unsafe name header is a warning.
 * @param {CrawlRun} run
 * @param {string} key
 * @param {URL} url
 * @param {string} contentType
 * @param {Record<string, string | string[] | undefined>} headers
 */
function wantedName(run, key, url, contentType, headers) {
  const header = headerValue(headers, 'x-builder-filename') ?? headerValue(headers, 'xbuilder-filename');
  // A requisite of another origin (--assets-origins) goes under its host's directory.
  const hostDir = run.multiOrigin || !run.origins.has(url.origin);
  const wanted = wantedFileName(url, contentType, header, hostDir, { template: run.nameRules.templateFor(key) });
  if (wanted.refused) {
    if (wanted.refusedFrom === 'name rule') warn(run, key, 'NAME_RULE', wanted.refused.message.replace('unsafe file name', 'unsafe name from --name rule'));
    else warn(run, key, 'UNSAFE_NAME', wanted.refused.message);
  }
  return wanted.file;
}

/**
 * Tokenise an HTML (or, with --assets, CSS) document once and resolve its
 * links, in a worker thread once the crawl is big enough to start them.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 */
async function scan(run, page) {
  const record = page.record;
  if (record.type === 'other' || page.scan) return;
  const body = loaded(page.result).body;
  if (await scanAsBefore(run, page, body)) return;
  // Once the crawl is past its first pages and there is more than a little of this work
  // (a re-crawl of pages that answer 304 has next to none).
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
 * A page whose bytes are those of the last run's copy (an origin without
 * validators, or a page that answers 200 to its conditional request
 * unchanged) has the links it had: its stored scan is taken, not made again
 * (the same bytes, URL and Content-Type scan the same). Its body and scan are
 * already staged. Not with --full, which ignores the last run.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 * @param {Buffer} body
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

/** The scan bytes of a page whose scan is already staged (not read). */
const NO_BYTES = Buffer.alloc(0);

/**
 * Decide every link once: in scope and followed (navigation, or a requisite
 * with --assets) goes to the frontier.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 */
export async function links(run, page) {
  if (!page.scan) return;
  const listening = run.listening('link');
  const followRequisites = run.options.assets;
  // <meta name="robots" content="nofollow">, with --robots: links are rewritten, not followed.
  const nofollow = run.robots !== null && page.scan.nofollow === true;
  /** @type {(FrontierItem & { decision: import('../roots/scope.js').ScopeDecision })[]} */
  const follow = [];
  let skipped = 0;
  // A shared frontier wants them for its coordinator's early writes (sent with the page's result).
  const shared = run.frontier.wantsLinks !== undefined;
  /** @type {import('./early.js').LinksTo | undefined} */
  const linksTo = (shared ? run.frontier.wantsLinks?.() : run.early?.wanted()) ? { keys: [], never: new Set() } : undefined;
  for (const link of page.scan.links) {
    const key = link.key;
    if (!key) continue;
    const decision = decideLink(run, key, link.kind);
    if (linksTo) {
      linksTo.keys.push(key);
      // Not crawled as this kind of link, nor (--assets) as a requisite of an assets origin: never a page.
      if (decision.decision !== 'crawl' && !(followRequisites && run.assetOrigins.has(originOf(key)))) linksTo.never.add(key);
    }
    let followed = decision.decision === 'crawl' && link.kind !== 'form' && (link.kind !== 'requisite' || followRequisites) && !nofollow;
    if (followed && tooDeep(run, key)) followed = false;
    // A trap that makes every URL longer than the last (a path that grows by each link) would fill
    // memory with its keys before --max-pages: past --max-url-length a link is not followed.
    if (followed && key.length > run.options.maxUrlLength) {
      followed = false;
      run.depth.tooLong++;
      run.depth.noteTooLong?.(key); // a shared crawl's coordinator learns it too
    }
    if (followed) follow.push({ key, kind: link.kind === 'requisite' ? 'requisite' : 'navigation', referrer: page.key, decision });
    else if (link.kind === 'requisite' && !followRequisites && run.origins.has(originOf(key))) skipped++;
    if (listening) run.emit('link', { from: page.key, url: key, kind: link.kind, followed, nofollow, ...decision });
  }
  page.linksTo = linksTo;
  run.counts.requisitesNotFetched += skipped;
  page.requisitesSkipped = skipped; // a shared crawl counts them in Redis, with the page's result
  const admittedHere = await admitFollowed(run, follow);
  if (linksTo && shared) {
    // The coordinator waits for a link only if it is sure to be fetched (this page added it, or
    // the frontier knew it): one not followed here (a form, a requisite without --assets,
    // nofollow, too deep, robots.txt, past --max-pages) may never come, and is not waited for.
    linksTo.sure = new Set(admittedHere.items.filter((_, i) => admittedHere.outcomes[i] !== 'limit').map((item) => item.key));
  }
}

/**
 * The scope decision for a link: the scope's, except that with --assets a
 * page requisite on a root's origin (or an --assets-origins origin) is
 * fetched even outside the page scope, as wget -p does, unless excluded.
 * @param {CrawlRun} run
 * @param {string} key
 * @param {import('../document/scan-html.js').LinkKind} kind
 * @returns {import('../roots/scope.js').ScopeDecision}
 */
export function decideLink(run, key, kind) {
  const decision = run.scope.decide(key);
  if (decision.decision === 'dynamic' && kind === 'requisite' && run.options.assets && run.assetOrigins.has(originOf(key))) {
    return { decision: 'crawl', pattern: 'requisite' };
  }
  return decision;
}

/** @param {string} key a canonical URL */
function originOf(key) {
  const pathStart = key.indexOf('/', key.indexOf('//') + 2);
  return pathStart < 0 ? key : key.slice(0, pathStart);
}

/** Distinct too-deep URLs remembered for the count. */
const MAX_TOO_DEEP_TRACKED = 200_000;

/**
 * Path segments of a canonical URL below the directory of the shallowest
 * root on its origin; over --max-depth it is not crawled (and counted).
 * @param {CrawlRun} run
 * @param {string} key
 */
function tooDeep(run, key) {
  const pathStart = key.indexOf('/', key.indexOf('//') + 2);
  if (pathStart < 0) return false;
  let segments = 0;
  for (let i = pathStart + 1; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) break;
    if (c === 47 /* / */) segments++;
  }
  const base = run.depth.rootDepth.get(key.slice(0, pathStart)) ?? 0;
  if (segments - base <= run.options.maxDepth) return false;
  if (run.depth.tooDeep.size < MAX_TOO_DEEP_TRACKED) run.depth.tooDeep.add(key);
  return true;
}

/**
 * Add in-scope URLs to the frontier and the record store.
 * @param {CrawlRun} run
 * @param {(FrontierItem & { decision?: import('../roots/scope.js').ScopeDecision })[]} items
 * @returns {Promise<import('../store/frontier.js').AddOutcome[]>}
 */
async function admit(run, items) {
  return (await admitFollowed(run, items)).outcomes;
}

/**
 * admit(), with the items robots.txt let through (outcomes are theirs).
 * @template {FrontierItem} T
 * @param {CrawlRun} run
 * @param {T[]} items
 * @returns {Promise<{ items: T[], outcomes: import('../store/frontier.js').AddOutcome[] }>}
 */
async function admitFollowed(run, items) {
  if (run.robots !== null && items.length > 0) items = await allowedByRobots(run, items);
  if (items.length === 0) return { items, outcomes: [] };
  // The items themselves: a frontier may replace an added item's key by its own copy (ownString), which the records then keep too.
  const outcomes = await run.frontier.add(items);
  await admitted(run, items, outcomes);
  return { items, outcomes };
}

/**
 * With --robots, the items robots.txt allows; the others are told to
 * listeners as excluded by robots.txt.
 * @template {FrontierItem} T
 * @param {CrawlRun} run
 * @param {T[]} items
 * @returns {Promise<T[]>}
 */
async function allowedByRobots(run, items) {
  const robots = /** @type {NonNullable<CrawlRun['robots']>} */ (run.robots);
  const allowed = [];
  for (const item of items) {
    if (await robots.allowed(item.key, run.signal)) {
      allowed.push(item);
      continue;
    }
    run.emit('link', { from: item.referrer, url: item.key, kind: item.kind, followed: false, decision: 'excluded', pattern: 'robots.txt' });
    if (item.referrer === null) warn(run, item.key, 'ROBOTS', 'robots.txt disallows this root: not crawled (--robots)');
  }
  return allowed;
}

/**
 * @param {CrawlRun} run
 * @param {(FrontierItem & { decision?: import('../roots/scope.js').ScopeDecision })[]} items
 * @param {import('../store/frontier.js').AddOutcome[]} outcomes
 */
async function admitted(run, items, outcomes) {
  await run.records.admit(items, outcomes);
  if (run.revalidator) run.revalidator.hint(items.flatMap((item, i) => (outcomes[i] === 'added' ? [item.key] : [])));
  if (!run.listening('admit')) return;
  items.forEach((item, i) => {
    if (outcomes[i] === 'known') return;
    const decision = item.decision ?? run.scope.decide(item.key);
    run.emit('admit', { url: item.key, from: item.referrer, pattern: decision.pattern, root: decision.root, admitted: outcomes[i] === 'added' });
  });
}

/**
 * Keep the body (and its scan) for phase two; record the page as fetched.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 */
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
    record.compare = run.ignore ? compareHash(run, body) : undefined;
    const same = before?.body === ids[0] || (record.compare !== undefined && (await compareOfBefore(run, before)) === record.compare);
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
  await run.records.put(record);
  journal(run, record);
  run.stats.fetched++;
  run.emit('page', { url: page.key, wantedFile: record.wanted, status: record.status, contentType: record.contentType, bytes: body.length });
}

/**
 * With --ignore, the sha256 of a body without the spans it ignores.
 * @param {CrawlRun} run
 * @param {Buffer} body
 */
function compareHash(run, body) {
  return sha256(Buffer.from(body.toString('latin1').replace(/** @type {RegExp} */ (run.ignore), ''), 'latin1'));
}

/**
 * The --ignore hash of the last run's copy of a page: as stored when the last
 * run ignored the same spans, else made again from its staged body (the first
 * run after --ignore was added or changed), so that a page that differs only
 * in what is ignored counts as unchanged from that run on.
 * @param {CrawlRun} run
 * @param {import('../recrawl/state.js').StoredPage | undefined} before
 */
async function compareOfBefore(run, before) {
  if (!before || before.state !== 'done') return undefined;
  if (before.compare !== undefined && run.prior?.sameIgnore) return before.compare;
  if (!before.body || !run.blobs?.has(before.body)) return undefined;
  const [body] = await run.blobs.get([before.body]);
  return compareHash(run, body);
}

/**
 * A page failure is data: recorded with its error; the crawl goes on.
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {unknown} error
 */
export async function fail(run, record, error) {
  const err = /** @type {any} */ (error);
  record.state = 'failed';
  /** @type {NonNullable<PageRecord['error']>} */
  const info = { message: err?.message ?? String(error) };
  if (err?.status) info.status = err.status;
  if (typeof err?.code === 'string') info.code = err.code;
  record.error = info;
  record.file = undefined;
  record.scan = undefined;
  await run.records.put(record);
  run.stats.failed++;
  run.emit('failure', { url: record.key, status: info.status, message: info.message, code: info.code });
}
