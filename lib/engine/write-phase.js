// @ts-check
import pLimit from 'p-limit';
import { FrontierError, OutputError } from '../errors.js';
import { isHtmlType } from '../naming/file-names.js';
import { decodeScan, renderDocument } from '../document/rewrite.js';
import { createManifestWriter } from '../output/manifest/write.js';
import { outputFailure } from '../output/outdir.js';
import { SitemapWriter } from '../output/sitemap.js';
import { sha256 } from '../store/blobs.js';
import { warn } from '../warnings.js';
import { fail } from './outcomes.js';
import { storedLinks } from './carry.js';
import { splitGone } from './unasked.js';
import { byKey, createNameTable, namedRecord, splitAlias } from '../naming/assign.js';
import { encodeNameTable } from '../naming/name-table.js';
import { namingKey, pickEach, pickStored, priorFiles, pruneLimit } from '../recrawl/prior.js';
import { createStateWriter } from '../recrawl/state.js';
import { precompress, settleOldSiblings, siblingsMissing, siblingsOf } from './precompress.js';

/**
 * Phase two, once every name is known: rewrite each staged page, write it
 * through the output target, and stream the manifest (and sitemap, and the
 * state for the next run) in URL order; remove the files of pages gone; then
 * commit. A page whose output is byte for byte the file already there is not
 * written again. A page that cannot be written may already be linked from
 * pages written before it, so a pass with a new failure is done again without
 * it: links never point at a file that was not written.
 *
 * @typedef {import('./run.js').CrawlRun} CrawlRun
 * @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../output/manifest/schema.js').ManifestPage} ManifestPage
 * @typedef {import('../warnings.js').Warning} Warning
 * @typedef {ReturnType<typeof createNameTable>} NameTable
 * @typedef {{ filesWritten: number, bytesWritten: number, removed: number, pruneRefused: boolean, kept: number, keptBlobs: string[], complete: boolean }} WriteOutcome
 *   kept: pages of the last crawl not reached (or failed for good) whose files stay as they were;
 *   keptBlobs: their staged body and scan, which the new state lists; complete: the run's, false
 *   once a page could not be written (a failure left: nothing is removed)
 * @typedef {import('../recrawl/state.js').StoredPage} StoredPage
 * @typedef {import('../naming/assign.js').Naming} Naming
 */

/**
 * Pages rewritten and written at once: enough that the worker threads get
 * batches, not one page per message (8 left them 45 % idle in a shared
 * crawl's finishing, whose blobs are files of their own), and that a page
 * whose record or file is slow to come does not hold the others up
 * (finishing 10,000 pages: 1.62 s with 32, 1.33 s with 128, medians of 3
 * interleaved). That is while worker threads read the staged bytes
 * themselves and keep no output: a page in the window is then its record
 * and its request. When a page's bytes come to the main thread (no worker
 * thread, --precompress wanting the output), each page in the window may
 * hold up to --max-page-bytes, and the window is WRITE_HOLDING.
 */
const WRITE_CONCURRENCY = 128;
/** Pages rewritten and written at once when each may hold its bytes in the main thread. */
const WRITE_HOLDING = 32;

/**
 * The pages a write pass has in flight at once: a finishing pool's own
 * window, or WRITE_HOLDING when a page's bytes come to the main thread
 * (--precompress wants the output; no worker thread; a blob store the
 * threads cannot read themselves), else WRITE_CONCURRENCY.
 * @param {{ precompress: boolean, threads: number, locate: boolean, pool?: number }} how
 */
export function writeWindow({ precompress, threads, locate, pool }) {
  if (pool !== undefined) return pool;
  return precompress || threads === 0 || !locate ? WRITE_HOLDING : WRITE_CONCURRENCY;
}

/** Non-document pages (read whole, up to --max-page-bytes each) copied at once. */
const WHOLE_BODIES = 4;
/** Passes before giving up on a tree whose pages keep failing. */
const MAX_PASSES = 10;

/**
 * @param {CrawlRun} run
 * @param {Naming} naming the named pages, in URL order
 * @param {{ interrupted: boolean, complete: boolean }} state complete: every in-scope URL reached, none failed
 * @returns {Promise<{ warnings: Warning[] } & WriteOutcome>}
 */
