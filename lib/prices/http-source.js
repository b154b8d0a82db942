// @ts-check
/**
 * Prices from an HTTP endpoint, one SKU per request or batched (`{skus}`, a JSON object by SKU); 404, 204 or an empty price
 * mean "no price". Identical lookups share a request; a lookup that cannot be sent within `queueMs` is a local overload,
 * never an endpoint error; `timeoutMs` runs from the send. Stale prices are served `staleMs` while one refresh runs.
 */
import { EventEmitter } from 'node:events';
import { Agent, request } from 'undici';
import { TimeoutError, HttpStatusError, FetchError } from '../errors.js';
import { InvalidPriceAnswerError, readBatchAnswer, readSingleAnswer } from './answer.js';
import { Breaker } from './breaker.js';
import { TtlCache } from './lru.js';
import { DEFAULT_MAX_PRICE_LENGTH } from './table.js';

/** @typedef {{ warn(message: string): void, info?(message: string): void }} Logger */

export const HTTP_SOURCE_DEFAULTS = Object.freeze({
  /** From the moment the request is sent. */
  timeoutMs: 300,
  /** Longest wait for a free connection; beyond it, local overload. */
  queueMs: 3000,
  /** Lookups waiting for a connection; more is a local overload. */
  maxQueued: 20_000,
  ttlMs: 60_000,
  /** Served past its TTL while refreshed. */
  staleMs: 60_000,
  negativeTtlMs: 5_000,
  cacheSize: 50_000,
  connections: 64,
  /** SKUs per request with {skus}. */
  batchSize: 100,
  maxUrlLength: 2000,
  breakerThreshold: 5,
  breakerCooldownMs: 5_000,
  maxBodyBytes: 64 * 1024,
});

