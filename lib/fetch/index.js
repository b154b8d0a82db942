// @ts-check
/**
 * Loaders: how the crawl gets a page. `createHttpLoader` fetches over HTTP;
 * `withRetry` wraps any loader with retry and backoff; a render loader
 * (Chromium) or a test's fake implements the same `load(url, options)`.
 */
import { createHttpLoader } from './http.js';
import { withRetry } from './retry.js';
import { withPoliteness } from './polite.js';

export { createHttpLoader, USER_AGENT } from './http.js';
export { withRetry, retryDelayMs, parseRetryAfter } from './retry.js';

/**
 * HTTP with politeness (--rate, --delay) and retries: the loader a run uses
 * unless it is given one. Every attempt is paced, retries included.
 * @param {NonNullable<Parameters<typeof createHttpLoader>[0]> & import('./retry.js').RetryOptions & { concurrency: number, rate?: number, delay?: number }} options
 */
export function defaultLoader(options) {
  return withRetry(withPoliteness(createHttpLoader(options), options), options);
}
