// @ts-check
import { EventEmitter } from 'node:events';
import { checkCrawlerSeams, resolveCrawlOptions } from '../options/crawl-options.js';
import { ListenerError } from '../errors.js';
import { checkedLoader } from '../fetch/checked-loader.js';
import { checkedTarget } from '../output/checked-target.js';
import { assignNames } from '../naming/assign.js';
import { CrawlSession } from './session.js';

/**
 * The one Crawler of the API and the CLI: roots → fetch phase → names → write phase → commit, through replaceable
 * seams (loader, frontier, record store, blob store, output target). Events and seams: docs/api.md.
 * @typedef {import('../engine/run.js').CrawlRun} CrawlRun @typedef {import('../engine/run.js').CrawlStats} CrawlStats
 * @typedef {import('../options/crawl-options.js').CrawlOptions & {
 *   onEvent?: (event: { type: string } & Record<string, unknown>) => void, loader?: import('../fetch/http.js').Loader,
 *   transforms?: import('../engine/run.js').Transform[], target?: import('../output/target.js').OutputTarget,
 *   dryRun?: boolean, stdin?: NodeJS.ReadableStream,
 * }} CrawlerOptions loader: retries still wrap it, and the caller closes it
 * @typedef {{
 *   out: string, manifest: string | null, pages: number, assets: number, failed: number, warnings: number, redirects: number,
 *   notCrawled: number, notCrawledSaturated: boolean, maxPages: number, requisitesNotFetched: number,
 *   interrupted: boolean, durationMs: number,
 *   threads: { workers: number, inWorkers: number, inMain: number, early: number, revalidated: number },
 *   failures: import('../output/manifest/schema.js').ManifestError[],
 *   requisitesMissing: import('../output/manifest/schema.js').ManifestError[],
 *   stale: number, resumed: number, fetched: number, carried: { fresh: number, listed: number, dated: number }, pruneRefused: boolean, complete: boolean, tooDeep: number, tooLong: number, sitemapsCut: boolean, rootLost: boolean, kept: number,
 *   churn: { new: number, changed: number, notModified: number, sameBytes: number, removed: number, stale: number, failed: number, filesWritten: number, bytesWritten: number },
 * }} CrawlResult
 *   Fields: docs/crawl.md, "--json". fetched: pages asked of the origin this run; carried: pages carried without a request;
 *   requisitesMissing: with --requisite-errors warn, the requisites that answered 404/410, not in `failures`.
 */

const ON_EVENT = ['page', 'redirect', 'retry', 'failure', 'warning', 'written'];

/** @returns {CrawlStats} */
const freshStats = () => /** @type {CrawlStats} */ ({ fetched: 0, failed: 0, written: 0, active: 0, queued: 0, resumed: 0, startedAt: Date.now(), phase: 'start' });

export class Crawler extends EventEmitter {
  /** @type {import('../fetch/http.js').Loader | undefined} */ #loader;
  /** @type {import('../engine/run.js').Transform[]} */ #transforms;
  /** @type {import('../output/target.js').OutputTarget | undefined} */ #target;
  /** @type {RunListeners | null} */ #listeners = null;

  /** Options are checked first: a UsageError, not a TypeError from deep in the run. @param {CrawlerOptions} options see docs/api.md */
  constructor(options) {
    super();
    const { onEvent, loader, transforms, target, ...rest } = apiOptions(options);
    this.options = resolveCrawlOptions(rest);
    this.#loader = loader;
    this.#transforms = transforms ?? [];
    this.#target = target;
    this.stats = freshStats();
    if (typeof onEvent === 'function') {
      for (const name of ON_EVENT) this.on(name, (data) => onEvent({ type: name, ...data }));
    }
  }

