// @ts-check
/**
 * Prices from an HTTP endpoint, e.g. `http://shop/price.asp?sku={sku}&zip={zip}`.
 * The answer is the price text, or JSON `{ "price": "..." }`; 404 or 204 (or
 * an empty / null price) means "no price for this SKU".
 *
 * Guarantees for the request path: `lookup()` answers synchronously from the
 * cache when it can, otherwise returns a promise that never rejects and
 * settles within `timeoutMs`. Identical lookups in flight share one request.
 * Answers are cached (bounded LRU, TTL); a stale answer is served while it is
 * refreshed in the background; failures and "no price" are cached briefly;
 * after repeated failures a breaker answers "no price" at once for a while,
 * letting one probe through, so a down or slow endpoint cannot slow pages.
 */
import { EventEmitter } from 'node:events';
import { Agent, request } from 'undici';
import { TimeoutError, HttpStatusError, FetchError } from '../errors.js';
import { LRUCache } from 'lru-cache';
import { TtlCache } from './lru.js';
import { DEFAULT_MAX_PRICE_LENGTH } from './table.js';

/** @typedef {{ warn(message: string): void, info?(message: string): void }} Logger */

export const HTTP_SOURCE_DEFAULTS = Object.freeze({
  timeoutMs: 300,
  ttlMs: 60_000,
  staleMs: 60_000,
  negativeTtlMs: 5_000,
  cacheSize: 50_000,
  connections: 32,
  breakerThreshold: 5,
  breakerCooldownMs: 5_000,
  maxBodyBytes: 16 * 1024,
});

/**
 * Validates a URL template; returns a message for a UsageError, or null.
 * @param {string} template
 */