/** Validates a URL template; returns a message for a UsageError, or null. @param {string} template */
export function checkUrlTemplate(template) {
  const single = template.includes('{sku}');
  const batch = template.includes('{skus}');
  if (!single && !batch) return `price URL template ${template} has no {sku} (or {skus}); write e.g. http://shop/price.asp?sku={sku}&zip={zip}`;
  if (single && batch) return `price URL template ${template} has both {sku} and {skus}: use one`;
  let url;
  try {
    url = new URL(template.replaceAll('{skus}', 'x').replaceAll('{sku}', 'x').replaceAll('{zip}', 'x'));
  } catch {
    return `price URL template ${template} is not a valid URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `price URL template ${template} must be http: or https:`;
  return null;
}

/** @typedef {{ sku: string, key: string, resolve: (price: string | null) => void }} Item @typedef {{ zip: string, items: Item[], urlLength: number, timer: NodeJS.Timeout | null, sent: boolean }} Job */

export class HttpPriceSource extends EventEmitter {
  #template;
  #usesZip;
  #batch;
  #options;
  /** @type {TtlCache<string | null>} */ #cache;
  /** By cache key: identical lookups share one. @type {Map<string, Promise<string | null>>} */
  #inflight = new Map();
  /** Oldest first. @type {Job[]} */
  #queue = [];
  /** Still open for more SKUs, by zip. @type {Map<string, Job>} */
  #open = new Map();
  #active = 0;
  /** Lookups in jobs not sent yet. */
  #queued = 0;
  #pumpScheduled = false;
  /** Oldest first (see the end of #send). @type {Map<Job, number>} */
  #sentAt = new Map();
  #agent;
  #breaker;
  #lastWarn = -Infinity;
  #suppressed = 0;
  #closed = false;
  /** @type {Promise<void> | null} */ #closing = null;
  /** Refreshes of stale answers, bounded by `connections`. */
  #refreshing = 0;
  /** Of the answer time from the send, ms; 0 before the first answer. */
  #answerMs = 0;
  stats = { requests: 0, hits: 0, stale: 0, coalesced: 0, failures: 0, timeouts: 0, invalid: 0, overloaded: 0, shortCircuited: 0, maxQueueMs: 0 };

  /** @param {string} template @param {Partial<typeof HTTP_SOURCE_DEFAULTS> & { maxPriceLength?: number, logger?: Logger, now?: () => number }} [options] */
  constructor(template, options = {}) {
    super();
    const problem = checkUrlTemplate(template);
    if (problem) throw new TypeError(problem);
    this.#template = template;
    this.#usesZip = template.includes('{zip}');
    this.#batch = template.includes('{skus}');
    /** @type {typeof HTTP_SOURCE_DEFAULTS & { maxPriceLength: number, logger?: Logger, now: () => number }} */
    this.#options = { ...HTTP_SOURCE_DEFAULTS, maxPriceLength: DEFAULT_MAX_PRICE_LENGTH, now: Date.now, ...options };
    for (const [k, v] of Object.entries(options)) if (v === undefined) /** @type {any} */ (this.#options)[k] = /** @type {any} */ (HTTP_SOURCE_DEFAULTS)[k];
    this.#cache = new TtlCache({ max: this.#options.cacheSize, now: this.#options.now });
    this.#agent = new Agent({
      connections: this.#options.connections,
      keepAliveTimeout: 10_000,
      // Backstops only: the timeout that counts is ours, in #fetch.
      headersTimeout: 2 * this.#options.timeoutMs + 1000,
      bodyTimeout: 2 * this.#options.timeoutMs + 1000,
      connect: { timeout: 2 * this.#options.timeoutMs + 1000 },
    });
    this.#breaker = new Breaker({
      threshold: this.#options.breakerThreshold,
      cooldownMs: this.#options.breakerCooldownMs,
      now: this.#options.now,
      logger: this.#options.logger,
      name: safeUrl(this.#template.replace(/[?#].*$/, '')),
      onChange: (state) => {
        this.emit('breaker', state);
        // Open: what waits for a connection gets its answer now, not after the queue bound.
        if (state === 'open') this.#pump();
      },
    });
  }

  get description() {
    return `HTTP endpoint ${safeUrl(this.#template)}`;
  }

  get breakerState() {
    return this.#breaker.state;
  }

  /** @param {string} sku @param {string | null} zip normalised @returns {string | null | Promise<string | null>} */
  lookup(sku, zip) {
    const zipPart = this.#usesZip ? zip ?? '' : '';
    const key = zipPart === '' ? sku : `${sku}\u0000${zipPart}`;
    const hit = this.#cache.get(key);
    if (hit) {
      if (!hit.stale) {
        this.stats.hits++;
        return hit.value;
      }
      this.stats.stale++;
      // Refresh in the background, never more at once than there are connections.
      if (!this.#inflight.has(key) && this.#refreshing < this.#options.connections && !this.#closed) {
        this.#refreshing++;
        void this.#enqueue(key, sku, zipPart).finally(() => this.#refreshing--);
      }
      return hit.value;
    }
    const pending = this.#inflight.get(key);
    if (pending) {
      this.stats.coalesced++;
      return pending;
    }
    if (this.#closed) return null;
    if (this.#queued >= this.#options.maxQueued || this.#hopeless(zipPart)) {
      this.stats.overloaded++;
      return null;
    }
    // Breaker open: no price, at once (a half-open breaker lets the probe through in #pump).
    if (this.#breaker.blocked()) {
      this.stats.shortCircuited++;
      return null;
    }
    return this.#enqueue(key, sku, zipPart);
  }

  /** At the measured pace; false before the first answer and when joining an open batch. @param {string} zip */
  #hopeless(zip) {
    if (this.#answerMs === 0 || this.#active < this.#options.connections) return false;
    if (this.#batch) {
      const open = this.#open.get(zip);
      if (open && !open.sent && open.items.length < this.#options.batchSize) return false;
    }
    const rounds = Math.floor(this.#queue.length / this.#options.connections) + 1;
    return rounds * this.#answerMs > this.#options.queueMs;
  }

  /** @param {string} key @param {string} sku @param {string} zip @returns {Promise<string | null>} */
  #enqueue(key, sku, zip) {
    /** @type {(price: string | null) => void} */ let resolve = () => {};
    /** @type {Promise<string | null>} */ const promise = new Promise((r) => {
      resolve = r;
    });
    const item = { sku, key, resolve };
    const skuLength = encodeURIComponent(sku).length + 1;
    let job = this.#batch ? this.#open.get(zip) : undefined;
    if (job && (job.sent || job.items.length >= this.#options.batchSize || job.urlLength + skuLength > this.#options.maxUrlLength)) {
      this.#open.delete(zip);
      job = undefined;
    }
    if (!job) {
      job = { zip, items: [], urlLength: this.#template.length + encodeURIComponent(zip).length, timer: null, sent: false };
      const created = job;
      created.timer = setTimeout(() => this.#overloaded(created), this.#options.queueMs);
      created.timer.unref?.();
      this.#queue.push(job);
      if (this.#batch) this.#open.set(zip, job);
    }
    job.items.push(item);
    job.urlLength += skuLength;
    this.#queued++;
    this.#inflight.set(key, promise);
    promise.then(() => {
      if (this.#inflight.get(key) === promise) this.#inflight.delete(key);
    });
    // This event-loop turn's lookups join the batch before it goes.
    if (!this.#batch) this.#pump();
    else if (!this.#pumpScheduled) {
      this.#pumpScheduled = true;
      setImmediate(() => {
        this.#pumpScheduled = false;
        this.#pump();
      });
    }
    return promise;
  }

  #pump() {
    while (this.#queue.length > 0 && (this.#active < this.#options.connections || this.#breaker.blocked())) {
      const allowed = this.#closed ? 'no' : this.#breaker.allow();
      if (allowed === 'no') {
        // Open breaker (or the probe is out): everything queued gets no price now.
        const job = /** @type {Job} */ (this.#queue.shift());
        this.#settleUnsent(job);
        this.stats.shortCircuited += job.items.length;
        continue;
      }
      if (this.#active >= this.#options.connections) {
        if (allowed === 'probe') this.#breaker.release();
        break;
      }
      const job = /** @type {Job} */ (this.#queue.shift());
      void this.#send(job, allowed === 'probe');
    }
  }

  /** @param {Job} job */
  #overloaded(job) {
    const at = this.#queue.indexOf(job);
    if (at === -1) return;
    this.#queue.splice(at, 1);
    this.stats.overloaded += job.items.length;
    this.#settleUnsent(job);
    this.#warn(`${job.items.length} lookup(s) waited more than ${this.#options.queueMs} ms for one of the ${this.#options.connections} connections (local overload, not an endpoint error)`);
  }

  /** A job that never went: its lookups get a stale price or none (nothing cached). @param {Job} job */
  #settleUnsent(job) {
    if (job.timer) clearTimeout(job.timer);
    job.sent = true;
    this.#queued -= job.items.length;
    if (this.#open.get(job.zip) === job) this.#open.delete(job.zip);
    for (const item of job.items) item.resolve(this.#cache.get(item.key)?.value ?? null);
  }

  /** @param {Job} job @param {boolean} probe */
  async #send(job, probe) {
    if (job.timer) clearTimeout(job.timer);
    job.sent = true;
    this.#queued -= job.items.length;
    if (this.#open.get(job.zip) === job) this.#open.delete(job.zip);
    this.#active++;
    const url = this.#url(job);
    const sentAt = this.#options.now();
    this.#sentAt.set(job, sentAt);
    /** @type {Map<string, string | null | Error>} */ let results;
    /** @type {unknown} */ let jobError = null;
    try {
      results = await this.#fetch(url, job.items.map((i) => i.sku));
      const took = Math.max(1, this.#options.now() - sentAt);
      this.#answerMs = this.#answerMs === 0 ? took : 0.9 * this.#answerMs + 0.1 * took;
      this.#breaker.success();
    } catch (error) {
      jobError = error;
      const endpointError = !(error instanceof InvalidPriceAnswerError);
      if (endpointError) {
        this.stats.failures++;
        if (error instanceof TimeoutError) this.stats.timeouts++;
        this.#breaker.failure(error instanceof Error ? error.message : String(error));
      } else {
        this.stats.invalid++;
        this.#breaker.success(); // it answered: not down, just not a price
      }
      this.#warn(`${safeUrl(url)} failed: ${error instanceof Error ? error.message : String(error)}; serving the fallback`);
      this.emit('lookup-error', error);
      results = new Map(job.items.map((i) => [i.sku, /** @type {Error} */ (error)]));
    } finally {
      this.#active--;
      this.#sentAt.delete(job);
      if (probe) this.#breaker.release();
    }
    for (const item of job.items) {
      const value = results.get(item.sku) ?? null;
      if (value instanceof Error) {
        // Keep a stale price if there is one; otherwise remember the failure briefly.
        const kept = this.#cache.get(item.key);
        if (!kept && this.#options.negativeTtlMs > 0) this.#cache.set(item.key, null, this.#options.negativeTtlMs);
        if (value !== jobError) this.stats.invalid++; // one SKU of a batch
        item.resolve(kept?.value ?? null);
      } else if (value === null) {
        if (this.#options.negativeTtlMs > 0) this.#cache.set(item.key, null, this.#options.negativeTtlMs);
        item.resolve(null);
      } else {
        // Spread expiries so answers cached together are not refreshed together.
        const ttl = this.#options.ttlMs * (0.8 + 0.2 * Math.random());
        this.#cache.set(item.key, value, ttl, this.#options.staleMs + this.#options.ttlMs - ttl);
        item.resolve(value);
      }
    }
    // A hanging endpoint times a burst out together: nothing new goes until those settle,
    // so lookups queued meanwhile get the fallback (breaker open), not another timeout.
    const oldest = this.#sentAt.values().next().value;
    if (!(jobError instanceof TimeoutError && oldest !== undefined && oldest <= sentAt + this.#options.timeoutMs / 2)) this.#pump();
  }

  /** @param {Job} job */
  #url(job) {
    const zip = encodeURIComponent(job.zip);
    if (this.#batch) return this.#template.replaceAll('{skus}', job.items.map((i) => encodeURIComponent(i.sku)).join(',')).replaceAll('{zip}', zip);
    return this.#template.replaceAll('{sku}', encodeURIComponent(job.items[0].sku)).replaceAll('{zip}', zip);
  }

  /** Throws endpoint errors and InvalidPriceAnswerError. @param {string} url @param {string[]} skus @returns {Promise<Map<string, string | null | Error>>} */
  async #fetch(url, skus) {
    this.stats.requests++;
    const controller = new AbortController();
    let done = false;
    // The answer may wait unread in the socket (timers run before I/O): look again
    // after the I/O phase, so our own lag is not blamed on the endpoint.
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (!done) controller.abort(new TimeoutError(`no answer within ${this.#options.timeoutMs} ms`));
      });
    }, this.#options.timeoutMs);
    try {
      let response;
      try {
        response = await request(url, {
          dispatcher: this.#agent,
          signal: controller.signal,
          headers: { accept: 'application/json, text/plain;q=0.9' },
        });
      } catch (error) {
        throw wrapNetworkError(error, controller.signal);
      }
      const { statusCode, headers, body } = response;
      if (statusCode === 404 || statusCode === 204) {
        await body.dump().catch(() => {});
        return new Map(skus.map((s) => [s, null]));
      }
      if (statusCode >= 500) {
        await body.dump().catch(() => {});
        throw new HttpStatusError(statusCode);
      }
      if (statusCode !== 200) {
        await body.dump().catch(() => {});
        throw new InvalidPriceAnswerError(`HTTP ${statusCode}`);
      }
      /** @type {Buffer[]} */ const chunks = [];
      let bytes = 0;
      try {
        for await (const chunk of body) {
          bytes += chunk.length;
          if (bytes > this.#options.maxBodyBytes) {
            body.destroy();
            throw new InvalidPriceAnswerError(`answer larger than ${this.#options.maxBodyBytes} bytes`);
          }
          chunks.push(chunk);
        }
      } catch (error) {
        if (error instanceof InvalidPriceAnswerError) throw error;
        throw wrapNetworkError(error, controller.signal);
      }
      const data = Buffer.concat(chunks);
      const max = this.#options.maxPriceLength;
      if (this.#batch) return readBatchAnswer(data, headers['content-type'], skus, max);
      return new Map([[skus[0], readSingleAnswer(data, headers['content-type'], max)]]);
    } finally {
      done = true;
      clearTimeout(timer);
    }
  }

  /** At most one warning per 10 s; the others are counted. @param {string} message */
  #warn(message) {
    const now = this.#options.now();
    if (now - this.#lastWarn < 10_000) {
      this.#suppressed++;
      return;
    }
    const more = this.#suppressed > 0 ? ` (${this.#suppressed} similar problems not shown)` : '';
    this.#lastWarn = now;
    this.#suppressed = 0;
    this.#options.logger?.warn(`prices: ${message}${more}`);
  }

  /** A second call gets the same promise. */
  close() {
    this.#closing ??= (async () => {
      this.#closed = true;
      for (const job of this.#queue.splice(0)) this.#settleUnsent(job);
      await Promise.allSettled([...this.#inflight.values()]);
      await this.#agent.close();
    })();
    return this.#closing;
  }
}

/** @param {string} url */
function safeUrl(url) {
  return url.replace(/\/\/[^/@]*@/, '//***@');
}

/** @param {unknown} error @param {AbortSignal} signal */
function wrapNetworkError(error, signal) {
  if (signal.aborted && signal.reason instanceof TimeoutError) return signal.reason;
  const code = /** @type {{ code?: string }} */ (error)?.code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new TimeoutError('price endpoint timed out', { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new FetchError(`${code ? code + ': ' : ''}${message}`, { cause: error });
}