export async function finalize(run, naming, { interrupted, complete }) {
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  const redirects = await run.records.list('redirect');
  /** @type {Map<string, string | undefined>} URLs that redirect now, and where: a page of the last crawl among them is not gone if that is a page */
  const redirected = new Map(redirects.map((record) => [record.key, record.location]));
  /** @type {Set<string>} pages that failed in a pass: skipped, and links to them stay live */
  const dropped = new Set();
  run.stats.phase = 'write';
  /** @type {RemovalPlan | null} */
  let removal = null;
  const plan = () => {
    // A plan made again (the run turned incomplete) replaces the last one, and its refusal: an
    // incomplete run removes nothing whatever --prune-max says, and --force would not change that.
    if (removal?.refused) run.warnings.splice(0, run.warnings.length, ...run.warnings.filter((warning) => warning.code !== 'PRUNE_REFUSED'));
    const made = planRemoval(run, naming, complete, dropped, redirected);
    // Pages of the last crawl this run did not reach, and does not remove (it is
    // not complete, or the removal was refused), keep their files: links to them
    // lead there, as they did, not to the live site. A later run that reaches
    // them then finds every link where it was, and keeps the files it wrote.
    // (A page that redirects now is listed so too, but links to it lead where the redirect does.)
    for (const stored of made.carried) if (!naming.files.has(stored.url) && !redirected.has(stored.url)) naming.files.set(stored.url, /** @type {string} */ (stored.file));
    run.early?.forgetLinksTo(made.carried.map((stored) => stored.url));
    return made;
  };
  removal = plan();
  const context = renderContext(run);
  run.threads.setContext(context);
  for (let pass = 1; ; pass++) {
    const pageFile = pageFileTest(naming);
    const named = {
      * [Symbol.iterator]() {
        for (const [key, file] of naming.files) if (!dropped.has(key)) yield { key, file };
      },
    };
    const names = createNameTable(naming.files, dropped, redirects, run.options.maxRedirects);
    /** @type {ReturnType<typeof encodeNameTable> | null} */
    let encoded = null;
    const encode = () => (encoded ??= encodeNameTable(named, redirects, run.options.maxRedirects));
    run.threads.setNames(names, encode);
    // A shared crawl: the other processes do part of the per-page work (distributed/finish.js).
    await run.finishPool?.begin(context, encode());
    // Early outputs serve the first pass only (a later one may have other files); none is still being written at the commit.
    const outcome = await writePass(run, naming, names, dropped, interrupted, complete, removal, pageFile)
      .finally(() => run.finishPool?.end())
      .finally(() => run.early?.drop());
    if (outcome.failed.length === 0 && outcome.split.length === 0) {
      for (const stored of [...removal.remove, ...removal.moved]) {
        const file = /** @type {string} */ (stored.file);
        // Its siblings too, those a crawl made (a .gz put there by hand stays).
        for (const name of [file, ...siblingsOf(file, stored.compressed).filter((sibling) => !pageFile(sibling))]) await target.remove(name);
        run.emit('removed', { url: stored.url, file });
      }
      for (const { url, file } of removal.stray) {
        await target.remove(file);
        run.emit('removed', { url, file });
      }
      await outcome.state?.finish(redirects, removal.carried);
      await target.commit();
      await outcome.state?.commit();
      const keptBlobs = [...removal.carried.flatMap((stored) => [stored.body, stored.scan]), ...outcome.retained].filter((id) => id !== undefined);
      return { warnings: outcome.warnings, filesWritten: outcome.filesWritten, bytesWritten: outcome.bytesWritten, removed: removal.remove.length, pruneRefused: removal.refused, kept: removal.carried.length, keptBlobs, complete };
    }
    await outcome.state?.abort();
    if (pass >= MAX_PASSES) throw new Error(`pages kept failing in ${MAX_PASSES} write passes; nothing was committed`);
    // Nothing of this pass is committed: the next one writes (and removes) all it wants again.
    await target.abort();
    await target.init();
    for (const record of outcome.failed) dropped.add(record.key);
    // A page that could not be written is a failure left: the run is not complete, and removes nothing.
    if (complete && outcome.failed.length > 0) {
      complete = false;
      removal = plan();
    }
    // Aliases whose output differs from their first URL's get files of their own: links change, so the pass is done again.
    for (const record of outcome.split) splitAlias(run, naming, record);
  }
}

/**
 * One pass over every page: write it, add it to the manifest, sitemap and state.
 * @param {CrawlRun} run
 * @param {Naming} naming
 * @param {NameTable} names
 * @param {Set<string>} dropped
 * @param {boolean} interrupted
 * @param {boolean} complete
 * @param {RemovalPlan} removal carried: pages of the last crawl kept, not reached by this one: listed too
 * @param {(name: string, anyCase?: boolean) => boolean} pageFile whether a name is a page's file (precompress.js `isPageFile`)
 */
