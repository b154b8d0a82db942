// @ts-check
import { EventEmitter } from 'node:events';
import { resolveCrawlOptions } from '../options/crawl-options.js';
import { assignNames } from '../naming/assign.js';
import { CrawlSession } from './session.js';

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
 * @typedef {import('../engine/run.js').CrawlRun} CrawlRun
 * @typedef {import('../engine/run.js').CrawlStats} CrawlStats
 * @typedef {import('../options/crawl-options.js').CrawlOptions & {
 *   onEvent?: (event: { type: string } & Record<string, unknown>) => void,
 *   loader?: import('../fetch/http.js').Loader,
 *   transforms?: import('../engine/run.js').Transform[],
 *   target?: import('../output/target.js').OutputTarget,
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
 *   failures: import('../output/manifest/schema.js').ManifestError[],
 *   requisitesMissing: import('../output/manifest/schema.js').ManifestError[],
 *   stale: number, resumed: number, fetched: number, carried: { fresh: number, listed: number, dated: number }, pruneRefused: boolean, complete: boolean, tooDeep: number, tooLong: number, sitemapsCut: boolean, rootLost: boolean, kept: number,
 *   churn: {
 *     new: number, changed: number, notModified: number, sameBytes: number, removed: number, stale: number, failed: number,
 *     filesWritten: number, bytesWritten: number,
 *   },
 * }} CrawlResult
 *   fetched: pages this run asked the origin for (answered 200 or 304, or kept stale); carried: pages of
 *   the last crawl carried without a request, fresh (--fresh, --honour-cache-control), not in the
 *   --changed list, or dated (a sitemap's <lastmod> no later than the stored copy);
 *   threads: worker threads started, and the per-page requests (tokenise, rewrite) they and the main thread did;
 *   revalidated: the answers of a re-crawl's HTTP thread (revalidate.js) the crawl used, asked ahead or not
 *   churn: URLs new / changed / unchanged (304) / unchanged (same bytes) / removed / stale / failed,
 *   and the files and bytes actually written
 *   requisitesMissing: with --requisite-errors warn, the requisites that answered 404/410: not in `failures`
 *   complete: every in-scope URL reached, no failure left but 404/410 (only such a run removes files);
 *   tooDeep: in-scope URLs not crawled for --max-depth; tooLong: links not followed for --max-url-length;
 *   sitemapsCut: some sitemaps were not read (--max-pages, or the cap on sitemaps); rootLost: a root
 *   answered 404/410 or redirected out of scope (the run is then not complete); kept: pages of the last crawl this run did not
 *   reach (or that failed for good) whose files it keeps as they were (listed stale in the manifest)
 */

/** The events `onEvent` receives. */
const ON_EVENT = ['page', 'redirect', 'retry', 'failure', 'warning', 'written'];

/** @returns {CrawlStats} */
const freshStats = () => /** @type {CrawlStats} */ ({ fetched: 0, failed: 0, written: 0, active: 0, queued: 0, resumed: 0, startedAt: Date.now(), phase: 'start' });

export class Crawler extends EventEmitter {
  /** @type {import('../fetch/http.js').Loader | undefined} */
  #loader;
  /** @type {import('../engine/run.js').Transform[]} */
  #transforms;
  /** @type {import('../output/target.js').OutputTarget | undefined} */
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

  /**
   * One run, as a recipe: open (OUT, last state, roots, seams), fetch phase,
   * names, write phase, summary; clean-ups in reverse, whatever happened.
   * @returns {Promise<CrawlResult>}
   */
  async run() {
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

/**
 * Crawl and write the static tree. Resolves with the summary; page failures
 * are data (in the result and the manifest), not exceptions.
 * @param {CrawlerOptions} options
 * @returns {Promise<CrawlResult>}
 */
export function crawl(options) {
  return new Crawler(options).run();
}