export function checkUrlTemplate(template) {
  if (!template.includes('{sku}')) return `price URL template ${template} has no {sku}; write e.g. http://shop/price.asp?sku={sku}&zip={zip}`;
  let url;
  try {
    url = new URL(template.replaceAll('{sku}', 'x').replaceAll('{zip}', 'x'));
  } catch {
    return `price URL template ${template} is not a valid URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `price URL template ${template} must be http: or https:`;
  return null;
}

export class HttpPriceSource extends EventEmitter {
  #template;
  #usesZip;
  #options;
  /** @type {TtlCache<string | null>} */
  #cache;
  /**
   * Lookups in flight, by SKU and zip: identical lookups share one request.
   * Bounded (lru-cache): under overload the oldest entries drop out of the
   * table (those lookups still complete; later ones just do not join them).
   * @type {LRUCache<string, Promise<string | null>>}
   */
  #inflight = new LRUCache({ max: 10_000 });
  #agent;
  #failures = 0;
  #breakerUntil = 0;
  #probing = false;
  #lastWarn = 0;
  #suppressed = 0;
  #closed = false;
  /** Background refreshes of stale answers in flight (bounded by `connections`). */
  #refreshing = 0;
  /** Counters, for tests and diagnostics. */
  stats = { requests: 0, hits: 0, stale: 0, coalesced: 0, failures: 0, timeouts: 0, shortCircuited: 0 };

  /**
   * @param {string} template
   * @param {Partial<typeof HTTP_SOURCE_DEFAULTS> & { maxPriceLength?: number, logger?: Logger, now?: () => number }} [options]
   */
  constructor(template, options = {}) {
    super();
    const problem = checkUrlTemplate(template);
    if (problem) throw new TypeError(problem);
    this.#template = template;
    this.#usesZip = template.includes('{zip}');
    this.#options = { ...HTTP_SOURCE_DEFAULTS, maxPriceLength: DEFAULT_MAX_PRICE_LENGTH, now: Date.now, ...options };
    this.#cache = new TtlCache({ max: this.#options.cacheSize, now: this.#options.now });
    this.#agent = new Agent({
      connections: this.#options.connections,
      keepAliveTimeout: 10_000,
      headersTimeout: this.#options.timeoutMs,
      bodyTimeout: this.#options.timeoutMs,
      connect: { timeout: this.#options.timeoutMs },
    });
  }

  get description() {
    return `HTTP endpoint ${this.#template}`;
  }

  /**
   * @param {string} sku
   * @param {string | null} zip normalised zip, or null
   * @returns {string | null | Promise<string | null>}
   */
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
      // Refresh in the background, but never more at once than the pool has
      // connections: a burst of expiries must not queue lookups into timeouts.
      if (!this.#inflight.has(key) && this.#refreshing < this.#options.connections) {
        this.#refreshing++;
        void this.#start(key, sku, zipPart).finally(() => this.#refreshing--);
      }
      return hit.value;
    }
    const pending = this.#inflight.get(key);
    if (pending) {
      this.stats.coalesced++;
      return pending;
    }
    return this.#start(key, sku, zipPart);
  }

  /**
   * @param {string} key
   * @param {string} sku
   * @param {string} zip
   * @returns {Promise<string | null>}
   */
  #start(key, sku, zip) {
    const now = this.#options.now();
    let probe = false;
    if (this.#closed) return Promise.resolve(null);
    if (now < this.#breakerUntil) {
      if (this.#probing) {
        this.stats.shortCircuited++;
        return Promise.resolve(null);
      }
      probe = true;
      this.#probing = true;
    }
    const url = this.#template.replaceAll('{sku}', encodeURIComponent(sku)).replaceAll('{zip}', encodeURIComponent(zip));
    const promise = this.#fetchPrice(url).then(
      (price) => {
        this.#failures = 0;
        this.#breakerUntil = 0;
        if (price === null) this.#cache.set(key, null, this.#options.negativeTtlMs);
        else {
          // Spread expiries (-20%..0) so answers cached together are not all refreshed together.
          const ttl = this.#options.ttlMs * (0.8 + 0.2 * Math.random());
          this.#cache.set(key, price, ttl, this.#options.staleMs + this.#options.ttlMs - ttl);
        }
        return price;
      },
      (error) => {
        this.stats.failures++;
        if (error instanceof TimeoutError) this.stats.timeouts++;
        this.#failures++;
        if (this.#failures >= this.#options.breakerThreshold) this.#breakerUntil = this.#options.now() + this.#options.breakerCooldownMs;
        // Keep a stale answer if there is one; otherwise remember the failure briefly.
        if (!this.#cache.get(key)) this.#cache.set(key, null, this.#options.negativeTtlMs);
        this.#warn(url, error);
        this.emit('lookup-error', error);
        return null;
      },
    ).finally(() => {
      if (this.#inflight.peek(key) === promise) this.#inflight.delete(key);
      if (probe) this.#probing = false;
    });
    this.#inflight.set(key, promise);
    return promise;
  }

  /**
   * @param {string} url
   * @returns {Promise<string | null>}
   */
  async #fetchPrice(url) {
    this.stats.requests++;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TimeoutError(`no answer within ${this.#options.timeoutMs} ms`)), this.#options.timeoutMs);
    try {
      let response;
      try {
        response = await request(url, {
          dispatcher: this.#agent,
          signal: controller.signal,
          headers: { accept: 'application/json, text/plain;q=0.9, */*;q=0.5' },
        });
      } catch (error) {
        throw wrapNetworkError(error, controller.signal);
      }
      const { statusCode, headers, body } = response;
      if (statusCode === 404 || statusCode === 204) {
        await body.dump().catch(() => {});
        return null;
      }
      if (statusCode !== 200) {
        await body.dump().catch(() => {});
        throw new HttpStatusError(statusCode);
      }
      let text = '';
      let bytes = 0;
      /** @type {Buffer[]} */
      const chunks = [];
      try {
        for await (const chunk of body) {
          bytes += chunk.length;
          if (bytes > this.#options.maxBodyBytes) {
            body.destroy();
            throw new FetchError(`price answer larger than ${this.#options.maxBodyBytes} bytes`);
          }
          chunks.push(chunk);
        }
      } catch (error) {
        if (error instanceof FetchError) throw error;
        throw wrapNetworkError(error, controller.signal);
      }
      text = Buffer.concat(chunks).toString('utf8');
      const type = String(headers['content-type'] ?? '');
      return this.#parseAnswer(text, /json/i.test(type));
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * @param {string} text
   * @param {boolean} isJson
   * @returns {string | null}
   */
  #parseAnswer(text, isJson) {
    let price;
    const trimmed = text.trim();
    if (isJson || trimmed.startsWith('{')) {
      let data;
      try {
        data = JSON.parse(trimmed);
      } catch {
        throw new FetchError('price answer is not valid JSON');
      }
      const value = data && typeof data === 'object' ? data.price : undefined;
      if (value === undefined || value === null) return null;
      if (typeof value === 'number' && Number.isFinite(value)) price = String(value);
      else if (typeof value === 'string') price = value.trim();
      else throw new FetchError('price answer JSON has no text "price"');
    } else {
      price = trimmed;
    }
    if (price === '') return null;
    if (price.length > this.#options.maxPriceLength) throw new FetchError(`price text longer than ${this.#options.maxPriceLength} characters`);
    return price;
  }

  /**
   * @param {string} url
   * @param {unknown} error
   */
  #warn(url, error) {
    const now = this.#options.now();
    if (now - this.#lastWarn < 10_000) {
      this.#suppressed++;
      return;
    }
    const more = this.#suppressed > 0 ? ` (${this.#suppressed} similar failures not shown)` : '';
    this.#lastWarn = now;
    this.#suppressed = 0;
    const reason = error instanceof Error ? error.message : String(error);
    const safeUrl = url.replace(/\/\/[^/@]*@/, '//***@');
    this.#options.logger?.warn(`prices: ${safeUrl} failed: ${reason}; serving the fallback${more}`);
  }

  async close() {
    this.#closed = true;
    await Promise.allSettled([...this.#inflight.values()]);
    await this.#agent.close();
  }
}

/**
 * @param {unknown} error
 * @param {AbortSignal} signal
 */
function wrapNetworkError(error, signal) {
  if (signal.aborted && signal.reason instanceof TimeoutError) return signal.reason;
  const code = /** @type {{ code?: string }} */ (error)?.code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new TimeoutError('price endpoint timed out', { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new FetchError(`${code ? code + ': ' : ''}${message}`, { cause: error });
}