async function writePass(run, naming, names, dropped, interrupted, complete, removal, pageFile) {
  const carried = removal.carried;
  const o = run.options;
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  /** @type {Warning[]} */
  const warnings = [];
  const counters = { filesWritten: 0, bytesWritten: 0 };
  const previous = run.prior?.reuseOutput ? priorFiles(run.prior, o.maxRedirects) : null;
  // When every URL leads to the same file as last time, no page's links changed:
  // unchanged pages are kept without reading their scans.
  const sameNames = previous !== null && namesAsBefore(run, naming, names, dropped);
  /** @type {(string | undefined)[]} blobs the state lists that the records do not (keep()) */
  const retained = [];
  const pass = { ...run, warnings, sameNames, wholeBodies: pLimit(WHOLE_BODIES), pageFile, retained };
  const manifest = createManifestWriter(target, {
    roots: o.roots,
    scope: run.scope.toJSON(),
    placeholderMode: o.placeholders,
    sources: run.sources,
  });
  const sitemap = o.writeSitemap && o.siteUrl ? new SitemapWriter(target, o.siteUrl) : null;
  const state = run.stateDir ? stateFor(run, complete, removal) : null;
  /** @type {PageRecord[]} */
  const failed = [];
  /** @type {PageRecord[]} aliases to split apart */
  const split = [];
  /** @type {Map<string, Promise<{ page: ManifestPage, record: PageRecord } | null>>} pages that have aliases, by URL */
  const firsts = new Map();
  for (const [alias, first] of naming.aliasOf) if (!dropped.has(alias)) firsts.set(first, Promise.resolve(null));
  run.stats.written = 0;
  const inFlight = writeWindow({ precompress: o.precompress.length > 0, threads: run.threads.size, locate: Boolean(run.blobs?.locate), pool: run.finishPool?.window });
  const limit = pLimit(inFlight);
  try {
    /** @type {Promise<{ page: ManifestPage, record: PageRecord } | null>[]} in URL order */
    const window = [];
    // The files this run keeps without having reached their pages are in the tree: listed
    // (marked stale), in URL order among the others, so that the manifest says what OUT holds.
    const kept = [...carried].sort((a, b) => byKey(a.url, b.url));
    let nextKept = 0;
    /** @param {string | undefined} key list the kept pages before this URL (all, without one) */
    const listKept = async (key) => {
      while (nextKept < kept.length && (key === undefined || byKey(kept[nextKept].url, key) < 0)) await manifest.addPage(keptEntry(kept[nextKept++]));
    };
    const drain = async () => {
      const done = await window.shift();
      if (!done) return;
      await listKept(done.page.url);
      await manifest.addPage(done.page);
      if (sitemap && isHtmlType(done.page.contentType) && !done.record.aliasOf) await sitemap.add(done.page.file);
      await state?.addPage(done.record, done.page);
    };
    for (const key of naming.keys) {
      if (dropped.has(key)) continue;
      const aliasOf = naming.aliasOf.get(key);
      const first = aliasOf === undefined ? undefined : firsts.get(aliasOf);
      // Each record is read when its turn comes: the pages are never all in memory as objects.
      const written = limit(async () => {
        const record = await namedRecord(run, naming, key);
        return first
          ? writeAlias(pass, record, names, first, split)
          : writePage(pass, record, names, previous, failed, counters);
      });
      written.catch(() => {}); // awaited in order by drain(); a later one may fail first
      if (firsts.has(key)) firsts.set(key, written);
      window.push(written);
      if (window.length >= inFlight * 2) await drain();
    }
    while (window.length > 0) await drain();
    await listKept(undefined);
    if (failed.length > 0 || split.length > 0) {
      await manifest.abort();
      return { failed, split, warnings, state, retained, ...counters };
    }
    if (sitemap) await sitemap.finish();
    const { errors } = await errorsOf(run);
    await manifest.finish({
      errors,
      warnings: [...run.warnings, ...warnings],
      redirects: [...run.redirects].sort((a, b) => (a.url < b.url ? -1 : 1)),
      interrupted,
    });
    return { failed, split, warnings, state, retained, ...counters };
  } catch (error) {
    limit.clearQueue();
    await manifest.abort();
    await state?.abort();
    throw error;
  }
}

/**
 * Rewrite (HTML, CSS) and write one page, unless the file already there is
 * what it would write.
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {NameTable} names
 * @param {ReturnType<typeof priorFiles> | null} previous where links led in the last run
 * @param {PageRecord[]} failed
 * @param {{ filesWritten: number, bytesWritten: number }} counters
 * @returns {Promise<{ page: ManifestPage, record: PageRecord } | null>}
 */
