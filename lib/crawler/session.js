// @ts-check
import { existsSync, statSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import path from 'node:path';
import { createHttpLoader, defaultLoader, withRetry } from '../fetch/index.js';
import { withRevalidation } from '../fetch/revalidate.js';
import { withPoliteness } from '../fetch/polite.js';
import { LocalTree } from '../output/local-tree.js';
import { STATE_DIR, clearLeftovers, prepareOutDir } from '../output/outdir.js';
import { LOCK_NAME, acquireLock } from '../output/lock.js';
import { checkStateEntries } from '../output/state-entries.js';
import { OPTION_BY_NAME } from '../options/crawl-options.js';
import { loadListedRoots, readUrlList } from '../roots/sources.js';
import { PrerenderError } from '../errors.js';
import { createCrawlRun } from '../engine/run.js';
import { Lifecycle } from '../engine/lifecycle.js';
import { countRecords, liveBlobs, newTally, resultOf, sourcesOf } from '../engine/result.js';
import { warn } from '../warnings.js';
import { discover } from '../engine/fetch-phase.js';
import { finalize } from '../engine/write-phase.js';
import { renderContext } from '../engine/write-page.js';
import { errorsOf, splitMissingRequisites } from '../engine/errors-list.js';
import { outputKey } from '../recrawl/next-state.js';
import { EarlyWrites } from '../engine/early.js';
import { plugFeatures } from '../engine/features.js';
import { checkListed, listedInScope, mayCarryUnasked, planUnasked, storedAsked, whyUnasked } from '../engine/unasked.js';
import { lastmodSeconds } from '../recrawl/freshness.js';
import { VALIDATING, conditionalHeaders, isGoneStatus, loadPrior, namingKey, reusable } from '../recrawl/prior.js';
import { JOURNAL_FILE, createJournal, readJournal } from '../recrawl/journal.js';
import { LocalCoordination } from '../engine/coordination.js';
import { STATE_FILE } from '../recrawl/state.js';
import { FOLLOW_FILE } from '../recrawl/follow-lists.js';
import { openFollows } from '../engine/follow.js';
import { Arena } from '../store/arena.js';
import { StoredPages } from '../store/stored-pages.js';
import { INDEX_FILE, LOG_FILE, LogBlobStore } from '../store/blobs.js';

/**
 * @typedef {import('../engine/run.js').CrawlRun} CrawlRun @typedef {import('../engine/run.js').CrawlStats} CrawlStats
 * @typedef {import('../engine/run.js').Transform} Transform @typedef {import('../naming/assign.js').Naming} Naming
 * @typedef {import('../engine/write-phase.js').WriteOutcome & { warnings: import('../warnings.js').Warning[] }} Outcome
 * @typedef {{ overLimit: number, overLimitSaturated: boolean }} Limits
 * @typedef {import('../engine/coordination.js').Coordination} Coordination
 * @typedef {{ options: import('../options/crawl-options.js').ResolvedCrawlOptions, emit(event: string, data: object): unknown, listenerCount(event: string): number }} Host
 */

/** Fewer pages of the last crawl to ask for than this: no thread asks ahead (BENCHMARKS.md, issue 42). */
const ASK_AHEAD_MIN = 256;

/** Bytes of the shortest state line: a state smaller than threadsFrom of them holds too few pages to warm the ask-ahead thread for. */
const STATE_LINE_MIN = 64;

/** The last state's size in bytes, 0 if there is none. @param {string} stateDir */
function stateBytes(stateDir) {
  try {
    return statSync(path.join(stateDir, STATE_FILE)).size;
  } catch {
    return 0;
  }
}

/** Columns of a run's arena. */
const RECORDS = 0;
const PRIOR = 1;
const JOURNAL = 2;

/**
 * One run of a Crawler. What it owns exists from construction; what needs OUT or the network is acquired in open(),
 * each with its clean-up registered as it is taken.
 */
export class CrawlSession {
  /** Tree, manifest and state are written. */
  committed = false;
  /** Ended by a signal: its journal is kept, to be resumed. */
  interrupted = false;
  /** Some sitemaps were not read: their URLs were never seen. */
  sitemapsCut = false;
  lockHeld = false;
  lostRoot = false;
  /** @type {import('../recrawl/prior.js').Prior | null} */ prior = null;
  /** @type {Exclude<Awaited<ReturnType<typeof readJournal>>, { other: true }> | null} a killed run's journal */ resumed = null;
  /** @type {ReturnType<typeof createJournal> | null} */ journal = null;
  /** @type {string[]} canonical URLs from sitemaps and URL lists */ listed = [];
  /** @type {Transform[]} the caller's, then the render step */ transforms = [];
  /** @type {Transform[]} opened and not yet closed */ opened = [];
  /** @type {CrawlRun | null} */ run = null;

  /**
   * @param {Host} crawler a Crawler, or a shared crawl's worker @param {CrawlStats} stats
   * @param {{ loader?: import('../fetch/http.js').Loader, transforms: Transform[], target?: import('../output/target.js').OutputTarget, coordination?: Coordination, listed?: string[] }} seams
   *   coordination and listed: a worker's, joined and read already
   */
  constructor(crawler, stats, seams) {
    const o = crawler.options;
    const given = seams.coordination;
    /** The one place the engine looks at --frontier. */
    this.shared = given?.shared ?? o.frontier !== undefined;
    const ownsOut = !o.dryRun && given?.ownsOut !== false;
    this.crawler = crawler;
    this.o = o;
    this.stats = stats;
    this.startedAt = performance.now();
    this.lifecycle = new Lifecycle();
    this.controller = new AbortController();
    const onAbort = () => this.controller.abort();
    if (o.signal?.aborted) this.controller.abort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    this.lifecycle.defer('signal', () => o.signal?.removeEventListener('abort', onAbort));
    if (given) this.lifecycle.defer('coordination', () => given.close());
    /** @type {import('../warnings.js').Warning[]} */ this.warnings = [];
    this.emit = (/** @type {string} */ event, /** @type {object} */ data) => { crawler.emit(event, data); };
    this.callerTransforms = seams.transforms;
    this.givenListed = seams.listed ?? null;
    const { loader, revalidator } = this.#makeLoader(seams.loader);
    this.loader = loader;
    this.revalidator = revalidator;
    this.lifecycle.defer('loader', () => loader.close());
    this.target = ownsOut ? seams.target ?? new LocalTree(o.out) : null;
    this.stateDir = ownsOut ? path.join(path.resolve(o.out), STATE_DIR) : null;
    // This run's records, the last run's pages and a killed run's journal: one packed arena.
    this.arena = new Arena(3);
    /** @type {Coordination | null} a coordinator's is opened in open() */
    this.coordination = given ?? (this.shared ? null : new LocalCoordination({
      maxPages: o.maxPages, arena: this.arena, recordsColumn: RECORDS, blobs: this.stateDir ? new LogBlobStore(this.stateDir) : null,
    }));
    this.blobs = this.coordination?.blobs ?? null;
  }

  /** Only with the crawl's own HTTP loader, unpaced, without a browser or shared frontier. @param {boolean} callerLoader */
  canAskAhead(callerLoader) {
    const o = this.o;
    const transforms = o.render || this.callerTransforms.length > 0;
    return !callerLoader && !o.dryRun && !this.shared && !transforms && o.threads > 0 && !(o.rate && o.rate > 0) && !(o.delay > 0);
  }

  /** Only into a local tree, from staged blobs, without --precompress, with page threads. @param {CrawlRun} run */
  canWriteEarly(run) {
    const { o, blobs, shared, target } = this;
    return o.early && target instanceof LocalTree && blobs !== null && (shared || blobs instanceof LogBlobStore) && o.precompress.length === 0 && run.threads.size > 0;
  }

  /** @param {import('../fetch/http.js').Loader | undefined} callerLoader */
  #makeLoader(callerLoader) {
    const o = this.o;
    const retryOptions = {
      retries: o.retries,
      retryDelay: o.retryDelay,
      onRetry: (/** @type {{ url: string, attempt: number, delayMs: number, error: Error }} */ info) => {
        this.coordination?.backoff(info);
        this.emit('retry', { url: info.url, attempt: info.attempt, delayMs: info.delayMs, message: info.error.message });
      },
    };
    const politeness = { rate: o.rate, delay: o.delay, concurrency: o.concurrency };
    const httpOptions = { timeout: o.timeout, maxPageBytes: o.maxPageBytes, headers: o.headers, concurrency: o.concurrency };
    const revalidator = this.canAskAhead(callerLoader !== undefined) ? withRevalidation(createHttpLoader(httpOptions), httpOptions) : null;
    const loader = callerLoader
      ? withRetry(withPoliteness({ load: callerLoader.load.bind(callerLoader), close: async () => {} }, politeness), retryOptions)
      : revalidator
      ? withRetry(revalidator, retryOptions)
      : defaultLoader({ ...httpOptions, ...retryOptions, ...politeness });
    return { loader, revalidator };
  }

  /** OUT locked, last state and journal read, roots listed, seams opened. @returns {Promise<CrawlRun>} */
  async open() {
    const o = this.o;
    // The render step goes after the caller's transforms; its browser is found before anything else.
    this.transforms = o.render ? [...this.callerTransforms, (await import('../render/step.js')).createRenderStep(o)] : this.callerTransforms;
    if (this.stateDir) await this.#openOut();
    else this.prior = this.coordination?.lastCrawl() ?? null;
    /** @type {Map<string, string>} */ const lastmods = new Map();
    this.listed = this.givenListed ?? await loadListedRoots(o, (url, message) => warn(this, url, 'SITEMAP', message), () => { this.sitemapsCut = true; }, lastmods);
    const changed = o.changed === undefined ? null : await readUrlList(o.changed, { stdin: o.stdin, option: '--changed' });
    if (o.roots.length === 0 && this.listed.length === 0) throw nothingToCrawl(o, this.warnings);
    const prior = this.prior;
    // Other --name rules or origins: no page keeps the old rules' file on a 304, but a transient failure still does.
    if (prior?.reuse && prior.naming !== undefined && prior.naming !== namingKey(o.name, [...o.roots, ...this.listed].map((url) => new URL(url).origin))) {
      prior.renamed = true;
    }
    if (!this.coordination) await this.#openShared();
    await this.#openSeams();
    const run = this.#createRun();
    this.run = run;
    this.lifecycle.defer('page threads', () => run.threads.close());
    this.#planUnasked(run, changed, lastmods);
    run.follows = await openFollows(run, this.arena);
    if (prior) prior.follow = null; // its lines are the follow lists' now, if found
    if (prior) prior.reuseOutput = prior.reuse && prior.output === outputKey(run);
    await this.#startAskingAhead(run);
    if (this.canWriteEarly(run)) {
      const early = new EarlyWrites(run, renderContext(run), this.#coordination().feed());
      run.early = early;
      this.lifecycle.defer('early writes', () => early.stop());
    }
    plugFeatures(run);
    // threadsFrom 0, for tests: the workers take the very first page.
    if (o.threadsFrom === 0) await run.threads.start();
    this.lifecycle.defer('transforms', () => this.#closeTransforms(true));
    for (const transform of this.transforms) {
      this.opened.push(transform);
      await transform.open?.(run);
    }
    return run;
  }

  /** @param {CrawlRun} run @param {string[] | null} changed the --changed list @param {Map<string, string>} lastmods the sitemaps' dates, as written */
  #planUnasked(run, changed, lastmods) {
    // In a shared crawl every process fetches what it takes.
    if (this.shared) return;
    const { dates, unusable } = lastmodSeconds(lastmods);
    if (unusable > 0) warn(run, this.o.sitemap[0], 'SITEMAP', `${unusable} <lastmod> value${unusable === 1 ? ' is' : 's are'} not a W3C date (2024-05-01, or with a time and zone): ${unusable === 1 ? 'that page is' : 'those pages are'} fetched`);
    run.unasked = planUnasked(this.prior, this.o, { changed: changed && listedInScope(run, changed), dates, origins: [...run.origins] });
    if (changed && !run.unasked) {
      const why = !this.prior ? 'OUT holds no last crawl' : this.o.full ? '--full ignores the last crawl' : 'the --name rules or origins changed since the last crawl';
      warn(run, changed[0] ?? this.o.out, 'CHANGED_NO_STATE', `--changed: ${why}, so no page can be carried from it: every page is fetched`);
    }
  }

  /** Before anything is fetched. */
  async #openOut() {
    const o = this.o;
    const prepared = await prepareOutDir(o.out);
    // A run that wrote nothing leaves no directory it made; the state directory goes when empty.
    this.lifecycle.defer('directories made', async () => {
      if (!this.committed) for (const dir of [...prepared.created].reverse()) await rmdir(dir).catch(() => {});
    });
    this.lifecycle.defer('state directory', () => this.lockHeld && rmdir(prepared.stateDir));
    // A lock that is no file (a directory, a pipe) is no crawl's: refused by name, or removed by --full.
    const removed = await checkStateEntries(prepared.stateDir, [{ name: LOCK_NAME }], { replace: o.full });
    const lock = await acquireLock(prepared.stateDir, prepared.out);
    this.lockHeld = true;
    this.lifecycle.defer('lock', () => lock.release());
    // A shared crawl clears its leftovers only once its pass is dropped in Redis, so no worker still writes into them.
    if (!this.shared) await clearLeftovers(prepared.stateDir);
    /** @type {import('../output/state-entries.js').StateEntry[]} */
    const files = [STATE_FILE, JOURNAL_FILE, LOG_FILE, INDEX_FILE, FOLLOW_FILE].map((name) => ({ name }));
    if (this.shared && !o.blobs) files.push({ name: 'blobs', directory: true });
    // Before the blob store's clean-up is registered: a refused run leaves what it names as it is.
    removed.push(...await checkStateEntries(prepared.stateDir, files, { replace: o.full }));
    for (const entry of removed) warn(this, prepared.out, 'STATE_REMOVED', `${entry.path} was ${entry.found}, which prerender cannot use: --full removed it`);
    this.lifecycle.defer('blob store', () => this.#closeBlobs());
    // A re-crawl's HTTP thread starts while the last state is read, unless the run may ask for too few pages (#startAskingAhead).
    const stateSize = stateBytes(prepared.stateDir);
    if (this.revalidator && !o.full && !mayCarryUnasked(o) && stateSize > 0 && stateSize >= o.threadsFrom * STATE_LINE_MIN) this.revalidator.warm();
    const prior = await loadPrior(prepared.stateDir, { full: o.full, ignore: o.ignore, pages: new StoredPages(this.arena, PRIOR), roots: [...o.roots, ...o.sitemap] });
    // A journal left means a run was killed since the state: files it put in OUT are not listed there.
    if (prior) prior.ownsTree = !existsSync(path.join(prepared.stateDir, JOURNAL_FILE));
    this.prior = prior;
    const found = o.resume && !o.full && !this.shared ? await readJournal(prepared.stateDir, journalKey(o), new StoredPages(this.arena, JOURNAL)) : null;
    if (found && 'other' in found) {
      warn(this, o.roots[0] ?? o.out, 'NOT_RESUMED', 'OUT holds the journal of an interrupted crawl with other roots, scope or --name rules: it is not resumed, and this crawl fetches every page');
    } else if (found) {
      this.resumed = found;
    }
  }

  /** Blobs a state refers to stay; a run that never got OUT's lock touches none, they are another crawl's. */
  async #closeBlobs() {
    if (this.committed || this.prior || this.journal) await this.blobs?.close();
    else if (this.lockHeld) await this.blobs?.destroy();
  }

  /** --frontier: the shared frontier, records and blob directory. */
  async #openShared() {
    const { openSharedCrawl } = await import('../distributed/shared.js');
    const shared = await openSharedCrawl(this.o, this.listed, this.prior);
    this.coordination = shared;
    this.lifecycle.defer('shared crawl', () => shared.close());
    this.blobs = this.stateDir ? shared.blobs : null;
    if (this.stateDir) await clearLeftovers(this.stateDir);
  }

  async #openSeams() {
    const { target, blobs, stateDir, o } = this;
    if (target) {
      await target.init();
      this.lifecycle.defer('output', () => !this.committed && target.abort());
    }
    // Kept with --full too: a page failing for a while keeps its last copy and follows its stored links.
    if (blobs) await blobs.init({ keep: this.prior !== null || this.resumed !== null });
    if (stateDir && !this.shared) {
      const journal = createJournal(stateDir, journalKey(o), { append: this.resumed !== null });
      this.journal = journal;
      // A run that ended by itself has written its state; only an interrupted or killed one keeps its journal.
      this.lifecycle.defer('journal', () => (this.committed && !this.interrupted ? journal.remove() : journal.close()));
    }
  }

  /** @returns {CrawlRun} */
  #createRun() {
    const { o } = this;
    const coordination = this.#coordination();
    return createCrawlRun({
      options: o,
      emit: this.emit,
      listening: (event) => this.crawler.listenerCount(event) > 0,
      stats: this.stats,
      signal: this.controller.signal,
      loader: this.loader,
      coordination,
      blobs: this.blobs,
      target: this.target,
      transforms: this.transforms,
      warnings: this.warnings,
      prior: this.prior,
      resumed: this.resumed?.entries ?? null,
      journal: this.journal,
      stateDir: this.stateDir,
      sources: sourcesOf(o, this.listed.length),
    }, this.listed);
  }

  /** Not for pages the killed run's journal has. @param {CrawlRun} run */
  async #startAskingAhead(run) {
    const { revalidator, prior: last, blobs } = this;
    if (!revalidator) return;
    // --changed carries every page but those listed and their referrers: none is asked ahead. A thread's start costs more than a few requests,
    // so a small last crawl has none either, as a small crawl has no page threads.
    if (!last?.reuse || last.renamed || run.unasked?.listed || last.pages.size < this.o.threadsFrom
      || (run.unasked && storedAsked(run.unasked, last, run.now, ASK_AHEAD_MIN) < ASK_AHEAD_MIN)) {
      await revalidator.unwarm();
      return;
    }
    const journaled = this.resumed?.entries ?? null;
    const { coordination, unasked } = run;
    revalidator.start((key) => {
      if (journaled?.has(key) || coordination.waits(key) === false) return undefined;
      const stored = reusable(last, key, blobs, VALIDATING);
      return unasked && stored && whyUnasked(unasked, key, stored, run.now) ? undefined : conditionalHeaders(last, stored);
    });
    run.revalidator = revalidator;
  }

  /** @param {boolean} quietly at clean-up: a failing close is not the run's error */
  async #closeTransforms(quietly) {
    for (const transform of this.opened.splice(0).reverse()) {
      if (quietly) await transform.close?.().catch(() => {});
      else await transform.close?.();
    }
  }

  /** Then, in a shared crawl, every process done. */
  async fetchPhase() {
    const run = this.#run();
    run.coordination.attach(run);
    this.stats.phase = 'discover';
    await discover(run, run.coordination.seeds([...this.o.roots, ...this.listed]));
    await run.revalidator?.stop();
    if (!this.controller.signal.aborted) await checkListed(run);
    await this.#closeTransforms(false);
    this.interrupted = this.controller.signal.aborted;
    await run.coordination.barrier(run, { interrupted: this.interrupted });
  }

  /** Each said as a warning when reached. @returns {Limits} */
  limits() {
    const run = this.#run();
    const o = this.o;
    const { overLimit, overLimitSaturated } = run.frontier.counts();
    run.coordination.release();
    const where = o.roots[0] ?? this.listed[0];
    const kept = this.prior ? ' (or lead to the file the last crawl left, which is kept)' : '';
    if (overLimit > 0) {
      warn(run, where, 'MAX_PAGES', `--max-pages ${o.maxPages} reached: ${overLimitSaturated ? 'at least ' : ''}${overLimit} more in-scope URLs were not crawled; links to them stay live${kept}`);
    }
    if (run.depth.tooDeep.size > 0) {
      warn(run, where, 'MAX_DEPTH', `--max-depth ${o.maxDepth} reached: ${run.depth.tooDeep.size} in-scope URLs deeper than that were not crawled; links to them stay live${kept}`);
    }
    if (run.depth.tooLong > 0) {
      warn(run, where, 'MAX_URL_LENGTH', `--max-url-length ${o.maxUrlLength}: ${run.depth.tooLong} links to longer in-scope URLs were not followed; they stay live${kept}`);
    }
    return { overLimit, overLimitSaturated };
  }

  /** A root failed, is gone or left the scope: more likely a site down than one emptied. */
  async rootLost() {
    const run = this.#run();
    const records = run.records;
    return run.warnings.some((warning) => warning.code === 'ROOT_REDIRECT')
      || (await Promise.all(this.o.roots.map((root) => records.get(root)))).some((record) => record?.state === 'failed' || record?.state === 'gone');
  }

  /** Every in-scope URL reached, no failure left but 404/410: only such a run removes files. @param {Limits} limits @param {number} stale */
  async isComplete(limits, stale) {
    const run = this.#run();
    this.lostRoot = await this.rootLost();
    return !this.interrupted && !this.sitemapsCut && !this.lostRoot && limits.overLimit === 0 && run.depth.tooDeep.size === 0 && run.depth.tooLong === 0 && stale === 0
      && (await run.records.list('failed')).every((record) => isGoneStatus(record.error?.status));
  }

  /** @param {Naming} naming @param {boolean} complete @returns {Promise<Outcome>} its `complete` is false when a page was not written */
  async writePhase(naming, complete) {
    const run = this.#run();
    const { target, interrupted } = this;
    if (!target) return { warnings: [], filesWritten: 0, bytesWritten: 0, removed: 0, pruneRefused: false, kept: 0, keptBlobs: [], complete };
    if (target instanceof LocalTree && !interrupted) run.finishPool = await run.coordination.finishPool(run, target.out);
    const outcome = await finalize(run, naming, { interrupted, complete });
    this.committed = true;
    return outcome;
  }

  /**
   * Compacts the log after a run that wrote its state, not an interrupted one whose journal refers to blobs. A shared
   * crawl's blob directory only after a complete crawl.
   * @param {Naming} naming @param {Outcome} outcome @param {Limits} limits @returns {Promise<import('./index.js').CrawlResult>}
   */
  async summary(naming, outcome, limits) {
    const run = this.#run();
    const { blobs, target, shared, interrupted } = this;
    const complete = outcome.complete;
    const tally = newTally();
    if (this.committed && !interrupted && (complete || !shared) && blobs && target) await blobs.compact(liveBlobs(run, naming.keys, tally, outcome.keptBlobs));
    else await countRecords(run, naming.keys, tally);
    if (!interrupted) await run.coordination.finished();
    const { errors, failed: failedHere } = await errorsOf(run);
    const { failures, missing } = splitMissingRequisites(errors, run.options.requisiteErrors);
    return resultOf(run, {
      tally, outcome, failures, requisitesMissing: missing, failedHere, limits, stale: naming.stale, interrupted, complete,
      sitemapsCut: this.sitemapsCut, rootLost: this.lostRoot, startedAt: this.startedAt,
    });
  }

  /** @returns {Coordination} */
  #coordination() {
    if (!this.coordination) throw new Error('the shared crawl is not open');
    return this.coordination;
  }

  /** @returns {CrawlRun} */
  #run() {
    if (!this.run) throw new Error('the run is not open');
    return this.run;
  }

  async close() {
    await this.lifecycle.close();
  }
}

/** @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {import('../warnings.js').Warning[]} warnings */
function nothingToCrawl(o, warnings) {
  const lists = o.sitemap.length > 0 ? `the sitemap${o.sitemap.length > 1 ? 's list' : ' lists'} no URL${o.urls !== undefined ? ', nor does the --urls list' : ''}` : 'the --urls list is empty';
  return new PrerenderError(`nothing to crawl: ${lists}${warnings.length > 0 ? ` (${warnings[0].message})` : ''}`, { code: 'NO_URLS' });
}

/** What decides the URLs crawled and their names. @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o */
function journalKey(o) {
  // --name and --max-url-length count only when given, so journals of runs without them still match.
  return JSON.stringify([o.roots, o.sitemap, o.urls ?? null, o.include, o.exclude, o.assets, o.maxDepth, o.maxRedirects, o.headers, ...(o.name.length > 0 ? [o.name] : []),
    ...(o.includeRegex.length + o.excludeRegex.length > 0 ? [{ includeRegex: o.includeRegex, excludeRegex: o.excludeRegex }] : []),
    ...(o.maxUrlLength !== OPTION_BY_NAME.get('maxUrlLength')?.default ? [{ maxUrlLength: o.maxUrlLength }] : [])]);
}
