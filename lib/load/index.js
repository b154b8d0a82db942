// @ts-check
/**
 * Loaders: how the crawl gets a page. `createHttpLoader` fetches over HTTP;
 * `withRetry` wraps any loader with retry and backoff; a render loader
 * (Chromium) or a test's fake implements the same `load(url, options)`.
 */
import { createHttpLoader } from './http.js';
import { withRetry } from './retry.js';

export { createHttpLoader, USER_AGENT } from './http.js';
export { withRetry, retryDelayMs, parseRetryAfter } from './retry.js';

/**
 * HTTP with retries: the loader a run uses unless it is given one.
 * @param {Parameters<typeof createHttpLoader>[0] & import('./retry.js').RetryOptions} options
 */
export function defaultLoader(options) {
  return withRetry(createHttpLoader(options), options);
}