async function writePage(run, record, names, previous, failed, counters) {
  const o = run.options;
  const blobs = /** @type {import('../store/blobs.js').BlobStore} */ (run.blobs);
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  const file = /** @type {string} */ (record.file);
  const last = run.prior?.pages.get(record.key);
  const stored = previous ? last : undefined;
  const sameFile = stored?.state === 'done' && stored.file === file && stored.sha256 !== undefined
    && (await target.existing?.(file)) === stored.bytes;
  /** @type {ManifestPage['placeholders']} */
  let placeholders = [];
  try {
    const ids = [/** @type {string} */ (record.body)];
    if (record.type !== 'other' && record.scan !== undefined) ids.push(record.scan);
    // A file kept as it is, unless it lacks siblings of this run's --precompress: then its bytes
    // are made (or read) again for them, and the file is still not written when they are the same.
    const unchangedInput = (record.change === 'not-modified' || record.change === 'same-bytes')
      && !(o.precompress.length > 0 && stored !== undefined && siblingsMissing(run, stored));
    if (sameFile && unchangedInput && record.type === 'other') {
      return keepFile(run, record, /** @type {import('../recrawl/state.js').StoredPage} */ (stored));
    }
    if (sameFile && unchangedInput && /** @type {{ sameNames?: boolean }} */ (run).sameNames) {
      return keepFile(run, record, /** @type {import('../recrawl/state.js').StoredPage} */ (stored));
    }
    /** @type {Buffer | undefined} */
    let output;
    let written = false;
    if (ids.length === 1) {
      // Read whole: a few at once, whatever the window of pages in flight.
      const wholeBodies = /** @type {{ wholeBodies: import('p-limit').LimitFunction }} */ (/** @type {unknown} */ (run)).wholeBodies;
      output = await wholeBodies(async () => {
        const [raw] = await blobs.get(ids);
        written = !(sameFile && stored?.sha256 === record.body);
        if (written) await writeFile(target, file, raw, counters);
        return raw;
      });
      record.bytes = output.length;
      record.sha256 = record.body;
    } else {
      if (sameFile && unchangedInput && previous) {
        const scan = await storedLinks(run, ids[1]);
        if (scan.links.every((link) => !link.key || names.fileOf(link.key) === previous.fileOf(link.key))) {
          return keepFile(run, record, /** @type {import('../recrawl/state.js').StoredPage} */ (stored));
        }
      }
      // Rewritten, hashed and (on a local tree) written by a worker thread,
      // which reads the staged bytes itself where the blob store can say where they lie.
      const places = blobs.locate ? [blobs.locate(ids[0]), blobs.locate(ids[1])] : null;
      const source = async () => (places
        ? { places: /** @type {[import('./page-work.js').BlobPlace, import('./page-work.js').BlobPlace]} */ (places), read: () => blobs.get(ids) }
        : blobs.get(ids).then(([raw, scan]) => ({ raw, scan })));
      // Rendered while the crawl ran, for this very file (early.js): only kept now.
      const early = run.early?.has(record.key) ? await run.early.take(record.key, file) : null;
      const reserved = early ? { path: undefined, keep: early.keep, drop: async () => {} } : target.reserve ? await target.reserve(file) : null;
      try {
        /** @type {Omit<import('./page-work.js').RenderInput, 'raw' | 'scan'>} */
        const request = {
          bodyId: /** @type {string} */ (record.body), scanId: ids[1], url: record.key, file,
          type: record.type === 'css' ? 'css' : 'html', charset: record.charset ?? 'utf-8',
          unchangedSha: sameFile ? stored?.sha256 : undefined, temp: reserved?.path, wantOutput: o.precompress.length > 0,
        };
        // Another process of a shared crawl may do it (into the same temp file); not when the output is wanted here.
        if (!early) warmThreads(run);
        const result = early
          ? early.result
          : run.finishPool && reserved && !request.wantOutput
          ? await run.finishPool.render(request)
          : await run.threads.render({ ...(await source()), ...request });
        for (const warning of result.warnings) warn(run, record.key, warning.code, warning.message);
        record.bytes = result.bytes;
        record.sha256 = result.sha256;
        written = result.written;
        placeholders = result.placeholders;
        output = result.output;
        if (written && reserved) {
          await reserved.keep();
          counters.filesWritten++;
          counters.bytesWritten += result.bytes;
        } else if (written) {
          await writeFile(target, file, /** @type {Buffer} */ (result.output), counters);
        } else {
          await reserved?.drop();
        }
      } catch (error) {
        await reserved?.drop();
        throw error;
      }
    }
    // The last state's siblings, even when its outputs are not reused (other options): they are on disk.
    await settleOldSiblings(run, record, last?.state === 'done' && last.file === file ? last : undefined);
    if (o.precompress.length > 0) await precompress(run, record, /** @type {Buffer} */ (output), placeholders, written ? undefined : stored, counters);
  } catch (error) {
    const fatal = outputFailure(error, 'write', `${file} in ${target.location}`);
    if (fatal instanceof OutputError || error instanceof FrontierError) throw fatal; // disk full, read-only, Redis lost...: the run cannot go on
    await fail(run, record, error);
    failed.push(record);
    return null;
  }
  // What was written (file, bytes, sha256) goes to the manifest and the state;
  // the record store keeps what the crawl found, and is not written again.
  return { page: pageEntry(run, record, placeholders), record };
}

