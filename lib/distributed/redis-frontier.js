// @ts-check
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { newRecord } from '../store/records.js';
import { ownString } from '../store/frontier.js';
import { decodeStored, packRecord, storedValue } from './packed.js';
import { feedLinks } from './feed-format.js';
import { RedisRecordStore } from './redis-records.js';
import { FrontierError } from '../errors.js';

/** Too-deep set marker for a link past --max-url-length, kept by hash (a control character: never a URL). */
export const TOO_LONG_MARK = '\u0001too-long:';

/**
 * The frontier shared across processes in Redis, one per process, holding its leases. `done()` records a result and
 * releases the lease in one script, only if the lease is still this one: a late result is ignored.
 * @typedef {import('../store/frontier.js').FrontierItem} FrontierItem @typedef {import('../store/frontier.js').AddOutcome} AddOutcome
 * @typedef {import('../store/records.js').PageRecord} PageRecord @typedef {import('../store/frontier.js').Frontier} Frontier
 * @typedef {{ maxPages: number, leaseMs: number, originConcurrency: number, intervalMs: number, maxDeliveries: number }} FrontierSettings
 *   intervalMs: least time between two URLs of one origin taken, 0 for none
 */

const ADD_OUTCOMES = /** @type {AddOutcome[]} */ (['known', 'added', 'limit', 'known', 'known']);
/** URLs remembered as settled (ADD's codes 3 and 4). */
const SETTLED_MAX = 500_000;
const ADD_CHUNK = 1000;

/** @param {string} key a canonical URL */
export function originOf(key) {
  const pathStart = key.indexOf('/', key.indexOf('//') + 2);
  return pathStart < 0 ? key : key.slice(0, pathStart);
}

/** @param {PageRecord} record */
export const encodeRecord = storedValue;

/** @param {Buffer} value @param {string} key @returns {PageRecord} */
export const decodeRecord = decodeStored;

/** A process whose heartbeat is older is dead: its leases go to others. @param {number} leaseMs the crawl's --lease-timeout */
export const deadAfterMs = (leaseMs) => Math.max(200, Math.floor(leaseMs / 2));

/** @implements {Frontier} */
export class RedisFrontier {
  /** @type {Map<string, string>} key -> lease token, for the pages this process works on */ #leases = new Map();
  /** @type {Map<string, PageRecord>} */ #working = new Map();
  #counts = { queued: 1, leased: 0, over: 0, mine: 0, phase: 'seeding', saturated: false };
  #idleMs = 10;
  /** @type {string[]} leased with the last result (DONE takes the next URL), not handed out yet */ #ready = [];
  /**
   * A lapsed lease back to this process mid-visit: links may have been refused under the old lease, so the URL is
   * visited again under the new one. @type {Map<string, { token: string, record: PageRecord, prior: string }>}
   */
  #again = new Map();
  #prefetch = true;
  /** Each DONE reply says. */
  #feeding = false;
  /** URLs adding again changes nothing, so most links (menus, related products) are not sent again. @type {Map<string, 'all' | 'requisite'>} */
  #settled = new Map();
  /** @type {ReturnType<typeof setInterval> | null} */ #heartbeat = null;
  /** @type {Error | null} */ #heartbeatError = null;
  /** @type {{ warnings: { url: string, code: string, message: string }[], redirects: { url: string }[], tooDeep: Set<string> } | null} */ #run = null;
  /** @type {string[]} */ #deep = [];
  /** @type {{ pages: Map<string, import('../recrawl/state.js').StoredPage> } | null} a worker's last crawl, filled as pages are taken */ #prior = null;

  /**
   * @param {import('./connection.js').CrawlRedis} redis @param {string} prefix @param {FrontierSettings} settings
   * @param {{ seeder?: boolean, coordinator?: boolean, info?: Record<string, unknown> }} [options] coordinator: stopped once another took over
   */
  constructor(redis, prefix, settings, { seeder = false, coordinator = false, info = {} } = {}) {
    this.redis = redis;
    this.prefix = prefix;
    this.settings = settings;
    this.seeder = seeder;
    this.coordinator = coordinator;
    this.info = { host: hostname(), pid: process.pid, startedAt: Date.now(), ...info };
    this.worker = `${this.info.host}:${process.pid}:${randomBytes(3).toString('hex')}`;
    /** Results refused: the lease had passed to another worker. */
    this.lateResults = 0;
    this.records = new RedisRecordStore(this);
  }

