// @ts-check
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import path from 'node:path';
import { createHttpLoader, defaultLoader, withRetry } from './fetch/index.js';
import { withRevalidation } from './fetch/revalidate.js';
import { withPoliteness } from './fetch/polite.js';
import { LocalTree } from './output/local-tree.js';
import { STATE_DIR, clearLeftovers, prepareOutDir } from './output/outdir.js';
import { acquireLock } from './output/lock.js';
import { OPTION_BY_NAME, resolveCrawlOptions } from './options/crawl-options.js';
import { loadListedRoots } from './roots/sources.js';
import { PrerenderError } from './errors.js';
import { createCrawlRun } from './engine/run.js';
import { warn } from './warnings.js';
import { discover } from './engine/fetch-phase.js';
import { finalize } from './engine/write-phase.js';
import { renderContext } from './engine/write-page.js';
import { errorsOf } from './engine/errors-list.js';
import { outputKey } from './recrawl/next-state.js';
import { EarlyWrites } from './engine/early.js';
import { VALIDATING, conditionalHeaders, isGoneStatus, loadPrior, namingKey, reusable } from './recrawl/prior.js';
import { JOURNAL_FILE, createJournal, readJournal } from './recrawl/journal.js';
import { MemoryFrontier } from './store/frontier.js';
import { assignNames } from './naming/assign.js';
import { STATE_FILE } from './recrawl/state.js';
import { Arena } from './store/arena.js';
import { StoredPages } from './store/stored-pages.js';
import { MemoryRecordStore, eachRecord } from './store/records.js';
import { LogBlobStore } from './store/blobs.js';

/**
 * The crawl engine. Data flows one way:
 *   roots → scope → frontier → load → (transforms) → scan → stage   (discover.js)
 *   → name → rewrite → write → manifest, sitemap → commit            (names.js, finalize.js)
 * through seams that can be replaced: the loader (HTTP with retry by default),
 * the frontier and the record store (in memory by default), the blob store
 * for staged bodies (a log under OUT/.prerender/), and the output target
 * (the local tree by default).
 *
 * Events: 'page' (fetched), 'redirect', 'retry', 'failure', 'warning',
 * 'named', 'written', 'link' (every link with its scope decision), 'admit'.
 *
 * @typedef {import('./engine/run.js').CrawlRun} CrawlRun
 * @typedef {import('./engine/run.js').CrawlStats} CrawlStats
 * @typedef {import('./options/crawl-options.js').CrawlOptions & {
 *   onEvent?: (event: { type: string } & Record<string, unknown>) => void,
 *   loader?: import('./fetch/http.js').Loader,
 *   transforms?: import('./engine/run.js').Transform[],
 *   target?: import('./output/target.js').OutputTarget,
 *   dryRun?: boolean,
 *   stdin?: NodeJS.ReadableStream,
 * }} CrawlerOptions
 *   loader: replaces HTTP (retries still wrap it; the caller closes it);
 *   target: replaces the local tree as the output.
 * @typedef {{
 *   out: string, manifest: string | null, pages: number, assets: number, failed: number, warnings: number, redirects: number,
 *   notCrawled: number, notCrawledSaturated: boolean, maxPages: number, requisitesNotFetched: number,
 *   interrupted: boolean, durationMs: number,
 *   threads: { workers: number, inWorkers: number, inMain: number, early: number, revalidated: number },
 *   failures: import('./output/manifest/schema.js').ManifestError[],
 *   stale: number, resumed: number, pruneRefused: boolean, complete: boolean, tooDeep: number, tooLong: number, sitemapsCut: boolean, rootLost: boolean, kept: number,
 *   churn: {
 *     new: number, changed: number, notModified: number, sameBytes: number, removed: number, stale: number, failed: number,
 *     filesWritten: number, bytesWritten: number,
 *   },
 * }} CrawlResult
 *   threads: worker threads started, and the per-page requests (tokenise, rewrite) they and the main thread did;
 *   revalidated: the answers of a re-crawl's HTTP thread (revalidate.js) the crawl used, asked ahead or not
 *   churn: URLs new / changed / unchanged (304) / unchanged (same bytes) / removed / stale / failed,
 *   and the files and bytes actually written
 *   complete: every in-scope URL reached, no failure left but 404/410 (only such a run removes files);
 *   tooDeep: in-scope URLs not crawled for --max-depth; tooLong: links not followed for --max-url-length;
 *   sitemapsCut: some sitemaps were not read (--max-pages, or the cap on sitemaps); rootLost: a root
 *   answered 404/410 or redirected out of scope (the run is then not complete); kept: pages of the last crawl this run did not
 *   reach (or that failed for good) whose files it keeps as they were (listed stale in the manifest)
 */