/**
 * A URL that shares its first URL's file ("/index.html" beside "/"): its
 * output is made as the first's was and must be the same bytes; then it is
 * listed with the same file and nothing is written. Otherwise (or when the
 * first was not written) it is split apart.
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {NameTable} names
 * @param {Promise<{ page: ManifestPage, record: PageRecord } | null>} firstWritten
 * @param {PageRecord[]} split
 * @returns {Promise<{ page: ManifestPage, record: PageRecord } | null>}
 */
async function writeAlias(run, record, names, firstWritten, split) {
  const first = await firstWritten;
  if (!first) {
    split.push(record);
    return null;
  }
  const blobs = /** @type {import('../store/blobs.js').BlobStore} */ (run.blobs);
  const ids = [/** @type {string} */ (record.body)];
  if (record.type !== 'other' && record.scan !== undefined) ids.push(record.scan);
  const [raw, scanned] = await blobs.get(ids);
  const output = scanned === undefined ? raw : render(run, record, raw, decodeScan(scanned), names).body;
  const sameBytes = output.length === first.page.bytes && (output === raw ? record.body : sha256(output)) === first.page.sha256;
  if (!sameBytes) {
    split.push(record);
    return null;
  }
  record.bytes = first.page.bytes;
  record.sha256 = first.page.sha256;
  record.compressed = first.record.compressed;
  return { page: pageEntry(run, record, first.page.placeholders), record };
}

/**
 * Rewrite one HTML or CSS document for the file it is named.
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {Buffer} raw
 * @param {import('../document/rewrite.js').DocumentScan} scan
 * @param {NameTable} names
 */
function render(run, record, raw, scan, names) {
  const o = run.options;
  return renderDocument({
    body: raw,
    scan,
    type: record.type === 'css' ? 'css' : 'html',
    charset: record.charset ?? 'utf-8',
    placeholderMode: o.placeholders,
    pricePath: o.pricePath,
    pageUrl: new URL(record.key),
    file: /** @type {string} */ (record.file),
    targetFile: (key) => names.fileOf(key),
    staticRoot: run.staticRoot,
    dynamicBase: o.dynamicBase,
    crawlOrigins: run.origins,
    relativeLinks: o.relativeLinks,
    siteUrl: o.siteUrl,
  });
}

/**
 * What rewriting reads besides a page and the name table, for the worker threads.
 * @param {CrawlRun} run
 * @returns {import('./page-work.js').RenderContext}
 */
export function renderContext(run) {
  const o = run.options;
  return {
    placeholders: o.placeholders,
    pricePath: o.pricePath,
    staticRoot: run.staticRoot.href,
    dynamicBase: o.dynamicBase?.href ?? null,
    origins: [...run.origins],
    relativeLinks: o.relativeLinks,
    siteUrl: o.siteUrl?.href ?? null,
  };
}

/**
 * Whether the name table is the last run's: the same pages with the same
 * files, and the same redirects. Then every link leads where it led.
 * @param {CrawlRun} run
 * @param {Naming} naming
 * @param {NameTable} names
 * @param {Set<string>} dropped
 */
function namesAsBefore(run, naming, names, dropped) {
  const prior = /** @type {import('../recrawl/prior.js').Prior} */ (run.prior);
  let count = 0;
  for (const key of naming.keys) {
    if (dropped.has(key)) return false;
    const stored = pickStored(prior.pages, key, ['state', 'file', 'location']);
    // (location: a page carried while it redirected, whose links led to the target.)
    if (!stored || stored.state !== 'done' || stored.location !== undefined || stored.file !== names.fileOf(key)) return false;
    count++;
  }
  for (const redirect of run.redirects) {
    const stored = pickStored(prior.pages, redirect.url, ['state', 'location']);
    if (!stored || stored.state !== 'redirect' || stored.location !== redirect.location) return false;
    count++;
  }
  // Nothing the last run had is missing (a page gone changes where links lead).
  return count === prior.pages.size;
}

/**
 * @param {import('../output/target.js').OutputTarget} target
 * @param {string} file
 * @param {Buffer} data
 * @param {{ filesWritten: number, bytesWritten: number }} counters
 */
async function writeFile(target, file, data, counters) {
  await target.write(file, data);
  counters.filesWritten++;
  counters.bytesWritten += data.length;
}

/**
 * The worker threads for phase two's rewrites (this process's, which a shared
 * crawl's finishing also uses before it hands pages to the others): started
 * once more than a few pages needed them, so a re-crawl that keeps every file
 * starts none.
 * @param {CrawlRun} run
 */
