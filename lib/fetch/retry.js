// @ts-check
import { UsageError, isRetryable } from '../errors.js';
import { sleep } from './abort.js';

/**
 * Exponential backoff with jitter, or the server's Retry-After, for whatever the error class says is retryable.
 * @typedef {import('./http.js').Loader} Loader
 * @typedef {{ retries: number, retryDelay?: number, maxRetryAfter?: number, random?: () => number,
 *   onRetry?: (info: { url: string, attempt: number, delayMs: number, error: Error }) => void }} RetryOptions
 */

/** Retry-After, when given, is capped. @param {number} attempt 1-based @param {{ retryDelay: number, maxRetryAfter: number, retryAfterMs?: number, random?: () => number }} options */
export function retryDelayMs(attempt, { retryDelay, maxRetryAfter, retryAfterMs, random = Math.random }) {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, maxRetryAfter);
  const exponential = retryDelay * 2 ** (attempt - 1);
  return Math.min(exponential + random() * retryDelay, 30_000);
}

/** Seconds, or an HTTP date. @param {string | string[] | undefined} value @param {number} [now] @returns {number | undefined} milliseconds */
export function parseRetryAfter(value, now = Date.now()) {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  // Only an HTTP-date (IMF-fixdate, RFC 850 or asctime); "1.5" or "-3" is no hint.
  if (!/^\s*[A-Za-z]{3},? /.test(value) || !/\d{1,2}:\d{2}:\d{2}/.test(value)) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** @param {Loader} loader @param {RetryOptions} options @returns {Loader} */
export function withRetry(loader, options) {
  checkRetryArguments(loader, options);
  const { retries, onRetry, random } = options;
  const retryDelay = options.retryDelay ?? 500;
  const maxRetryAfter = options.maxRetryAfter ?? 60_000;
  return {
    async load(url, callOptions = {}) {
      const { signal } = callOptions;
      for (let attempt = 1; ; attempt++) {
        try {
          return await loader.load(url, callOptions);
        } catch (error) {
          if (!isRetryable(error) || attempt > retries || signal?.aborted) throw error;
          const delayMs = retryDelayMs(attempt, { retryDelay, maxRetryAfter, retryAfterMs: /** @type {any} */ (error).retryAfterMs, random });
          onRetry?.({ url, attempt, delayMs, error: /** @type {Error} */ (error) });
          await sleep(delayMs, signal);
        }
      }
    },
    close: () => loader.close(),
  };
}

/** Without a whole `retries`, a failing URL was tried for ever. @param {unknown} loader @param {unknown} options */
function checkRetryArguments(loader, options) {
  if (typeof (/** @type {{ load?: unknown } | null} */ (loader)?.load) !== 'function') throw new UsageError('withRetry(loader, options): the loader must have a load(url, options) method');
  if (!options || typeof options !== 'object') throw new UsageError('withRetry(loader, options): options must be an object with "retries"');
  const given = /** @type {Record<string, unknown>} */ (options);
  // Infinity: retry for ever, only when asked for.
  if (!(Number.isSafeInteger(given.retries) || given.retries === Infinity) || /** @type {number} */ (given.retries) < 0) {
    throw new UsageError(`withRetry: "retries" must be a whole number, at least 0 (or Infinity), got ${shown(given.retries)}`);
  }
  for (const key of ['retryDelay', 'maxRetryAfter']) {
    const value = given[key];
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value >= 0)) {
      throw new UsageError(`withRetry: "${key}" must be a number of milliseconds, at least 0, got ${shown(value)}`);
    }
  }
  for (const key of ['onRetry', 'random']) {
    if (given[key] !== undefined && typeof given[key] !== 'function') throw new UsageError(`withRetry: "${key}" must be a function when given`);
  }
}

/** JSON would say null for NaN and Infinity. @param {unknown} value */
function shown(value) {
  return typeof value === 'number' ? String(value) : JSON.stringify(value) ?? String(value);
}