  /** A listener that throws or rejects is recorded for `run()`, unseen by the others. @param {string | symbol} event @param {...any} args */
  emit(event, ...args) {
    // EventEmitter's own events keep its semantics ('error' throws when nobody listens).
    if (event === 'error' || event === 'newListener' || event === 'removeListener') return super.emit(event, ...args);
    const listeners = this.rawListeners(event);
    // This run's record: a promise settling later reports to the run it came from.
    const current = this.#listeners;
    for (const listener of listeners) {
      try {
        const returned = Reflect.apply(listener, this, args);
        if (returned && typeof returned.then === 'function') {
          Promise.resolve(returned).then(undefined, (/** @type {unknown} */ error) => {
            if (!current?.ended) {
              current?.thrown.push({ event, error });
              return;
            }
            // After run() settled: a coded process warning, neither lost nor crashing the process.
            process.emitWarning(`a listener of the "${String(event)}" event rejected after the crawl ended: ${error instanceof Error ? error.message : String(error)}`, { code: 'PRERENDER_LISTENER' });
          });
        }
      } catch (error) {
        current?.thrown.push({ event, error });
      }
    }
    return listeners.length > 0;
  }

  /** A listener that threw does not stop the run: it ends, then rejects with a ListenerError carrying its result. @returns {Promise<CrawlResult>} */
  async run() {
    /** @type {RunListeners} */
    const current = { thrown: [], ended: false };
    this.#listeners = current;
    let result;
    try {
      result = await this.#crawl(); // a failed run's own error wins over a listener's
      // Async listeners that have already failed have their rejection handled by now.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      current.ended = true;
    }
    const { thrown } = current;
    if (thrown.length === 0) return result;
    const [first] = thrown;
    const message = first.error instanceof Error ? first.error.message : String(first.error);
    const more = thrown.length > 1 ? ` (and ${thrown.length - 1} more time${thrown.length > 2 ? 's' : ''})` : '';
    throw new ListenerError(`a listener of the "${String(first.event)}" event threw${more}: ${message}; the crawl ran to its end without it (its summary is this error's "result")`, { cause: first.error, result });
  }

  /** The recipe; clean-ups run in reverse, whatever happened. @returns {Promise<CrawlResult>} */
  async #crawl() {
    this.stats = freshStats();
    const session = new CrawlSession(this, this.stats, { loader: this.#loader, transforms: this.#transforms, target: this.#target });
    try {
      const run = await session.open();
      await session.fetchPhase();
      const naming = await assignNames(run);
      run.early?.close(naming);
      const limits = session.limits();
      const complete = await session.isComplete(limits, naming.stale);
      const outcome = await session.writePhase(naming, complete);
      return await session.summary(naming, outcome, limits);
    } catch (error) {
      session.controller.abort(); // requests in flight are not waited for
      throw error;
    } finally {
      await session.close();
    }
  }
}

/** Page failures are data; async, so bad options reject like every other failure. @param {CrawlerOptions} options @returns {Promise<CrawlResult>} */
export async function crawl(options) {
  return new Crawler(options).run();
}

/** @typedef {{ thrown: { event: string | symbol, error: unknown }[], ended: boolean }} RunListeners ended: run() has settled */

/** @param {CrawlerOptions} options @returns {CrawlerOptions} */
function apiOptions(options) {
  checkCrawlerSeams(options);
  const checked = { ...options };
  if (options.loader) checked.loader = checkedLoader(options.loader);
  if (options.target) checked.target = checkedTarget(options.target);
  if (options.transforms) checked.transforms = options.transforms.map(checkedTransform);
  return checked;
}

/**
 * open() and close() always return a promise: the clean-up calls `close().catch(...)` before releasing OUT's lock.
 * @param {import('../engine/run.js').Transform} transform @returns {import('../engine/run.js').Transform}
 */
function checkedTransform(transform) {
  const { open, close } = transform;
  return {
    name: transform.name,
    concurrency: transform.concurrency,
    run: (page, run) => transform.run(page, run),
    ...(open ? { open: async (/** @type {CrawlRun} */ run) => { await open.call(transform, run); } } : {}),
    ...(close ? { close: async () => { await close.call(transform); } } : {}),
  };
}