function warmThreads(run) {
  if (run.threads.requests >= run.options.threadsFrom) run.threads.warm();
}

/**
 * The page stays as the last run wrote it.
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {import('../recrawl/state.js').StoredPage} stored
 */
async function keepFile(run, record, stored) {
  const kept = keep(run, record, stored);
  await settleOldSiblings(run, record, stored);
  return kept;
}

/**
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {StoredPage} stored
 */
function keep(run, record, stored) {
  record.bytes = stored.bytes;
  record.sha256 = stored.sha256;
  record.compressed = stored.compressed;
  // Unchanged only for --ignore (new bytes, the same but for the spans it ignores): the state
  // keeps the bytes the file was made from, so that a run without those spans ignored (the
  // pattern dropped or changed) sees the page changed and writes it from its new bytes.
  if (stored.body !== undefined && record.body !== stored.body) {
    record.body = stored.body;
    record.scan = stored.scan;
    record.charset = stored.charset;
    // The record store still names the new bytes: these are kept in the log for the state's sake.
    /** @type {{ retained?: (string | undefined)[] }} */ (/** @type {unknown} */ (run)).retained?.push(stored.body, stored.scan);
  }
  return { page: pageEntry(run, record, stored.placeholders ?? []), record };
}

/**
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {ManifestPage['placeholders']} placeholders
 * @returns {ManifestPage}
 */
function pageEntry(run, record, placeholders) {
  run.stats.written++;
  run.emit('written', { url: record.key, file: record.file, bytes: record.bytes, placeholders: placeholders.length });
  return manifestEntry(record.key, record, placeholders, record.stale === true);
}

/**
 * A page of the manifest, from what a record or the last state says of it.
 * @param {string} url
 * @param {{ file?: string, status?: number, contentType?: string, bytes?: number, sha256?: string, etag?: string, lastModified?: string, render?: object }} page
 * @param {ManifestPage['placeholders']} placeholders
 * @param {boolean} stale
 * @returns {ManifestPage}
 */
function manifestEntry(url, page, placeholders, stale) {
  /** @type {ManifestPage} */
  const entry = {
    url,
    file: /** @type {string} */ (page.file),
    status: /** @type {number} */ (page.status),
    contentType: /** @type {string} */ (page.contentType),
    bytes: /** @type {number} */ (page.bytes),
    sha256: /** @type {string} */ (page.sha256),
    placeholders,
  };
  if (page.etag) entry.etag = page.etag;
  if (page.lastModified) entry.lastModified = page.lastModified;
  if (stale) entry.stale = true;
  if (page.render) Object.assign(entry, page.render);
  return entry;
}

/**
 * The manifest's entry for a page of the last crawl whose file this run keeps
 * without having reached it (an incomplete run): as the last state has it.
 * @param {StoredPage} stored
 * @returns {ManifestPage}
 */
function keptEntry(stored) {
  return manifestEntry(stored.url, stored, stored.placeholders ?? [], true);
}

/**
 * The state writer of a pass: pages as they are written, then redirects,
 * then (when the run did not reach everything) the pages of the last run it
 * did not see, so that their files are still known to the next one.
 * @param {CrawlRun} run
 * @param {boolean} complete
 * @param {Pick<RemovalPlan, 'keptOld' | 'carried'>} removal keptOld: per URL, its old files left on disk (oldFiles in
 *   its entry); carried: pages listed as the last run left them
 */
