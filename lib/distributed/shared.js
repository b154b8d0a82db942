// @ts-check
import path from 'node:path';
import { availableParallelism } from 'node:os';
import { FrontierError, OutputError } from '../errors.js';
import { STATE_DIR } from '../output/outdir.js';
import { VERSION, machineOf } from './identity.js';
import { connectRedis, keyPrefix, redactUrl } from './connection.js';
import { configDifference, sharedConfig } from './config.js';
import { RedisFrontier, TOO_LONG_MARK } from './redis-frontier.js';
import { RedisCoordination } from './redis-coordination.js';
import { parseFeed } from './feed-format.js';
import { DirBlobStore } from './dir-blobs.js';
import { probeKey, writeProbe } from './blob-probe.js';
import { FinishPool, dropLeftPass, dropPass } from './finish.js';
import { failRedirectLoops } from './loops.js';
import { errorsOf } from '../engine/errors-list.js';


/**
 * The coordinator's side of a shared crawl: it gathers what every process found at the completion barrier, before
 * naming. meta.phase: seeding, crawl, finish, finished; a finished id starts a new crawl, an unfinished one resumes.
 * @typedef {import('../engine/coordination.js').Coordination} Coordination
 */

export { VERSION, machineOf };

/**
 * Processes sharing this machine's busy cores only add round trips; an unknown host counts as another machine.
 * @param {(string | null)[]} helpers the other live processes' heartbeat infos @param {{ host: string, threads: number, cores: number }} here
 */
export function bucketsAddCores(helpers, here) {
  if (helpers.length === 0) return false;
  if (here.threads < here.cores) return true;
  return helpers.some((text) => text === null || hostOf(text) !== here.host);
}

/** Between two URLs of one origin. @param {{ rate?: number, delay?: number }} o */
export const intervalOf = (o) => Math.max(o.delay ?? 0, o.rate ? Math.ceil(1000 / o.rate) : 0);

/**
 * @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {string[]} listed
 * @param {import('../recrawl/prior.js').Prior | null} prior what the last crawl into OUT left
 */
export async function openSharedCrawl(o, listed, prior) {
  const url = /** @type {string} */ (o.frontier);
  const crawlId = /** @type {string} */ (o.crawlId);
  const host = machineOf(o.env ?? process.env);
  const redis = await connectRedis(url, { timeoutSeconds: o.frontierTimeout });
  const prefix = keyPrefix(crawlId);
  try {
    const blobsDir = o.blobs ? path.resolve(o.blobs) : path.join(path.resolve(o.out), STATE_DIR, 'blobs');
    const given = sharedConfig({ ...o, blobs: blobsDir }, listed, VERSION);
    // Another configuration changes nothing under the crawl id, unless --fresh-start replaces it.
    const storedText = await redis.get(`${prefix}config`);
    const stored = storedText ? /** @type {import('./config.js').SharedConfig} */ (JSON.parse(storedText)) : null;
    if (stored && !o.freshStart) refuseDifference(stored, given, crawlId);
    const frontier = new RedisFrontier(redis, prefix, {
      maxPages: o.maxPages, leaseMs: o.leaseTimeout, originConcurrency: o.originConcurrency, intervalMs: intervalOf(o), maxDeliveries: o.maxDeliveries,
    }, { seeder: true, coordinator: true, info: { role: 'coordinator', version: VERSION, host } });
    // Claimed before anything is cleared, or a second coordinator would clear the live one's work. The longer lease decides.
    const claimLeaseMs = Math.max(o.leaseTimeout, Number(stored?.options.leaseTimeout ?? 0));
    const claim = await claimCoordinator(redis, prefix, frontier, claimLeaseMs, crawlId);
    try {
      // A pass a killed coordinator left goes.
      if (claim.left) await dropPass(redis, prefix, blobsDir, claim.left);
      if (o.freshStart) await clearCrawl(redis, prefix, claim, { keepConfig: false });
      // Before the configuration a worker waits for: every worker proves it sees this directory (blob-probe.js).
      await writeProbe(redis, prefix, blobsDir, crawlId);
      claim.check();
      const created = await redis.set(`${prefix}config`, JSON.stringify(given), 'NX');
      if (created) {
        claim.check();
        await storePrior(redis, prefix, prior);
        claim.check();
        await redis.hset(`${prefix}meta`, 'phase', 'seeding', 'startedAt', Date.now());
      } else {
        refuseDifference(JSON.parse(/** @type {string} */ (await redis.get(`${prefix}config`))), given, crawlId);
        const phase = await redis.hget(`${prefix}meta`, 'phase');
        if (phase === 'finished' || phase === null) {
          await clearCrawl(redis, prefix, claim, { keepConfig: true });
          await storePrior(redis, prefix, prior);
          claim.check();
          await redis.hset(`${prefix}meta`, 'phase', 'seeding', 'startedAt', Date.now());
        }
      }
      claim.check();
    } catch (error) {
      await claim.release();
      throw error;
    } finally {
      claim.stop();
    }
    frontier.start();
    return new SharedCrawl(redis, prefix, frontier, new DirBlobStore(blobsDir), url, o.leaseTimeout);
  } catch (error) {
    redis.disconnect();
    // The blob directory's own failure (writeProbe) is not Redis's.
    throw error instanceof FrontierError || error instanceof OutputError ? error : redis.toFrontierError(error);
  }
}

