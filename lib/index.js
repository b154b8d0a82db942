// @ts-check
/**
 * prerender's programmatic API. See README.md, "API".
 * @typedef {import('./options/crawl-options.js').CrawlOptions} CrawlOptions
 * @typedef {import('./crawler/index.js').CrawlResult} CrawlResult
 * @typedef {import('./crawler/index.js').CrawlerOptions} CrawlerOptions
 * @typedef {import('./fetch/http.js').Loader} Loader
 * @typedef {import('./fetch/http.js').LoadResult} LoadResult
 * @typedef {import('./output/target.js').OutputTarget} OutputTarget
 * @typedef {import('./output/manifest/schema.js').Manifest} Manifest
 * @typedef {import('./engine/run.js').Transform} Transform
 */
import { Crawler as EngineCrawler } from './crawler/index.js';
import { ListenerError } from './errors.js';
import { checkedLoader } from './fetch/checked-loader.js';
import { checkedTarget } from './output/checked-target.js';
import { checkCrawlerSeams } from './options/crawl-options.js';

export { createHttpLoader, withRetry } from './fetch/index.js';
export { LocalTree } from './output/local-tree.js';
export { readManifest, parseManifest, MANIFEST_NAME, MANIFEST_VERSION, ManifestFormatError } from './output/manifest/index.js';
export { WARNING_CODES } from './warnings.js';
export { preview, explainUrl } from './preview/index.js';
export { findConfig, loadConfigFile } from './options/config-file.js';
export { resolveCrawlOptions, CRAWL_OPTIONS } from './options/crawl-options.js';
export { createPriceFilter, createServer, runServeCommand } from './serve/index.js';
// The front (serve's `origin` option, `prerender front`): docs/front.md.
export { frontConfigs } from './front/command.js';
export { RouteTable } from './front/route.js';
export { Scope } from './roots/scope.js';
export { normalizeUrl } from './url.js';
export { defaultFileName, headerFileName } from './naming/file-names.js';
export { renderPlaceholder } from './document/placeholders.js';
export { PriceFileError, InvalidPriceAnswerError } from './prices/index.js';
export { run } from './cli/index.js';
export * from './errors.js';
export { deploy, publish, rollback, listReleases, verify } from './deploy/deploy.js';
export { measureCapacity, defaultProfile as defaultCapacityProfile } from './capacity/index.js';

/**
 * The API's crawler: the engine's, its seams held to what the README promises. Options are checked up
 * front (a UsageError, not a TypeError from deep in the run); a caller's loader, target and transforms are
 * wrapped; a throwing listener does not reach the engine: the run goes on, then `run()` rejects with a
 * ListenerError carrying the result.
 */
export class Crawler extends EngineCrawler {
  /** @param {CrawlerOptions} options see README, "API" */
  constructor(options) {
    super(apiOptions(options));
  }

  /**
   * Every listener is called on its own: one that throws or rejects is recorded for `run()`, unseen by the
   * emitting code and the listeners after it.
   * @param {string | symbol} event @param {...any} args
   */
  emit(event, ...args) {
    // EventEmitter's own events keep its semantics ('error' throws when nobody listens).
    if (event === 'error' || event === 'newListener' || event === 'removeListener') return super.emit(event, ...args);
    const listeners = this.rawListeners(event);
    // This run's record: a promise settling later reports to the run it came from.
    const current = listenerErrors.get(this);
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

  /** @returns {Promise<CrawlResult>} */
  async run() {
    /** @type {RunListeners} */
    const current = { thrown: [], ended: false };
    listenerErrors.set(this, current);
    let result;
    try {
      result = await super.run(); // a failed run's own error wins over a listener's
      // Async listeners that have already failed have their rejection handled by now.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      current.ended = true;
    }
    const { thrown } = current;
    if (thrown.length === 0) return result;
    const [first] = thrown;
    const message = first.error instanceof Error ? first.error.message : String(first.error);
    throw new ListenerError(`a listener of the "${String(first.event)}" event threw${thrown.length > 1 ? ` (and ${thrown.length - 1} more time${thrown.length > 2 ? 's' : ''})` : ''}: ${message}; the crawl ran to its end without it (its summary is this error's "result")`, { cause: first.error, result });
  }
}

/**
 * Crawl and write the static tree. Page failures are data, not exceptions. Async, so bad options reject
 * the promise like every other failure rather than throw.
 * @param {CrawlerOptions} options @returns {Promise<CrawlResult>}
 */
export async function crawl(options) {
  return new Crawler(options).run();
}

/**
 * @typedef {{ thrown: { event: string | symbol, error: unknown }[], ended: boolean }} RunListeners
 *   what one run's listeners threw (or rejected with); ended: run() has settled
 */

/** @type {WeakMap<Crawler, RunListeners>} each crawler's current run */
const listenerErrors = new WeakMap();

/** The options checked, and the caller's seams wrapped. @param {CrawlerOptions} options @returns {CrawlerOptions} */
function apiOptions(options) {
  checkCrawlerSeams(options);
  const checked = { ...options };
  if (options.loader) checked.loader = checkedLoader(options.loader);
  if (options.target) checked.target = checkedTarget(options.target);
  if (options.transforms) checked.transforms = options.transforms.map(checkedTransform);
  return checked;
}

/**
 * A caller's transform whose open() and close() always return a promise: the engine's clean-up calls
 * `close().catch(...)` before releasing OUT's lock.
 * @param {Transform} transform @returns {Transform}
 */
function checkedTransform(transform) {
  const { open, close } = transform;
  return {
    name: transform.name,
    concurrency: transform.concurrency,
    run: (page, run) => transform.run(page, run),
    ...(open ? { open: async (/** @type {import('./engine/run.js').CrawlRun} */ run) => { await open.call(transform, run); } } : {}),
    ...(close ? { close: async () => { await close.call(transform); } } : {}),
  };
}