function stateFor(run, complete, { keptOld, carried }) {
  const o = run.options;
  // Every page this run lists was tried in its formats, but those it carried over: they were in the last run's.
  const precompressed = carried.length === 0 ? o.precompress : o.precompress.filter((format) => run.prior?.precompressed.includes(format));
  const writer = createStateWriter(/** @type {string} */ (run.stateDir), {
    complete, roots: o.roots, output: outputKey(run), ignore: o.ignore, precompressed,
    // A run that renamed (other --name rules or origins) but did not reach every page leaves some with
    // the files the old rules gave them: the old key stays, and the next run fetches in full again.
    naming: run.prior?.renamed && !complete ? run.prior.naming : namingKey(run.options.name, run.origins),
  });
  // The --ignore hashes of pages carried over (a 304, a page not reached) were made with the last
  // run's patterns: when those changed, they are left out, and the next run makes them again.
  const oldHashes = run.prior !== null && !run.prior.sameIgnore;
  return {
    /**
     * @param {PageRecord} record
     * @param {ManifestPage} page
     */
    async addPage(record, page) {
      await writer.add({
        url: record.key, state: 'done', status: page.status, contentType: page.contentType, type: record.type, charset: record.charset,
        etag: record.etag, lastModified: record.lastModified, file: page.file, body: record.body, scan: record.scan,
        bytes: page.bytes, sha256: page.sha256, compare: oldHashes && record.change === 'not-modified' ? undefined : record.compare, compressed: record.compressed,
        placeholders: page.placeholders.length > 0 ? page.placeholders : undefined, render: record.render,
        oldFiles: keptOld.get(record.key), fetched: record.fetched, maxAge: record.maxAge, immutable: record.immutable,
      });
    },
    /**
     * @param {PageRecord[]} redirects the run's redirect records (read once, by finalize)
     * @param {import('../recrawl/state.js').StoredPage[]} carried
     */
    async finish(redirects, carried) {
      const kept = new Set(carried.map((stored) => stored.url));
      /** @type {Map<string, string | undefined>} */
      const redirecting = new Map();
      for (const record of redirects) {
        // A page of the last crawl that redirects now, carried by an incomplete run: its page entry
        // keeps its file, for the next complete run to remove, and says where links to it led (location).
        if (kept.has(record.key)) {
          redirecting.set(record.key, record.location);
          continue;
        }
        await writer.add({ url: record.key, state: 'redirect', status: /** @type {number} */ (record.status), location: record.location });
      }
      for (const stored of carried) {
        await writer.add({ ...stored, compare: oldHashes ? undefined : stored.compare, location: redirecting.get(stored.url) });
      }
    },
    commit: () => writer.finish(),
    abort: () => writer.abort(),
  };
}

/**
 * What, besides a page's bytes and its links' targets, decides the bytes
 * written: when it changes, no file is kept as it is.
 * @param {CrawlRun} run
 */
export function outputKey(run) {
  const o = run.options;
  // Not --ignore: it decides which pages count as unchanged, not what is written (a page it
  // now judges changed is rewritten, and its file kept when the bytes come out the same).
  // Nor --precompress: the siblings follow the file (a file kept as it is gets those it lacks, precompress.js).
  return JSON.stringify([o.placeholders, o.pricePath, o.dynamicBase?.href ?? null, run.staticRoot.href, [...run.origins].sort(), o.relativeLinks, o.siteUrl?.href ?? null]);
}

/**
 * @typedef {{
 *   remove: StoredPage[], moved: StoredPage[], stray: { url: string, file: string }[], carried: StoredPage[],
 *   keptOld: Map<string, string[]>, refused: boolean,
 * }} RemovalPlan
 *   remove: files of pages gone; moved: old files of pages that now have another; stray: files a
 *   page had before its last one, kept by an incomplete run; carried: pages of the last crawl kept
 *   as they were; keptOld: per URL, its old files this run keeps on disk (an incomplete run)
 */

/**
 * A file of a page this run leaves on disk without it being the page's file.
 * @param {RemovalPlan} plan
 * @param {string} url
 * @param {string[]} files
 */
function keepOld(plan, url, files) {
  const kept = plan.keptOld.get(url) ?? [];
  for (const file of files) if (!kept.includes(file)) kept.push(file);
  plan.keptOld.set(url, kept);
}

/**
 * Files of the last run's pages that this run did not write: removed after a
 * complete crawl (with their .gz/.br siblings), within --prune-max unless
 * --force; otherwise kept, and carried into the new state so that a later
 * complete crawl removes them. Decided before writing, so that a refusal is
 * in the manifest's warnings.
 * @param {CrawlRun} run
 * @param {Naming} naming
 * @param {boolean} complete
 * @param {Set<string>} dropped pages that could not be written: their last files stay, listed (carried)
 * @param {Map<string, string | undefined>} redirected URLs that redirect now, and where
 * @returns {RemovalPlan}
 */