/** The events `onEvent` receives. */
const ON_EVENT = ['page', 'redirect', 'retry', 'failure', 'warning', 'written'];

/** The columns of a run's arena. */
const RECORDS = 0;
const PRIOR = 1;
const JOURNAL = 2;

/** @returns {CrawlStats} */
const freshStats = () => /** @type {import('./engine/run.js').CrawlStats} */ ({ fetched: 0, failed: 0, written: 0, active: 0, queued: 0, resumed: 0, startedAt: Date.now(), phase: 'start' });

export class Crawler extends EventEmitter {
  /** @type {import('./fetch/http.js').Loader | undefined} */
  #loader;
  /** @type {import('./engine/run.js').Transform[]} */
  #transforms;
  /** @type {import('./output/target.js').OutputTarget | undefined} */
  #target;

  /** @param {CrawlerOptions} options see README, "API" */
  constructor(options) {
    super();
    const { onEvent, loader, transforms, target, ...rest } = options;
    this.options = resolveCrawlOptions(rest);
    this.#loader = loader;
    this.#transforms = transforms ?? [];
    this.#target = target;
    /** The counters of the current (or last) run. */
    this.stats = freshStats();
    if (typeof onEvent === 'function') {
      for (const name of ON_EVENT) this.on(name, (data) => onEvent({ type: name, ...data }));
    }
  }

