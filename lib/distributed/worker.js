// @ts-check
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { AbortError, FrontierError } from '../errors.js';
import { connectRedis, keyPrefix } from './connection.js';
import { VERSION, machineOf } from './identity.js';

/** The engine, loaded once the crawl exists: a worker beside its coordinator leaves it the cores while it seeds (BENCHMARKS.md, "Decisions"). */
async function loadEngine() {
  const [load, options, outdir, discover, step, context, config, frontier, dirBlobs, finish, shared] = await Promise.all([
    import('../fetch/index.js'), import('../options/crawl-options.js'), import('../output/outdir.js'), import('../engine/fetch-phase.js'),
    import('../render/step.js'), import('../engine/run.js'), import('./config.js'), import('./redis-frontier.js'),
    import('./dir-blobs.js'), import('./finish.js'), import('./shared.js'),
  ]);
  return {
    defaultLoader: load.defaultLoader, resolveCrawlOptions: options.resolveCrawlOptions, STATE_DIR: outdir.STATE_DIR,
    discover: discover.discover, createRenderStep: step.createRenderStep, createCrawlRun: context.createCrawlRun,
    workerOptions: config.workerOptions, RedisFrontier: frontier.RedisFrontier, DirBlobStore: dirBlobs.DirBlobStore,
    helpFinish: finish.helpFinish, intervalOf: shared.intervalOf,
  };
}

/**
 * `prerender worker`: join a shared crawl, fetch leased URLs, stage bodies in the shared blob directory
 * and record results in Redis until the completion barrier; then help write the tree in leased buckets
 * (finish.js) until the crawl is finished or the coordinator gone. With --render each process runs its own Chromium.
 *
 * @typedef {{
 *   frontier: string, crawlId: string, concurrency?: number, wait?: number, blobs?: string,
 *   frontierTimeout?: number, signal?: AbortSignal, version?: string,
 *   renderConcurrency?: number, threads?: number, browser?: string, env?: Record<string, string | undefined>,
 * }} WorkerOptions
 *   wait: seconds to wait for a crawl id that does not exist yet (default 60); version: claimed (tests);
 *   renderConcurrency, browser: this process's tabs and binary; env: where the browser is looked for
 */

export class Worker extends EventEmitter {
  /** @param {WorkerOptions} options */
  constructor(options) {
    super();
    this.options = options;
    this.stats = { fetched: 0, failed: 0, written: 0, active: 0, queued: 0, resumed: 0, startedAt: Date.now(), phase: /** @type {'discover'} */ ('discover') };
  }