function planRemoval(run, naming, complete, dropped, redirected) {
  const o = run.options;
  const prior = run.prior;
  /** @type {RemovalPlan} */
  const plan = { remove: [], moved: [], stray: [], carried: [], keptOld: new Map(), refused: false };
  if (!prior) return plan;
  const fileNow = naming.files;
  // A file of this run, in any case (the sets are made only if a page's file moved).
  const isFileNow = pageFileTest(naming);
  const taken = (/** @type {string} */ file) => isFileNow(file, true);
  /** @type {StoredPage[]} */
  const found = [];
  /** @type {StoredPage[]} pages that could not be written this time: their last files stay */
  const unwritten = [];
  let previousPages = 0;
  /** @type {StoredPage[]} pages that redirect now */
  const redirecting = [];
  /** @param {string} url */
  const leadsToPage = (url) => {
    let current = url;
    for (let hops = 0; hops <= o.maxRedirects && redirected.has(current); hops++) current = /** @type {string} */ (redirected.get(current));
    return current !== url && fileNow.has(current);
  };
  for (const { url, state, file, oldFiles } of pickEach(prior.pages, ['state', 'file', 'oldFiles'])) {
    if (state !== 'done' || !file) continue;
    previousPages++;
    if (dropped.has(url)) {
      unwritten.push(/** @type {StoredPage} */ (prior.pages.get(url)));
      continue;
    }
    const now = fileNow.get(url);
    // A page that redirects now to a page of the crawl is not gone: links to it lead to the target's
    // file, its own is an old one. One that redirects off the crawl (a login page) counts as gone.
    const moved = now !== undefined || leadsToPage(url);
    // Files the URL had before its last one, kept by an incomplete run (a page gone keeps them in its entry).
    if (moved) for (const old of oldFiles ?? []) if (!taken(old)) plan.stray.push({ url, file: old });
    if (now === file || taken(file)) continue; // still there, or its file is another page's now
    const stored = /** @type {StoredPage} */ (prior.pages.get(url));
    if (now === undefined && moved) redirecting.push(stored);
    else if (moved) plan.moved.push(stored);
    else found.push(stored);
  }
  // --changed: pages it was not asked about stay, reached or not (unasked.js).
  const { gone, kept } = splitGone(run, found);
  // Pages not reached may still link to any of these files: only a complete crawl removes them.
  // A page's old files stay on disk meanwhile, listed in its entry of the state, for a later one.
  if (!complete) {
    // A page that redirects now keeps its file and its entry (listed stale) as one not reached does.
    plan.carried = [...gone, ...kept, ...unwritten, ...redirecting];
    for (const stored of plan.moved) keepOld(plan, stored.url, [/** @type {string} */ (stored.file), ...siblingsOf(/** @type {string} */ (stored.file), stored.compressed)]);
    for (const { url, file } of plan.stray) keepOld(plan, url, [file]);
    plan.moved = [];
    plan.stray = [];
    return plan;
  }
  const max = pruneLimit(o.pruneMax, previousPages);
  if (gone.length > max && !o.force) {
    warn(run, o.roots[0] ?? gone[0].url, 'PRUNE_REFUSED', `${gone.length} page${gone.length === 1 ? '' : 's'} of the last crawl ${gone.length === 1 ? 'is' : 'are'} gone, more than --prune-max ${o.pruneMax} allows (${max}): no file was removed; check the site, then run again with --force`);
    plan.carried = [...gone, ...kept, ...redirecting]; // no file removed: theirs neither
    plan.refused = true;
    return plan;
  }
  plan.remove = gone;
  plan.carried = kept;
  plan.moved.push(...redirecting);
  // And the old files a page gone kept in its entry.
  for (const stored of gone) for (const old of stored.oldFiles ?? []) if (!taken(old)) plan.stray.push({ url: stored.url, file: old });
  return plan;
}

/**
 * Whether a name is the file of a page of this run: exactly (a sibling of
 * that name is not removed), or in any case (none of that name is made: on
 * a file system that ignores case it would be the page's file, and names
 * are made unique that way). The sets are made on first use.
 * @param {Naming} naming
 * @returns {(name: string, anyCase?: boolean) => boolean}
 */
function pageFileTest(naming) {
  /** @type {Set<string> | null} */
  let exact = null;
  /** @type {Set<string> | null} */
  let lowered = null;
  return (name, anyCase = false) => {
    if (!exact || !lowered) {
      exact = new Set(naming.files.values());
      lowered = new Set([...exact].map((file) => file.toLowerCase()));
    }
    return anyCase ? lowered.has(name.toLowerCase()) : exact.has(name);
  };
}

/**
 * The manifest's errors, in URL order: the pages that failed, and those gone
 * from the site (404, 410) that pages still link to: removed, but broken links.
 * @param {CrawlRun} run
 * @returns {Promise<{ errors: import('../output/manifest/schema.js').ManifestError[], failed: number }>} failed: of them, the failures
 */
export async function errorsOf(run) {
  const records = await run.records.list(['failed', 'gone']);
  const failed = records.reduce((n, record) => n + (record.state === 'failed' ? 1 : 0), 0);
  return { errors: records.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map(toManifestError), failed };
}

/**
 * @param {PageRecord} record
 * @returns {import('../output/manifest/schema.js').ManifestError}
 */
function toManifestError(record) {
  /** @type {import('../output/manifest/schema.js').ManifestError} */
  // In URL order, not the order the crawl found them in, which timing decides.
  const error = { url: record.key, message: record.error?.message ?? 'failed', referrers: [...(record.referrers ?? [])].sort(byKey) };
  if (record.error?.status) error.status = record.error.status;
  if (record.error?.code) error.code = record.error.code;
  return error;
}
