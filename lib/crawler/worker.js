// @ts-check
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { AbortError, FrontierError } from '../errors.js';
import { connectRedis, keyPrefix } from '../distributed/connection.js';
import { VERSION, machineOf } from '../distributed/identity.js';
import { checkProbe } from '../distributed/blob-probe.js';
import { sleep } from '../fetch/abort.js';

/** Loaded once the crawl exists: a worker leaves its coordinator the cores while it seeds (BENCHMARKS.md, "Decisions"). */
async function loadEngine() {
  const [options, outdir, config, joined, finish, shared, session] = await Promise.all([
    import('../options/crawl-options.js'), import('../output/outdir.js'), import('../distributed/config.js'), import('../distributed/joined.js'),
    import('../distributed/finish.js'), import('../distributed/shared.js'), import('./session.js'),
  ]);
  return {
    resolveCrawlOptions: options.resolveCrawlOptions, STATE_DIR: outdir.STATE_DIR, workerOptions: config.workerOptions, JoinedCrawl: joined.JoinedCrawl,
    helpFinish: finish.helpFinish, intervalOf: shared.intervalOf, CrawlSession: session.CrawlSession,
  };
}

/**
 * `prerender worker`: fetch leased URLs until the completion barrier, then help write the tree in leased buckets
 * until the crawl is finished or the coordinator gone.
 * @typedef {{ frontier: string, crawlId: string, concurrency?: number, wait?: number, blobs?: string, frontierTimeout?: number,
 *   signal?: AbortSignal, version?: string, renderConcurrency?: number, threads?: number, browser?: string, browserEndpoint?: string, env?: Record<string, string | undefined> }} WorkerOptions
 *   wait: seconds to wait for a crawl id that does not exist yet; version: claimed, for tests
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
    /** @type {import('./session.js').CrawlSession | null} */ let session = null;
    /** @type {(() => void) | null} */ let countRendered = null;
    try {
      const prefix = keyPrefix(w.crawlId);
      const config = await waitForConfig(redis, prefix, w);
      const version = w.version ?? VERSION;
      if (config.version !== version) {
        throw new FrontierError(`crawl id "${w.crawlId}" was started by prerender ${config.version}; this worker is prerender ${version}: run workers of the same version`, { code: 'VERSION_MISMATCH' });
      }
      const { resolveCrawlOptions, STATE_DIR, workerOptions, JoinedCrawl, helpFinish, intervalOf, CrawlSession } = await loadEngine();
      const o = resolveCrawlOptions({
        ...workerOptions(config, { concurrency: w.concurrency, threads: w.threads, renderConcurrency: w.renderConcurrency, browser: w.browser, browserEndpoint: w.browserEndpoint, frontier: w.frontier, crawlId: w.crawlId }),
        ...(w.env ? { env: w.env } : {}),
        ...(w.signal ? { signal: w.signal } : {}),
      });
      const shared = o.blobs ?? path.join(o.out, STATE_DIR, 'blobs');
      const blobsDir = w.blobs ? path.resolve(w.blobs) : shared;
      // Bodies staged where the coordinator cannot read them would fail its pages: refused before taking one.
      await checkProbe(redis, prefix, { dir: blobsDir, shared, crawlId: w.crawlId, deadline: Date.now() + (w.wait ?? 60) * 1000, signal: w.signal });
      const joined = new JoinedCrawl(redis, prefix, {
        maxPages: o.maxPages, leaseMs: o.leaseTimeout, originConcurrency: o.originConcurrency, intervalMs: intervalOf(o), maxDeliveries: o.maxDeliveries,
      }, { info: { role: 'worker', version, host } }, blobsDir);
      let rendered = 0;
      countRendered = () => { rendered++; };
      this.on('rendered', countRendered);
      const crawler = { options: o, emit: (/** @type {string} */ event, /** @type {object} */ data) => this.emit(event, data), listenerCount: (/** @type {string} */ event) => this.listenerCount(event) };
      // The same run as a coordinator's, on the joined crawl: its lifecycle closes the tabs, threads, loader and Redis.
      session = new CrawlSession(crawler, this.stats, { transforms: [], coordination: joined, listed: config.listed });
      const run = await session.open();
      await session.fetchPhase();
      let rewritten = 0;
      let lateBuckets = 0;
      if (!session.interrupted) {
        await helpFinish({
          redis, prefix, worker: joined.frontier.worker, leaseMs: o.leaseTimeout, maxDeliveries: o.maxDeliveries, out: path.resolve(o.out), blobsDir, threads: run.threads,
          readBlobs: (ids) => joined.blobs.get(ids), locate: (id) => joined.blobs.locate(id), signal: session.controller.signal,
          onBucket: (pages) => { rewritten += pages; }, onLate: () => { lateBuckets++; },
        });
      }
      return {
        pages: joined.frontier.pagesDone, rendered, rewritten, failed: this.stats.failed, lateResults: joined.frontier.lateResults + lateBuckets, interrupted: session.controller.signal.aborted,
      };
    } catch (error) {
      session?.controller.abort();
      throw error;
    } finally {
      if (countRendered) this.off('rendered', countRendered);
      if (session) await session.close();
      else await redis.quit().catch(() => redis.disconnect());
    }
  }
}

/** How often a worker asks for its crawl's configuration at first. */
const CONFIG_POLL_MS = 25;
const CONFIG_POLL_FOR_MS = 10_000;

/**
 * Bounded by --wait. @param {import('../distributed/connection.js').CrawlRedis} redis @param {string} prefix @param {WorkerOptions} w
 * @returns {Promise<import('../distributed/config.js').SharedConfig>}
 */
export async function waitForConfig(redis, prefix, w) {
  const begun = Date.now();
  const deadline = begun + (w.wait ?? 60) * 1000;
  // Workers often start with their coordinator: ask often at first to join as soon as it has seeded, then less.
  for (let delay = CONFIG_POLL_MS; ; delay = Date.now() - begun < CONFIG_POLL_FOR_MS ? CONFIG_POLL_MS : Math.min(Math.max(delay * 2, 500), 1000)) {
    if (w.signal?.aborted) throw new AbortError('interrupted while waiting for the crawl');
    const text = await redis.get(`${prefix}config`).catch((error) => { throw redis.toFrontierError(error); });
    if (text) return JSON.parse(text);
    // Interrupted while asking is an interruption, not a crawl that never came.
    if (w.signal?.aborted) throw new AbortError('interrupted while waiting for the crawl');
    if (Date.now() >= deadline) {
      throw new FrontierError(`no crawl "${w.crawlId}" in Redis after waiting ${w.wait ?? 60} s (--wait): start it with prerender crawl … --frontier … --crawl-id ${w.crawlId}`, { code: 'NO_CRAWL' });
    }
    await sleep(Math.min(delay, Math.max(1, deadline - Date.now())), w.signal); // an AbortError at the signal
  }
}