  /** @returns {Promise<CrawlResult>} */
  async run() {
    const o = this.options;
    const startedAt = performance.now();
    const stats = freshStats();
    this.stats = stats;
    // --render: the render step, after the caller's transforms (its browser is found before anything else).
    // (its modules loaded for a crawl that renders only)
    const transforms = o.render ? [...this.#transforms, (await import('./render/step.js')).createRenderStep(o)] : this.#transforms;
    /** @type {import('./engine/run.js').Transform[]} */
    const opened = [];
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    if (o.signal?.aborted) controller.abort();
    o.signal?.addEventListener('abort', onAbort, { once: true });

    const retryOptions = {
      retries: o.retries,
      retryDelay: o.retryDelay,
      onRetry: (/** @type {{ url: string, attempt: number, delayMs: number, error: Error }} */ info) => {
        shared?.frontier.backoff(info); // --frontier: a 429/503 holds its origin back in every process
        this.emit('retry', { url: info.url, attempt: info.attempt, delayMs: info.delayMs, message: info.error.message });
      },
    };
    const politeness = { rate: o.rate, delay: o.delay, concurrency: o.concurrency };
    const httpOptions = { timeout: o.timeout, maxPageBytes: o.maxPageBytes, headers: o.headers, concurrency: o.concurrency };
    // A re-crawl's requests on a thread of their own, asked ahead (revalidate.js): with the
    // crawl's own HTTP loader only, and not where requests must be paced or go through a browser.
    const revalidator = !this.#loader && !o.dryRun && !o.frontier && transforms.length === 0 && o.threads > 0 && !(o.rate && o.rate > 0) && !(o.delay > 0)
      ? withRevalidation(createHttpLoader(httpOptions), httpOptions)
      : null;
    const loader = this.#loader
      ? withRetry(withPoliteness({ load: this.#loader.load.bind(this.#loader), close: async () => {} }, politeness), retryOptions)
      : revalidator
      ? withRetry(revalidator, retryOptions)
      : defaultLoader({ ...httpOptions, ...retryOptions, ...politeness });
    const target = o.dryRun ? null : this.#target ?? new LocalTree(o.out);
    const stateDir = o.dryRun ? null : path.join(path.resolve(o.out), STATE_DIR);
    /** @type {LogBlobStore | import('./distributed/dir-blobs.js').DirBlobStore | null} */
    let blobs = stateDir && !o.frontier ? new LogBlobStore(stateDir) : null;
    /** @type {import('./distributed/shared.js').SharedCrawl | null} a crawl shared through Redis (--frontier) */
    let shared = null;
    /** @type {import('./warnings.js').Warning[]} */
    const warnings = [];
    const emit = (/** @type {string} */ event, /** @type {object} */ data) => { this.emit(event, data); };
    let committed = false;
    /** @type {{ release(): Promise<void> } | null} */
    let lock = null;
    /** @type {string[]} directories this run made */
    let created = [];
    /** @type {import('./recrawl/prior.js').Prior | null} */
    let prior = null;
    /** @type {Awaited<ReturnType<typeof readJournal>>} */
    let resumed = null;
    /** @type {ReturnType<typeof createJournal> | null} */
    let journal = null;
    let complete = false;
    /** Some sitemaps were not read (--max-pages, or the cap on sitemaps): their URLs were never seen. */
    let sitemapsCut = false;
    let interrupted = false;
    /** @type {CrawlRun | null} */
    let run = null;
    // What this run knows of each URL, what the last run kept and what a killed
    // run's journal says: one packed arena, each URL's key kept once.
    const arena = new Arena(3);
    try {
      // OUT is checked and locked before anything is fetched.
      if (stateDir) {
        const prepared = await prepareOutDir(o.out);
        created = prepared.created;
        lock = await acquireLock(prepared.stateDir, prepared.out);
        // A killed run's temp files and staging; in a shared crawl only once its pass is
        // dropped in Redis (openSharedCrawl), so that no worker still writes into them.
        if (!o.frontier) await clearLeftovers(prepared.stateDir);
        // A re-crawl's HTTP thread starts while the last state is read (it is idle until then).
        if (revalidator && !o.full && existsSync(path.join(prepared.stateDir, STATE_FILE))) revalidator.warm();
        prior = await loadPrior(prepared.stateDir, { full: o.full, ignore: o.ignore, pages: new StoredPages(arena, PRIOR), roots: [...o.roots, ...o.sitemap] });
        // A journal left means a run was killed or interrupted since the state: files it put in OUT are not listed there.
        if (prior) prior.ownsTree = !existsSync(path.join(prepared.stateDir, JOURNAL_FILE));
        const found = o.resume && !o.full && !o.frontier ? await readJournal(prepared.stateDir, journalKey(o), new StoredPages(arena, JOURNAL)) : null;
        if (found && 'other' in found) {
          warn({ warnings, emit }, o.roots[0] ?? o.out, 'NOT_RESUMED', 'OUT holds the journal of an interrupted crawl with other roots, scope or --name rules: it is not resumed, and this crawl fetches every page');
        } else {
          resumed = found;
        }
      }
      const listed = await loadListedRoots(o, (url, message) => warn({ warnings, emit }, url, 'SITEMAP', message), () => { sitemapsCut = true; });
      if (o.roots.length === 0 && listed.length === 0) {
        throw new PrerenderError(`nothing to crawl: ${o.sitemap.length > 0 ? `the sitemap${o.sitemap.length > 1 ? 's list' : ' lists'} no URL${o.urls !== undefined ? ', nor does the --urls list' : ''}` : 'the --urls list is empty'}${warnings.length > 0 ? ` (${warnings[0].message})` : ''}`, { code: 'NO_URLS' });
      }
      // Other --name rules or origins than the last run's: every page is fetched in full, none kept on a 304
      // with the file the old rules gave it (recrawl.js namingKey); a transient failure still keeps the last copy.
      if (prior?.reuse && prior.naming !== undefined && prior.naming !== namingKey(o.name, [...o.roots, ...listed].map((url) => new URL(url).origin))) {
        prior.renamed = true;
      }
      if (o.frontier) {
        const { openSharedCrawl } = await import('./distributed/shared.js');
        shared = await openSharedCrawl(o, listed, prior);
        blobs = stateDir ? shared.blobs : null;
        if (stateDir) await clearLeftovers(stateDir);
      }
      if (target) await target.init();
      // Kept with --full too: a page that fails for a while keeps its last copy and follows its stored links.
      if (blobs) await blobs.init({ keep: prior !== null || resumed !== null });
      if (stateDir && !shared) journal = createJournal(stateDir, journalKey(o), { append: resumed !== null });
      run = createCrawlRun({
        options: o,
        emit,
        listening: (event) => this.listenerCount(event) > 0,
        stats,
        signal: controller.signal,
        loader,
        frontier: shared?.frontier ?? new MemoryFrontier({ maxPages: o.maxPages, keyOf: (key) => arena.own(key) }),
        records: shared?.frontier.records ?? new MemoryRecordStore(arena, RECORDS),
        blobs,
        target,
        transforms,
        warnings,
        prior,
        resumed: resumed?.entries ?? null,
        journal,
        stateDir,
        sources: sources(o, listed.length),
      }, listed);
      if (prior) prior.reuseOutput = prior.reuse && prior.output === outputKey(run);
      if (revalidator && prior?.reuse && !prior.renamed) {
        const last = prior;
        const journaled = resumed?.entries ?? null;
        // Only pages still waiting; not those the killed run's journal has (they are not fetched again).
        const frontier = run.frontier;
        revalidator.start((key) => (journaled?.has(key) || frontier.queued?.(key) === false ? undefined : conditionalHeaders(last, reusable(last, key, blobs, VALIDATING))));
        run.revalidator = revalidator;
      } else {
        await revalidator?.unwarm();
      }
      // In a shared crawl, from every process's results (the feed) and the shared blob directory.
      if (o.early && target instanceof LocalTree && (shared ? blobs !== null : blobs instanceof LogBlobStore) && o.precompress.length === 0 && run.threads.size > 0) {
        run.early = new EarlyWrites(run, renderContext(run), shared?.feed() ?? null);
      }
      // threadsFrom 0 (an internal option, for tests): the workers take the very first page.
      if (o.threadsFrom === 0) await run.threads.start();
      for (const transform of transforms) {
        opened.push(transform);
        await transform.open?.(run);
      }
      shared?.frontier.attach(run);
      stats.phase = 'discover';
      await discover(run, [...o.roots, ...listed]);
      await run.revalidator?.stop();
      for (const transform of opened.splice(0).reverse()) await transform.close?.();
      interrupted = controller.signal.aborted;
      await shared?.barrier(run, { interrupted });
      const naming = await assignNames(run);
      run.early?.close(naming);
      const { overLimit, overLimitSaturated } = run.frontier.counts();
      run.frontier.release?.();
      if (overLimit > 0) {
        warn(run, o.roots[0] ?? listed[0], 'MAX_PAGES', `--max-pages ${o.maxPages} reached: ${overLimitSaturated ? 'at least ' : ''}${overLimit} more in-scope URLs were not crawled; links to them stay live${prior ? ' (or lead to the file the last crawl left, which is kept)' : ''}`);
      }
      if (run.depth.tooDeep.size > 0) {
        warn(run, o.roots[0] ?? listed[0], 'MAX_DEPTH', `--max-depth ${o.maxDepth} reached: ${run.depth.tooDeep.size} in-scope URLs deeper than that were not crawled; links to them stay live${prior ? ' (or lead to the file the last crawl left, which is kept)' : ''}`);
      }
      if (run.depth.tooLong > 0) {
        warn(run, o.roots[0] ?? listed[0], 'MAX_URL_LENGTH', `--max-url-length ${o.maxUrlLength}: ${run.depth.tooLong} links to longer in-scope URLs were not followed; they stay live${prior ? ' (or lead to the file the last crawl left, which is kept)' : ''}`);
      }
      const stale = naming.stale;
      // A 404 or 410 is an answer, not a failure that may hide pages (it has no links to
      // follow): a broken link does not keep a crawl from being complete, run after run.
      // But not a root's: a site whose entry point is gone, or moved out of scope, is more likely
      // misconfigured or down than emptied; removing every file is left to a run that reaches it.
      const records = run.records;
      const rootLost = run.warnings.some((warning) => warning.code === 'ROOT_REDIRECT')
        || (await Promise.all(o.roots.map((root) => records.get(root)))).some((record) => record?.state === 'failed' || record?.state === 'gone');
      complete = !interrupted && !sitemapsCut && !rootLost && overLimit === 0 && run.depth.tooDeep.size === 0 && run.depth.tooLong === 0 && stale === 0
        && (await run.records.list('failed')).every((record) => isGoneStatus(record.error?.status));
      /** @type {import('./engine/write-phase.js').WriteOutcome & { warnings: import('./warnings.js').Warning[] }} */
      let outcome = { warnings: [], filesWritten: 0, bytesWritten: 0, removed: 0, pruneRefused: false, kept: 0, keptBlobs: [], complete };
      if (target) {
        if (shared && target instanceof LocalTree && !interrupted) run.finishPool = await shared.finishPool(run, target.out);
        outcome = await finalize(run, naming, { interrupted, complete });
        complete = outcome.complete; // a page that could not be written leaves it incomplete
        committed = true;
      }
      // The records read once more, for the counts and the blobs the new state still refers to:
      // the log is compacted after every run that wrote its state (not after an interrupted one,
      // whose journal refers to blobs too). Compacted only after complete ones, it grew by the
      // whole site on every run of a site with a page that always fails. A shared crawl's blob
      // directory (every process's) is still cleared only after a complete crawl.
      const counted = newTally();
      if (committed && !interrupted && (complete || !shared) && blobs && target) await blobs.compact(liveBlobs(run, naming.keys, counted, outcome.keptBlobs));
      else for await (const [, record] of eachRecord(run.records, naming.keys)) countRecord(counted, record);
      const { written, changes } = counted;
      if (!interrupted) await shared?.finished();
      const { errors: failures, failed: failedHere } = await errorsOf(run);
      /** @param {import('./store/records.js').Change} change */
      const count = (change) => changes.get(change) ?? 0;
      return {
        out: path.resolve(o.out),
        manifest: o.dryRun ? null : path.join(path.resolve(o.out), 'prerender-manifest.json'),
        pages: written.pages,
        assets: written.assets,
        failed: failures.length,
        warnings: warnings.length + outcome.warnings.length,
        redirects: run.redirects.length,
        notCrawled: overLimit,
        notCrawledSaturated: overLimitSaturated,
        maxPages: o.maxPages,
        requisitesNotFetched: run.counts.requisitesNotFetched,
        threads: { workers: run.threads.slots.length, inWorkers: run.threads.counts.worker, inMain: run.threads.counts.local, early: run.early?.counts.taken ?? 0, revalidated: revalidatedCount(run.revalidator) },
        interrupted,
        durationMs: Math.round(performance.now() - startedAt),
        failures,
        stale,
        resumed: stats.resumed,
        pruneRefused: outcome.pruneRefused,
        complete,
        tooDeep: run.depth.tooDeep.size,
        tooLong: run.depth.tooLong,
        sitemapsCut,
        rootLost,
        kept: outcome.kept,
        churn: {
          new: count('new'),
          changed: count('changed'),
          notModified: count('not-modified'),
          sameBytes: count('same-bytes'),
          removed: outcome.removed,
          stale,
          failed: failedHere,
          filesWritten: outcome.filesWritten,
          bytesWritten: outcome.bytesWritten,
        },
      };
    } catch (error) {
      controller.abort(); // requests in flight are not waited for
      throw error;
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
      for (const transform of opened.reverse()) await transform.close?.().catch(() => {});
      run?.early?.stop();
      await run?.threads.close();
      await loader.close().catch(() => {});
      // A run that ended by itself (complete or not: failures left, --max-pages) has written
      // its state, which is what the next run starts from; only a run interrupted (a signal)
      // or killed keeps its journal, to be resumed. Resuming a run that merely ended with a
      // failure would fetch nothing again, run after run, and never see the site change.
      if (journal) await (committed && !interrupted ? journal.remove() : journal.close()).catch(() => {});
      // The staged blobs stay for the next run once a state refers to them. A run that never
      // got OUT's lock (another crawl is writing there) touches nothing of it: those are the other's.
      if (committed || prior || journal) await blobs?.close().catch(() => {});
      else if (lock) await blobs?.destroy().catch(() => {});
      if (target && !committed) await target.abort().catch(() => {});
      await lock?.release().catch(() => {});
      // The state directory goes when nothing is left in it.
      if (lock) await rmdir(path.join(path.resolve(o.out), STATE_DIR)).catch(() => {});
      await shared?.close().catch(() => {});
      // A run that wrote nothing leaves no directory it made.
      if (!committed) for (const dir of [...created].reverse()) await rmdir(dir).catch(() => {});
    }
  }
}

/**
 * What a journal must match to be resumed: the roots and what decides the
 * set of URLs crawled, and the --name rules.
 * @param {import('./options/crawl-options.js').ResolvedCrawlOptions} o
 */
function journalKey(o) {
  // --name decides the files the journal's pages want; it and --max-url-length count only when
  // given, so that journals of runs without them still match.
  return JSON.stringify([o.roots, o.sitemap, o.urls ?? null, o.include, o.exclude, o.assets, o.maxDepth, o.maxRedirects, o.headers, ...(o.name.length > 0 ? [o.name] : []),
    ...(o.maxUrlLength !== OPTION_BY_NAME.get('maxUrlLength')?.default ? [{ maxUrlLength: o.maxUrlLength }] : [])]);
}

/**
 * @typedef {{ written: { pages: number, assets: number }, changes: Map<import('./store/records.js').Change, number> }} Tally
 *   pages and requisites (--assets) written, and the changes of pages not stale (`countRecord`)
 */

/** @returns {Tally} */
const newTally = () => ({ written: { pages: 0, assets: 0 }, changes: new Map() });

/**
 * @param {Tally} tally
 * @param {import('./store/records.js').PageRecord | undefined} record
 */
function countRecord(tally, record) {
  if (!record || record.state !== 'done') return;
  // Pages are HTML documents; requisites (--assets) are counted apart.
  tally.written[record.type === 'html' ? 'pages' : 'assets']++;
  if (record.change && !record.stale) tally.changes.set(record.change, (tally.changes.get(record.change) ?? 0) + 1);
}

/**
 * The answers of a re-crawl's HTTP thread the crawl used (asked ahead or not).
 * @param {import('./fetch/revalidate.js').Revalidator | null | undefined} revalidator
 */
function revalidatedCount(revalidator) {
  return revalidator ? revalidator.counts.takenAhead + revalidator.counts.urgent : 0;
}

/**
 * The blobs the new state refers to, read from the records as the blob store
 * asks (each record counted on the way).
 * @param {import('./engine/run.js').CrawlRun} run
 * @param {string[]} keys
 * @param {Tally} tally
 * @param {string[]} kept the blobs of the last crawl's pages the new state keeps (not reached by this run)
 */
async function* liveBlobs(run, keys, tally, kept) {
  for await (const [, record] of eachRecord(run.records, keys)) {
    countRecord(tally, record);
    if (!record || record.state !== 'done') continue;
    if (record.body) yield record.body;
    if (record.scan) yield record.scan;
  }
  yield* kept;
}

/**
 * Where the roots came from, for the manifest.
 * @param {import('./options/crawl-options.js').ResolvedCrawlOptions} o
 * @param {number} listedCount
 */
function sources(o, listedCount) {
  /** @type {Record<string, unknown>} */
  const found = {};
  if (o.sitemap.length > 0) found.sitemaps = o.sitemap;
  if (o.urls !== undefined) found.urlList = o.urls === '-' ? 'stdin' : o.urls;
  if (listedCount > 0) found.listedUrls = listedCount;
  return found;
}

/**
 * Crawl and write the static tree. Resolves with the summary; page failures
 * are data (in the result and the manifest), not exceptions.
 * @param {CrawlerOptions} options
 * @returns {Promise<CrawlResult>}
 */
export function crawl(options) {
  return new Crawler(options).run();
}
