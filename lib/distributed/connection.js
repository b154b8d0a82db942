// @ts-check
import { Redis } from 'ioredis';
import { FrontierError } from '../errors.js';
import { ADD, BACKOFF, DONE, FEED, HEARTBEAT, PUT, RETRY, TAKE } from './scripts.js';
import { COORD_CLAIM, COORD_KEEP, FIN_COLLECT, FIN_CURRENT, FIN_DONE, FIN_RENEW, FIN_TAKE } from './finish-scripts.js';

/**
 * One connection to the Redis that holds a crawl, with the frontier's
 * scripts defined on it (ioredis sends them with EVALSHA and loads them on
 * NOSCRIPT, as after a Redis restart). When Redis goes away the client
 * retries with backoff, commands wait meanwhile; after `--frontier-timeout`
 * seconds without Redis it gives up and every command fails with a
 * FrontierError (exit 2, one line).
 *
 * @typedef {Redis & {
 *   prAdd(prefix: string, ...args: (string | number)[]): Promise<number[]>,
 *   prTake(prefix: string, ...args: (string | number)[]): Promise<(string | number)[]>,
 *   prTakeBuffer(prefix: string, ...args: (string | number)[]): Promise<(Buffer | number)[]>,
 *   prDone(prefix: string, ...args: (string | number | Buffer)[]): Promise<(string | number)[]>,
 *   prDoneBuffer(prefix: string, ...args: (string | number | Buffer)[]): Promise<(Buffer | number)[]>,
 *   prRetry(prefix: string, ...args: (string | number)[]): Promise<number>,
 *   prFeed(prefix: string, wantMs: number, worker: string): Promise<number>,
 *   prHeartbeat(prefix: string, ...args: (string | number)[]): Promise<number>,
 *   prBackoff(prefix: string, ...args: (string | number)[]): Promise<number>,
 *   prPut(prefix: string, key: string, value: Buffer): Promise<number>,
 *   prFinTake(prefix: string, worker: string, leaseMs: number, maxDeliveries: number): Promise<string[]>,
 *   prFinRenew(prefix: string, token: string, bucket: string, lease: string, leaseMs: number): Promise<number>,
 *   prFinDone(prefix: string, token: string, bucket: string, lease: string, answers: string): Promise<number>,
 *   prFinCollect(prefix: string, token: string, max: number): Promise<string[]>,
 *   prFinCurrent(prefix: string, token: string, leaseMs: number): Promise<number>,
 *   prCoordClaim(prefix: string, worker: string, staleMs: number, info: string): Promise<(string | number)[]>,
 *   prCoordKeep(prefix: string, worker: string, mode: 'keep' | 'reset' | 'release', info: string): Promise<number>,
 *   toFrontierError(error: unknown): FrontierError,
 * }} CrawlRedis
 */

/**
 * The Redis URL with its password replaced: what messages may show.
 * @param {string} url
 */
export function redactUrl(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.href.replace(/\/$/, '');
  } catch {
    return 'the Redis URL';
  }
}

/**
 * Every key of a crawl starts with this: one hash tag, one cluster slot.
 * @param {string} crawlId
 */
export const keyPrefix = (crawlId) => `prerender:{${crawlId}}:`;

/**
 * @param {string} url redis:// or rediss:// URL
 * @param {{ timeoutSeconds: number }} options
 * @returns {Promise<CrawlRedis>}
 */
export async function connectRedis(url, { timeoutSeconds }) {
  const shown = redactUrl(url);
  let failingSince = 0;
  /** @type {Error | null} */
  let lastError = null;
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: null, // commands wait for a reconnection, bounded below
    enableAutoPipelining: true,
    connectTimeout: Math.min(10_000, timeoutSeconds * 1000),
    retryStrategy(times) {
      if (times === 1 || failingSince === 0) failingSince = Date.now();
      if (Date.now() - failingSince > timeoutSeconds * 1000) return null; // give up: pending commands fail
      return Math.min(50 * 2 ** Math.min(times, 6), 2000);
    },
  });
  redis.on('error', (error) => { lastError = error; });
  redis.on('ready', () => { failingSince = 0; });
  redis.defineCommand('prAdd', { numberOfKeys: 1, lua: ADD });
  redis.defineCommand('prTake', { numberOfKeys: 1, lua: TAKE });
  redis.defineCommand('prDone', { numberOfKeys: 1, lua: DONE });
  redis.defineCommand('prRetry', { numberOfKeys: 1, lua: RETRY });
  redis.defineCommand('prFeed', { numberOfKeys: 1, lua: FEED });
  redis.defineCommand('prHeartbeat', { numberOfKeys: 1, lua: HEARTBEAT });
  redis.defineCommand('prBackoff', { numberOfKeys: 1, lua: BACKOFF });
  redis.defineCommand('prPut', { numberOfKeys: 1, lua: PUT });
  redis.defineCommand('prFinTake', { numberOfKeys: 1, lua: FIN_TAKE });
  redis.defineCommand('prFinDone', { numberOfKeys: 1, lua: FIN_DONE });
  redis.defineCommand('prFinRenew', { numberOfKeys: 1, lua: FIN_RENEW });
  redis.defineCommand('prFinCollect', { numberOfKeys: 1, lua: FIN_COLLECT });
  redis.defineCommand('prFinCurrent', { numberOfKeys: 1, lua: FIN_CURRENT });
  redis.defineCommand('prCoordClaim', { numberOfKeys: 1, lua: COORD_CLAIM });
  redis.defineCommand('prCoordKeep', { numberOfKeys: 1, lua: COORD_KEEP });
  /** @param {unknown} error */
  const lost = (error) => {
    const message = /** @type {Error} */ (error)?.message ?? String(error);
    if (message.includes('LOST')) {
      return new FrontierError(`the crawl's state in Redis at ${shown} is gone (Redis restarted without persistence, or the crawl id was cleared): run the crawl again`, { code: 'FRONTIER_LOST' });
    }
    if (/** @type {Error} */ (error)?.name === 'ReplyError') {
      return new FrontierError(`the frontier ${shown} answered an error: ${message}`, { code: 'FRONTIER_REPLY', cause: error });
    }
    const cause = /** @type {any} */ (lastError)?.code ?? /** @type {any} */ (error)?.code;
    return new FrontierError(`lost the frontier ${shown} for more than ${timeoutSeconds} s (--frontier-timeout)${cause ? `: ${cause}` : ''}`, { code: 'FRONTIER_UNREACHABLE', cause: error });
  };
  /** @type {any} */ (redis).toFrontierError = lost;
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) => { setTimeout(() => reject(new Error('timeout')), timeoutSeconds * 1000).unref(); }),
    ]);
  } catch (error) {
    redis.disconnect();
    const cause = /** @type {any} */ (lastError)?.code ?? /** @type {any} */ (error)?.code;
    throw new FrontierError(`cannot reach the frontier ${shown}${cause ? ` (${cause})` : ''} within --frontier-timeout ${timeoutSeconds} s`, { code: 'FRONTIER_UNREACHABLE', cause: error });
  }
  return /** @type {CrawlRedis} */ (redis);
}
