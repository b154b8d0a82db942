// @ts-check
/** Loaders: how the crawl gets a page; HTTP, render and test loaders share `load(url, options)`. */
import { createHttpLoader } from './http.js';
import { withRetry } from './retry.js';
import { withPoliteness } from './polite.js';

export { createHttpLoader, USER_AGENT } from './http.js';
export { withRetry, retryDelayMs, parseRetryAfter } from './retry.js';

/** Every attempt is paced. @param {NonNullable<Parameters<typeof createHttpLoader>[0]> & import('./retry.js').RetryOptions & { concurrency: number, rate?: number, delay?: number }} options */
export function defaultLoader(options) {
  return withRetry(withPoliteness(createHttpLoader(options), options), options);
}