/** @param {import('./config.js').SharedConfig} stored @param {import('./config.js').SharedConfig} given @param {string} crawlId */
function refuseDifference(stored, given, crawlId) {
  const difference = configDifference(stored, given);
  if (difference) {
    throw new FrontierError(`crawl id "${crawlId}" holds another configuration: ${difference}; use the same options, another --crawl-id, or --fresh-start to start over`, { code: 'CONFIG_MISMATCH' });
  }
}

/**
 * @typedef {{ left: string, check(): void, release(): Promise<void>, stop(): void, worker: string, info: string }} Claim
 *   left: a killed coordinator's pass; check: throws once another coordinator took over; stop: the heartbeat takes over
 */

/**
 * A live coordinator gets at most the lease to lapse, else refusal: two would both write OUT. The claim is kept fresh
 * until the frontier's heartbeat starts, since storing a large prior can outlast half the lease.
 * @param {import('./connection.js').CrawlRedis} redis @param {string} prefix @param {RedisFrontier} frontier @param {number} leaseMs
 * @param {string} crawlId @returns {Promise<Claim>}
 */
async function claimCoordinator(redis, prefix, frontier, leaseMs, crawlId) {
  const worker = frontier.worker;
  const info = JSON.stringify({ ...frontier.info, pages: 0 });
  const deadline = Date.now() + leaseMs;
  let left = '';
  for (;;) {
    const [claimed, token, age] = await redis.prCoordClaim(prefix, worker, Math.ceil(leaseMs / 2), info);
    if (Number(claimed) === 1) {
      left = String(token);
      break;
    }
    if (Date.now() >= deadline) {
      throw new FrontierError(`crawl id "${crawlId}" has a live coordinator (${token}, last heartbeat ${age} ms ago): one coordinator per crawl id; help it with "prerender worker --crawl-id ${crawlId}", or stop it first`, { code: 'COORDINATOR_ALIVE' });
    }
    await new Promise((resolve) => { setTimeout(resolve, Math.min(250, Math.max(10, Math.floor(leaseMs / 12)))); });
  }
  let lost = false;
  const timer = setInterval(() => {
    redis.prCoordKeep(prefix, worker, 'keep', info).then((kept) => { if (kept === 0) lost = true; }, () => {}); // a lost Redis shows at the next call
  }, Math.max(50, Math.floor(frontier.settings.leaseMs / 6)));
  timer.unref();
  return {
    left,
    worker,
    info,
    check() {
      if (lost) throw new FrontierError(`another coordinator took crawl id "${crawlId}" over while this one started: one coordinator per crawl id`, { code: 'COORDINATOR_ALIVE' });
    },
    async release() {
      clearInterval(timer);
      await redis.prCoordKeep(prefix, worker, 'release', info).catch(() => {});
    },
    stop() { clearInterval(timer); },
  };
}