  /** @returns {Promise<{ pages: number, rendered: number, rewritten: number, failed: number, lateResults: number, interrupted: boolean }>} */
  async run() {
    const w = this.options;
    const host = machineOf(w.env ?? process.env);
    const redis = await connectRedis(w.frontier, { timeoutSeconds: w.frontierTimeout ?? 60 });
    const prefix = keyPrefix(w.crawlId);
    /** @type {import('./redis-frontier.js').RedisFrontier | null} */
    let frontier = null;
    /** @type {import('../fetch/http.js').Loader | null} */
    let loader = null;
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    w.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const config = await waitForConfig(redis, prefix, w);
      const version = w.version ?? VERSION;
      if (config.version !== version) {
        throw new FrontierError(`crawl id "${w.crawlId}" was started by prerender ${config.version}; this worker is prerender ${version}: run workers of the same version`, { code: 'VERSION_MISMATCH' });
      }
      const {
        defaultLoader, resolveCrawlOptions, STATE_DIR, discover, createRenderStep, createCrawlRun, workerOptions, RedisFrontier, DirBlobStore, helpFinish, intervalOf,
      } = await loadEngine();
      const o = resolveCrawlOptions({
        ...workerOptions(config, { concurrency: w.concurrency, threads: w.threads, renderConcurrency: w.renderConcurrency, browser: w.browser, frontier: w.frontier, crawlId: w.crawlId }),
        ...(w.env ? { env: w.env } : {}),
      });
    // --render: the browser is found before anything is taken (a worker without one exits 2 at once).
      const render = o.render ? createRenderStep(o) : null;
      let rendered = 0;
      const blobsDir = w.blobs ? path.resolve(w.blobs) : o.blobs ?? path.join(o.out, STATE_DIR, 'blobs');
      const blobs = new DirBlobStore(blobsDir);
      await blobs.init();
      frontier = new RedisFrontier(redis, prefix, {
        maxPages: o.maxPages, leaseMs: o.leaseTimeout, originConcurrency: o.originConcurrency, intervalMs: intervalOf(o), maxDeliveries: o.maxDeliveries,
      }, { info: { role: 'worker', version, host } });
      loader = defaultLoader({
        concurrency: o.concurrency, timeout: o.timeout, maxPageBytes: o.maxPageBytes, headers: o.headers, retries: o.retries, retryDelay: o.retryDelay, rate: o.rate, delay: o.delay,
        onRetry: (info) => {
          frontier?.backoff(info); // 429/503: the origin waits in every process
          this.emit('retry', { url: info.url, attempt: info.attempt, delayMs: info.delayMs, message: info.error.message });
        },
      });
      const run = createCrawlRun({
        options: o,
        emit: (event, data) => { this.emit(event, data); },
        listening: (event) => this.listenerCount(event) > 0,
        stats: this.stats,
        signal: controller.signal,
        loader,
        frontier,
        records: frontier.records,
        blobs,
        target: null,
        transforms: render ? [{ ...render, run: async (page, crawl) => { await render.run(page, crawl); if (page.record.render) rendered++; } }] : [],
        warnings: [],
        // The last crawl's pages come with their leases; --ignore hashes only if made with this crawl's patterns.
        prior: { complete: false, pages: new Map(), reuse: true, output: '', reuseOutput: false, sameIgnore: true, precompressed: [] },
        resumed: null,
        journal: null,
        stateDir: null,
        sources: {},
      }, config.listed);
      frontier.start();
      frontier.attach(run, { lazyPrior: true });
      let rewritten = 0;
      let lateBuckets = 0;
      /** @type {import('../engine/run.js').Transform | null} a transform open (closed however the run ends) */
      let opened = null;
      try {
        if (render) {
          opened = render;
          await render.open?.(run);
        }
        await discover(run, []);
        await frontier.flush();
        opened = null;
        await render?.close?.(); // the browser is not needed to write the tree
        // Fetching is over: help write the tree while the coordinator is alive (finish.js).
        if (!controller.signal.aborted) {
          await helpFinish({
            redis, prefix, worker: frontier.worker, leaseMs: o.leaseTimeout, maxDeliveries: o.maxDeliveries, out: path.resolve(o.out), blobsDir, threads: run.threads,
            readBlobs: (ids) => blobs.get(ids), locate: (id) => blobs.locate(id), signal: controller.signal,
            onBucket: (pages) => { rewritten += pages; }, onLate: () => { lateBuckets++; },
          });
        }
      } finally {
        await opened?.close?.();
        await run.threads.close();
      }
      return {
        pages: frontier.pagesDone, rendered, rewritten, failed: this.stats.failed, lateResults: frontier.lateResults + lateBuckets, interrupted: controller.signal.aborted,
      };
    } catch (error) {
      controller.abort();
      throw error;
    } finally {
      w.signal?.removeEventListener('abort', onAbort);
      await loader?.close().catch(() => {});
      await frontier?.leave();
      await redis.quit().catch(() => redis.disconnect());
    }
  }
}

/** How often a worker asks for its crawl's configuration in its first CONFIG_POLL_FOR_MS. */
const CONFIG_POLL_MS = 25;
const CONFIG_POLL_FOR_MS = 10_000;

/**
 * The crawl's configuration, once it exists (bounded by --wait).
 * @param {import('./connection.js').CrawlRedis} redis @param {string} prefix @param {WorkerOptions} w
 * @returns {Promise<import('./config.js').SharedConfig>}
 */
async function waitForConfig(redis, prefix, w) {
  const begun = Date.now();
  const deadline = begun + (w.wait ?? 60) * 1000;
  // Workers often start with their coordinator: ask often at first to join as soon as it has seeded, then less.
  for (let delay = CONFIG_POLL_MS; ; delay = Date.now() - begun < CONFIG_POLL_FOR_MS ? CONFIG_POLL_MS : Math.min(Math.max(delay * 2, 500), 1000)) {
    if (w.signal?.aborted) throw new AbortError('interrupted while waiting for the crawl');
    const text = await redis.get(`${prefix}config`).catch((error) => { throw redis.toFrontierError(error); });
    if (text) return JSON.parse(text);
    if (Date.now() >= deadline || w.signal?.aborted) {
      throw new FrontierError(`no crawl "${w.crawlId}" in Redis after waiting ${w.wait ?? 60} s (--wait): start it with prerender crawl … --frontier … --crawl-id ${w.crawlId}`, { code: 'NO_CRAWL' });
    }
    await new Promise((resolve) => { setTimeout(resolve, Math.min(delay, Math.max(1, deadline - Date.now()))); });
  }
}
