// @ts-check
import { Redis } from 'ioredis';
import { FrontierError } from '../errors.js';
import { ADD, BACKOFF, DONE, FEED, HEARTBEAT, PUT, RETRY, TAKE } from './scripts.js';
import { frontierDb, frontierUrlError, redactUrl } from '../options/frontier-url.js';
import { COORD_CLAIM, COORD_KEEP, FIN_COLLECT, FIN_CURRENT, FIN_DONE, FIN_RENEW, FIN_TAKE } from './finish-scripts.js';

/**
 * One connection to the crawl's Redis with the frontier's scripts defined. Without Redis for `--frontier-timeout`
 * seconds every command fails with a FrontierError.
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

export { redactUrl } from '../options/frontier-url.js';

/** What Redis answers to refused credentials, at AUTH or a command sent without them. */
const REFUSED_CREDENTIALS = /WRONGPASS|NOAUTH|invalid username-password pair|invalid password/i;

/** Without waiting for the server to close a socket whose unread replies keep it open. @param {Redis} redis */
function closeNow(redis) {
  if (redis.status === 'end') return; // closed already (a second disconnect would wait for a 'close' long past)
  const stream = /** @type {{ stream?: import('node:net').Socket }} */ (/** @type {unknown} */ (redis)).stream;
  redis.disconnect();
  stream?.destroy();
}

/** Every key of a crawl starts with this: one hash tag, one cluster slot. @param {string} crawlId */
export const keyPrefix = (crawlId) => `prerender:{${crawlId}}:`;

/**
 * While Redis is unreachable or silent, commands wait up to `timeoutSeconds`, then fail. Refused credentials or
 * database fail at once: retrying would not change the answer.
 * @param {string} url @param {{ timeoutSeconds: number, timeoutFlag?: string }} options timeoutFlag: how messages name the bound
 * @returns {Promise<CrawlRedis>}
 */
export async function connectRedis(url, { timeoutSeconds, timeoutFlag = '--frontier-timeout' }) {
  const refusedUrl = frontierUrlError(url);
  if (refusedUrl) throw new FrontierError(refusedUrl, { code: 'FRONTIER_URL' });
  const shown = redactUrl(url);
  const db = frontierDb(url);
  const within = `${timeoutFlag ? `${timeoutFlag} ` : ''}${timeoutSeconds} s`;
  let failingSince = 0;
  /** @type {Error | null} */ let lastError = null;
  /** @type {FrontierError | null} credentials or database refused: every command fails with it */ let fatal = null;
  /** @type {(error: FrontierError) => void} */ let onFatal = () => {};
  const fatalSeen = new Promise((_, reject) => { onFatal = reject; });
  fatalSeen.catch(() => {});
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: null, // commands wait for a reconnection, bounded below
    enableAutoPipelining: true,
    connectTimeout: Math.min(10_000, timeoutSeconds * 1000),
    // A silent connection gets the same bound, never shorter: a big batch's script must not be cut off.
    commandTimeout: timeoutSeconds * 1000,
    disconnectTimeout: 200,
    retryStrategy(times) {
      if (fatal) return null;
      if (times === 1 || failingSince === 0) failingSince = Date.now();
      if (Date.now() - failingSince > timeoutSeconds * 1000) return null; // give up: pending commands fail
      return Math.min(50 * 2 ** Math.min(times, 6), 2000);
    },
  });
  redis.on('error', (error) => {
    lastError = error;
    if (fatal) return;
    const message = String(error?.message ?? error);
    const command = /** @type {any} */ (error)?.command?.name;
    if (REFUSED_CREDENTIALS.test(message)) {
      fatal = new FrontierError(`Redis refused the credentials for ${shown}: ${message.split('\n')[0]}`, { code: 'FRONTIER_AUTH', cause: error });
    } else if (command === 'select') {
      fatal = new FrontierError(`Redis refused database ${db} of ${shown}: ${message.split('\n')[0]}`, { code: 'FRONTIER_DB', cause: error });
    } else {
      return;
    }
    onFatal(fatal);
    closeNow(redis); // no reconnection: pending and later commands fail with `fatal`
  });
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
    if (fatal) return fatal;
    if (error instanceof FrontierError) return error;
    const message = /** @type {Error} */ (error)?.message ?? String(error);
    if (message.includes('LOST')) {
      return new FrontierError(`the crawl's state in Redis at ${shown} is gone (Redis restarted without persistence, or the crawl id was cleared): run the crawl again`, { code: 'FRONTIER_LOST' });
    }
    if (/** @type {Error} */ (error)?.name === 'ReplyError' && REFUSED_CREDENTIALS.test(message)) {
      return new FrontierError(`Redis refused the credentials for ${shown}: ${message.split('\n')[0]}`, { code: 'FRONTIER_AUTH', cause: error });
    }
    if (/** @type {Error} */ (error)?.name === 'ReplyError') {
      return new FrontierError(`the frontier ${shown} answered an error: ${message}`, { code: 'FRONTIER_REPLY', cause: error });
    }
    const cause = /** @type {any} */ (lastError)?.code ?? /** @type {any} */ (error)?.code;
    const gone = new FrontierError(`lost the frontier ${shown} for more than ${within}${cause ? `: ${cause}` : ''}`, { code: 'FRONTIER_UNREACHABLE', cause: error });
    if (/Command timed out/.test(message)) {
      // Redis is lost: closed, so waiting commands fail at once, not one bound each.
      fatal = redis.status !== 'ready' ? gone : new FrontierError(`the frontier ${shown} did not answer for more than ${within} (Redis stopped or hung, or the network cut without closing the connection)`, { code: 'FRONTIER_UNREACHABLE', cause: error });
      closeNow(redis);
      return fatal;
    }
    return gone;
  };
  /** @type {any} */ (redis).toFrontierError = lost;
  try {
    // Ready, or the bound: a first refusal (Redis not up yet) is retried like a later one.
    const ready = new Promise((resolve, reject) => {
      redis.once('ready', resolve);
      redis.once('end', () => reject(lastError ?? new Error('closed'))); // retryStrategy gave up
    });
    ready.catch(() => {}); // once the race is over, a later 'end' is nobody's error
    redis.connect().catch(() => {});
    await Promise.race([
      ready,
      fatalSeen,
      new Promise((_, reject) => { setTimeout(() => reject(new Error('timeout')), timeoutSeconds * 1000).unref(); }),
    ]);
    if (fatal) throw fatal; // a refused SELECT is answered before the connection is ready
  } catch (error) {
    closeNow(redis);
    if (fatal) throw fatal;
    const cause = /** @type {any} */ (lastError)?.code ?? /** @type {any} */ (error)?.code;
    throw new FrontierError(`cannot reach the frontier ${shown}${cause ? ` (${cause})` : ''} within ${within}`, { code: 'FRONTIER_UNREACHABLE', cause: error });
  }
  return /** @type {CrawlRedis} */ (redis);
}