/**
 * For the workers' conditional requests. Written before the phase is set, so a kill in between writes it again.
 * @param {import('./connection.js').CrawlRedis} redis @param {string} prefix @param {import('../recrawl/prior.js').Prior | null} prior
 */
async function storePrior(redis, prefix, prior) {
  await redis.unlink(`${prefix}prior`);
  // Other naming than the last run's: the workers fetch every page in full.
  if (!prior?.reuse || prior.renamed) return;
  let batch = redis.pipeline();
  let size = 0;
  // Hashes made with other --ignore patterns are no use: a worker makes them again from the body.
  for (const stored of prior.pages.values()) {
    if (stored.state !== 'done' || !stored.file || !stored.body) continue;
    const { placeholders: _placeholders, compare, ...rest } = stored;
    const kept = prior.sameIgnore ? { ...rest, compare } : rest;
    batch.hset(`${prefix}prior`, stored.url, JSON.stringify(kept));
    if (++size % 1000 === 0) {
      await batch.exec();
      batch = redis.pipeline();
    }
  }
  await batch.exec();
}

/**
 * Every key but this process's claim; refused if the claim is no longer its own, before or after.
 * @param {import('./connection.js').CrawlRedis} redis @param {string} prefix @param {Claim} claim @param {{ keepConfig: boolean }} options
 */
async function clearCrawl(redis, prefix, claim, { keepConfig }) {
  const own = async (/** @type {'keep' | 'reset'} */ mode) => {
    if (await redis.prCoordKeep(prefix, claim.worker, mode, claim.info) === 0) {
      throw new FrontierError('another coordinator took this crawl id over while this one started: one coordinator per crawl id', { code: 'COORDINATOR_ALIVE' });
    }
  };
  claim.check();
  await own('keep');
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const kept = new Set([`${prefix}meta`, `${prefix}workers`, `${prefix}winfo`, ...(keepConfig ? [`${prefix}config`, probeKey(prefix)] : [])]);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    const doomed = keys.filter((key) => !kept.has(key));
    if (doomed.length > 0) await redis.unlink(...doomed);
  } while (cursor !== '0');
  await own('reset');
}

/** The coordinator's side of the coordination seam: Redis holds frontier and records, a shared directory the bodies. @implements {Coordination} */
export class SharedCrawl extends RedisCoordination {
  ownsOut = true;

  /**
   * @param {import('./connection.js').CrawlRedis} redis @param {string} prefix @param {RedisFrontier} frontier
   * @param {DirBlobStore} blobs @param {string} url @param {number} leaseMs
   */
  constructor(redis, prefix, frontier, blobs, url, leaseMs) {
    super(frontier);
    this.redis = redis;
    this.prefix = prefix;
    this.blobs = blobs;
    this.shownUrl = redactUrl(url);
    this.leaseMs = leaseMs;
    /** @type {import('../engine/run.js').CrawlRun | null} once past the completion barrier */ this.run = null;
  }

  /** @param {string[]} roots */
  seeds(roots) {
    return roots;
  }

  /** @param {import('../engine/run.js').CrawlRun} run */
  attach(run) {
    this.frontier.attach(run);
  }

  lastCrawl() {
    return null;
  }

  /**
   * None but this one's threads when no other process is alive, or all share this machine's cores: see BENCHMARKS.md,
   * "Decisions". @param {import('../engine/run.js').CrawlRun} run @param {string} out
   */
  async finishPool(run, out) {
    const { redis, prefix, frontier } = this;
    const helpers = /** @type {string[]} */ (await redis.eval(
      "local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000); return redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[1]), '+inf')",
      1, `${prefix}workers`, this.leaseMs,
    ).catch((error) => { throw redis.toFrontierError(error); })).filter((worker) => worker !== frontier.worker);
    if (helpers.length === 0) return null;
    const infos = await redis.hmget(`${prefix}winfo`, ...helpers).catch((error) => { throw redis.toFrontierError(error); });
    if (!bucketsAddCores(infos, { host: String(frontier.info.host), threads: run.threads.size, cores: availableParallelism() })) return null;
    const blobs = this.blobs;
    return new FinishPool({
      redis, prefix, worker: frontier.worker, leaseMs: this.leaseMs, maxDeliveries: frontier.settings.maxDeliveries, out, blobsDir: blobs.dir, threads: run.threads, readBlobs: (ids) => blobs.get(ids), locate: (id) => blobs.locate(id),
    });
  }