  /** @template T @param {() => Promise<T>} call @returns {Promise<T>} */
  async #call(call) {
    if (this.#heartbeatError) throw this.#heartbeatError;
    try {
      return await call();
    } catch (error) {
      throw this.redis.toFrontierError(error);
    }
  }

  /** The heartbeat says the worker is alive and extends its leases. */
  start() {
    const beat = () => {
      const args = [];
      for (const [key, token] of this.#leases) args.push(key, token);
      for (const [key, { token }] of this.#again) args.push(key, token);
      this.redis.prHeartbeat(this.prefix, this.worker, this.settings.leaseMs, JSON.stringify({ ...this.info, pages: this.pagesDone }), this.coordinator ? 'c' : 'w', ...args)
        .then((alive) => {
          if (alive === 0) this.#heartbeatError = this.redis.toFrontierError(new Error('LOST'));
          if (alive === 2) {
            this.#heartbeatError ??= new FrontierError('this coordinator stalled past --lease-timeout and another one took the crawl over: this one stops (its results so far are kept in Redis)', { code: 'COORDINATOR_REPLACED' });
          }
        }, (error) => { this.#heartbeatError = this.redis.toFrontierError(error); });
    };
    beat();
    this.#heartbeat = setInterval(beat, Math.max(50, Math.floor(this.settings.leaseMs / 6)));
    this.#heartbeat.unref();
  }

  pagesDone = 0;
  /** Past the completion barrier. */
  finishing = false;

  /**
   * The run's warnings, redirects and too-deep URLs go to Redis with the next result. A worker's `run.prior` holds the
   * pages it has taken.
   * @param {{ warnings: any[], redirects: any[], depth: { tooDeep: Set<string>, noteTooLong?: (key: string) => void }, prior: import('../recrawl/prior.js').Prior | null }} run
   * @param {{ lazyPrior?: boolean }} [options]
   */
  attach(run, { lazyPrior = false } = {}) {
    if (lazyPrior) this.#prior = /** @type {{ pages: Map<string, import('../recrawl/state.js').StoredPage> } | null} */ (run.prior);
    const deep = this.#deep;
    const tooDeep = run.depth.tooDeep;
    const add = tooDeep.add.bind(tooDeep);
    tooDeep.add = (key) => {
      if (!tooDeep.has(key)) deep.push(key);
      return add(key);
    };
    // A link past --max-url-length goes as a marker and a hash (the URL may be megabytes).
    run.depth.noteTooLong = (key) => { deep.push(TOO_LONG_MARK + createHash('sha1').update(key).digest('hex')); };
    this.#run = { warnings: run.warnings, redirects: run.redirects, tooDeep };
  }

  /** @param {FrontierItem[]} items */
  async add(items) {
    /** @type {AddOutcome[]} */ const outcomes = new Array(items.length).fill('known');
    /** @type {number[]} the items sent to Redis */ const sent = [];
    for (let i = 0; i < items.length; i++) {
      const settled = this.#settled.get(items[i].key);
      if (settled !== 'all' && !(settled === 'requisite' && items[i].kind === 'requisite')) sent.push(i);
    }
    for (let start = 0; start < sent.length;) {
      // One call per referrer (a page's links share it), at most ADD_CHUNK items.
      const from = items[sent[start]].referrer;
      let end = start + 1;
      while (end < sent.length && end - start < ADD_CHUNK && items[sent[end]].referrer === from) end++;
      const token = from ? this.#leases.get(from) : undefined;
      const args = [this.settings.maxPages, token ? /** @type {string} */ (from) : '', token ?? '', this.seeder ? '1' : '0', from ?? ''];
      for (let j = start; j < end; j++) args.push((items[sent[j]].kind === 'navigation' ? 'n' : 'r') + items[sent[j]].key);
      const codes = await this.#call(() => this.redis.prAdd(this.prefix, ...args));
      codes.forEach((code, j) => {
        const item = items[sent[start + j]];
        outcomes[sent[start + j]] = ADD_OUTCOMES[code];
        if (code === 3 || code === 4) {
          if (this.#settled.size >= SETTLED_MAX) this.#settled.clear();
          this.#settled.set(ownString(item.key), code === 3 ? 'all' : 'requisite'); // not a slice of its page's links text
        }
      });
      start = end;
    }
    return outcomes;
  }

  /** @param {number} max */
  async take(max) {
    if (this.#ready.length > 0) return this.#ready.splice(0, max);
    const reply = await this.#call(() => this.redis.prTakeBuffer(this.prefix, ...this.#takeArgs(max)));
    return this.#taken(reply, 0);
  }

  /** @param {number} max */
  #takeArgs(max) {
    const s = this.settings;
    return [this.worker, max, s.leaseMs, deadAfterMs(s.leaseMs), s.originConcurrency, s.intervalMs, s.maxDeliveries, this.seeder ? '1' : '0'];
  }

  /** @param {(Buffer | number)[]} reply records as packed bytes @param {number} at where take_some's reply starts */
  #taken(reply, at) {
    const [queued, leased, over, mine, phase] = reply.slice(at, at + 5);
    this.#counts = { queued: Number(queued), leased: Number(leased), over: Number(over), mine: Number(mine), phase: String(phase), saturated: false };
    /** @type {string[]} */ const keys = [];
    for (let i = at + 5; i < reply.length; i += 4) {
      const key = String(reply[i]);
      const raw = /** @type {Buffer} */ (reply[i + 2]);
      const record = raw.length > 0 ? decodeStored(raw, key) : newRecord(key, 'navigation', null);
      const prior = String(reply[i + 3]);
      if (this.#leases.has(key)) {
        // Our own lapsed lease came back mid-visit: visited again once this visit ends.
        this.#again.set(key, { token: String(reply[i + 1]), record, prior });
        continue;
      }
      this.#leases.set(key, String(reply[i + 1]));
      this.#working.set(key, record);
      if (prior && this.#prior) this.#prior.pages.set(key, JSON.parse(prior));
      keys.push(key);
    }
    if (keys.length > 0) this.#idleMs = 10;
    return keys;
  }

  /** Others hold leases, or politeness waits: longer each time. */
  idle() {
    const ms = this.#idleMs;
    this.#idleMs = Math.min(ms * 2, 200);
    return new Promise((resolve) => { setTimeout(resolve, ms); });
  }

  /** The coordinator reads the feed: a page's links go with its result. */
  wantsLinks() {
    return this.#feeding;
  }

  /** @param {string} key @param {{ page: boolean, requisitesSkipped?: number, linksTo?: import('../engine/early.js').LinksTo }} outcome @returns {Promise<FrontierItem[]>} */
  async done(key, { page, requisitesSkipped = 0, linksTo }) {
    const token = this.#leases.get(key);
    const record = this.#working.get(key);
    const side = this.#sideData();
    if (token === undefined) {
      if (side.length > 4) await this.#call(() => this.redis.prDone(this.prefix, '', '', '', 'x', '', '', 0, ...side, this.worker, 0));
      return [];
    }
    if (linksTo && this.#feeding) side[3] = feedLinks(linksTo);
    const code = record?.state === 'failed' ? (record.error?.code ?? (record.error?.status ? `HTTP_${record.error.status}` : 'ERROR')) : '';
    // The result, and the next URL taken in the same call (the slot this page frees).
    const take = this.#prefetch && this.#ready.length === 0 ? this.#takeArgs(1) : [this.worker, 0];
    const packed = record ? packRecord(record) : '';
    // Over before its result is sent: a reply handing the URL back meanwhile is a new lease, never this visit's.
    this.#endVisit(key);
    const reply = await this.#call(() => this.redis.prDoneBuffer(this.prefix, packed, key, token, page ? 'd' : 'x', record?.state ?? 'done', code, requisitesSkipped, ...side, ...take));
    this.#feeding = Number(reply[2]) === 1;
    if (reply.length > 3) this.#ready.push(...this.#taken(reply, 3));
    if (Number(reply[0]) !== 1) {
      this.lateResults++;
      return [];
    }
    if (page) this.pagesDone++;
    if (String(reply[1]) !== '') {
      const item = JSON.parse(String(reply[1]));
      return [{ key: item.key, kind: item.kind, referrer: item.referrer || null }];
    }
    return [];
  }

  /** As DONE's arguments. */
  #sideData() {
    const run = this.#run;
    if (!run) return ['0', '0', '0', ''];
    // Sent with this result and forgotten here: the coordinator gathers them from Redis at the barrier.
    const warnings = run.warnings.splice(0).map((warning) => JSON.stringify({ url: warning.url, code: warning.code, message: warning.message }));
    const redirects = run.redirects.splice(0).flatMap((redirect) => [redirect.url, JSON.stringify(redirect)]);
    const deep = this.#deep.splice(0);
    return [String(warnings.length), String(redirects.length / 2), String(deep.length), '', ...warnings, ...redirects, ...deep];
  }

  /** The side data left, such as sitemap warnings. */
  async flush() {
    const side = this.#sideData();
    if (side.length > 4) await this.#call(() => this.redis.prDone(this.prefix, '', '', '', 'x', '', '', 0, ...side, this.worker, 0));
  }

  /** Its whole origin waits as long in every process; a lost Redis shows at the next call. @param {{ url: string, delayMs: number, error: Error }} retry */
  backoff({ url, delayMs, error }) {
    const status = /** @type {{ status?: number }} */ (error).status;
    if (status !== 429 && status !== 503) return;
    this.backoffs++;
    this.redis.prBackoff(this.prefix, originOf(url), Math.max(0, Math.round(delayMs))).catch(() => {});
  }

  backoffs = 0;

  /** A lease of its URL that came back meanwhile becomes a visit. @param {string} key */
  #endVisit(key) {
    this.#leases.delete(key);
    this.#working.delete(key);
    this.#prior?.pages.delete(key);
    const again = this.#again.get(key);
    if (!again) return;
    this.#again.delete(key);
    this.#leases.set(key, again.token);
    this.#working.set(key, again.record);
    if (again.prior && this.#prior) this.#prior.pages.set(key, JSON.parse(again.prior));
    this.#ready.push(key);
  }

  /** @param {string} key */
  async retry(key) {
    const token = this.#leases.get(key);
    this.#endVisit(key);
    if (token !== undefined) await this.#call(() => this.redis.prRetry(this.prefix, key, token));
  }

  counts() {
    const c = this.#counts;
    // This process must not stop while another may add URLs. Of our leases, only those worked on count.
    const own = Math.min(c.mine, this.#leases.size + this.#again.size);
    const pending = (c.phase === 'seeding' || c.phase === 'none' ? 1 : c.phase === 'crawl' ? c.queued + Math.max(0, c.leased - own) : 0) + this.#ready.length;
    return { queued: pending, inFlight: c.mine, known: 0, overLimit: c.over, overLimitSaturated: c.saturated };
  }

  /** Fresh from Redis, after the barrier. */
  async refreshCounts() {
    const c = await this.#call(() => this.redis.hmget(`${this.prefix}cnt`, 'queued', 'leased', 'over', 'overSaturated'));
    this.#counts = { ...this.#counts, queued: Number(c[0] ?? 0), leased: Number(c[1] ?? 0), over: Number(c[2] ?? 0), saturated: c[3] === '1' };
  }

  /** This worker's leases are left to expire. */
  async stop() {
    this.#prefetch = false;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
  }

  /** Its leases are reclaimed now. */
  async leave() {
    await this.stop();
    // URLs taken and never handed out go back; one failed call ends it, so a lost Redis holds nothing up.
    for (const key of this.#ready.splice(0)) {
      try {
        await this.retry(key);
      } catch {
        break;
      }
    }
    await this.redis.multi().zadd(`${this.prefix}workers`, 0, this.worker).exec().catch(() => {});
  }

  /** @param {string} key */
  leased(key) {
    return this.#working.get(key);
  }
}