  /** Every process's accepted results as they come. @returns {import('../engine/early.js').Feed} */
  feed() {
    const { redis, prefix } = this;
    const worker = this.frontier.worker;
    return {
      read: async (wantMs, max) => {
        const replies = await /** @type {any} */ (redis.pipeline()).prFeed(prefix, wantMs, worker).lpopBuffer(`${prefix}feed:${worker}`, 3 * Math.max(1, max)).exec();
        for (const [error] of replies ?? []) if (error) throw redis.toFrontierError(error);
        return parseFeed(replies?.[1]?.[1] ?? []);
      },
      stop: async () => { await redis.prFeed(prefix, 0, worker); },
    };
  }

  /** Every process's warnings, redirects and too-deep URLs join the run. @param {import('../engine/run.js').CrawlRun} run @param {{ interrupted: boolean }} state */
  async barrier(run, { interrupted }) {
    this.run = run;
    await this.frontier.flush();
    this.frontier.finishing = true;
    const { redis, prefix } = this;
    try {
      if (!interrupted) await redis.hset(`${prefix}meta`, 'phase', 'finish', 'finishAt', Date.now());
      await dropLeftPass(redis, prefix, this.blobs.dir);
      const warnings = (await redis.hkeys(`${prefix}warn`)).map((text) => JSON.parse(text));
      run.warnings.splice(0, run.warnings.length, ...warnings.sort(byUrlThenText));
      const redirects = (await redis.hvals(`${prefix}redir`)).map((text) => JSON.parse(text));
      run.redirects.splice(0, run.redirects.length, ...redirects.sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0)));
      // A loop whose hops two processes fetched at once went unseen by both.
      if (!interrupted) await failRedirectLoops(run, async (key, referrer) => { await redis.hset(`${prefix}refs`, key, referrer); });
      // Every process's cuts make the run incomplete.
      let tooLong = 0;
      for (const key of await redis.smembers(`${prefix}deep`)) {
        if (key.startsWith(TOO_LONG_MARK)) tooLong++;
        else run.depth.tooDeep.add(key);
      }
      run.depth.tooLong = Math.max(run.depth.tooLong, tooLong);
      run.counts.requisitesNotFetched = Number(await redis.hget(`${prefix}cnt`, 'reqSkipped') ?? 0); // every process's pages
      await this.frontier.refreshCounts();
    } catch (error) {
      throw error instanceof FrontierError ? error : redis.toFrontierError(error);
    }
  }

  /** Final counts for `prerender status`: Redis's counters miss redirect loops and count a 404 or 410 as done. */
  async finished() {
    const finishedAt = Date.now();
    const fields = ['phase', 'finished', 'finishedAt', finishedAt];
    if (this.run) {
      const { errors } = await errorsOf(this.run);
      /** @type {Record<string, number>} */ const codes = {};
      for (const error of errors) {
        const code = error.code ?? (error.status ? `HTTP_${error.status}` : 'ERROR');
        codes[code] = (codes[code] ?? 0) + 1;
      }
      fields.push('final', JSON.stringify({ finishedAt, failed: errors.length, redirects: this.run.redirects.length, errors: codes }));
    }
    await this.redis.hset(`${this.prefix}meta`, ...fields).catch((error) => { throw this.redis.toFrontierError(error); });
  }

  async close() {
    await this.frontier.leave();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/** @param {string} text a heartbeat info */
function hostOf(text) {
  try {
    return JSON.parse(text).host ?? null;
  } catch {
    return null;
  }
}

/** @param {{ url: string, code: string, message: string }} a @param {{ url: string, code: string, message: string }} b */
function byUrlThenText(a, b) {
  for (const field of /** @type {const} */ (['url', 'code', 'message'])) {
    if (a[field] < b[field]) return -1;
    if (a[field] > b[field]) return 1;
  }
  return 0;
}
