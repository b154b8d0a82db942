// @ts-check
import { Agent, request } from 'undici';
import { setTimeout as delay } from 'node:timers/promises';
import { AbortError, FetchError, HttpStatusError, PageTooLargeError, TimeoutError, isRetryable } from './errors.js';

/**
 * @typedef {{
 *   url: string,
 *   status: number,
 *   headers: Record<string, string | string[] | undefined>,
 *   body: Buffer,
 *   location?: string,
 * }} FetchedResponse  location is set for a redirect (3xx), body is then empty
 *
 * @typedef {{
 *   concurrency: number,
 *   timeout: number,
 *   retries: number,
 *   maxPageBytes: number,
 *   headers?: Record<string, string>,
 *   retryDelay?: number,
 *   maxRetryAfter?: number,
 *   signal?: AbortSignal,
 *   onRetry?: (info: { url: string, attempt: number, delayMs: number, error: Error }) => void,
 * }} FetcherOptions
 */

export const USER_AGENT = 'prerender/0.1 (+static pre-rendering; https://www.npmjs.com/package/prerender)';

/**
 * The delay before retry number `attempt` (1-based): exponential backoff with
 * jitter, or the server's Retry-After when it gave one (capped).
 * @param {number} attempt
 * @param {{ retryDelay: number, maxRetryAfter: number, retryAfterMs?: number, random?: () => number }} options
 */
export function retryDelayMs(attempt, { retryDelay, maxRetryAfter, retryAfterMs, random = Math.random }) {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, maxRetryAfter);
  const exponential = retryDelay * 2 ** (attempt - 1);
  return Math.min(exponential + random() * retryDelay, 30_000);
}

/**
 * Retry-After: seconds, or an HTTP date.
 * @param {string | string[] | undefined} value
 * @param {number} [now]
 * @returns {number | undefined} milliseconds
 */
export function parseRetryAfter(value, now = Date.now()) {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  // Only an HTTP-date (IMF-fixdate, RFC 850 or asctime); "1.5" or "-3" is no hint.
  if (!/^\s*[A-Za-z]{3},? /.test(value) || !/\d{1,2}:\d{2}:\d{2}/.test(value)) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * A fetcher bound to one run: its own connection pool, closed with `close()`.
 * @param {FetcherOptions} options
 */
export function createFetcher(options) {
  const { concurrency, timeout, retries, maxPageBytes, signal } = options;
  const retryDelay = options.retryDelay ?? 500;
  const maxRetryAfter = options.maxRetryAfter ?? 60_000;
  const agent = new Agent({
    connections: concurrency,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    connect: { timeout },
    keepAliveTimeout: 10_000,
  });
  const headers = { 'user-agent': USER_AGENT, accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'accept-encoding': 'identity', ...options.headers };

  /**
   * @param {string} url
   * @returns {Promise<FetchedResponse>}
   */
  async function fetchOnce(url) {
    // One controller per request; its timer and its listener on the run's
    // signal go when the request ends. (AbortSignal.timeout() would keep every
    // request's objects alive for the whole timeout, and AbortSignal.any()
    // with the long-lived run signal leaks a WeakRef per call on Node 20.)
    const controller = new AbortController();
    const timeoutSignal = controller.signal;
    const timer = setTimeout(() => controller.abort(), timeout);
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const requestSignal = controller.signal;
    try {
      const response = await request(url, { dispatcher: agent, method: 'GET', headers, signal: requestSignal });
      const { statusCode: status } = response;
      const responseHeaders = response.headers;
      if (status >= 300 && status < 400 && status !== 304) {
        await response.body.dump();
        const location = responseHeaders.location;
        if (typeof location !== 'string' || location === '') throw new HttpStatusError(status);
        return { url, status, headers: responseHeaders, body: Buffer.alloc(0), location };
      }
      if (status < 200 || status >= 300) {
        await response.body.dump();
        throw new HttpStatusError(status, { retryAfterMs: parseRetryAfter(responseHeaders['retry-after']) });
      }
      const declared = Number(responseHeaders['content-length']);
      if (declared > maxPageBytes) {
        discard(response.body);
        throw new PageTooLargeError(`body of ${declared} bytes is over --max-page-bytes ${maxPageBytes}`);
      }
      const body = await readCapped(response.body, maxPageBytes);
      return { url, status, headers: responseHeaders, body };
    } catch (error) {
      throw classify(error, { signal, timeoutSignal, timeout });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Fetch with retries for network errors, timeouts, 5xx and 429.
   * @param {string} url
   * @returns {Promise<FetchedResponse>}
   */
  async function fetchPage(url) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fetchOnce(url);
      } catch (error) {
        if (!isRetryable(error) || attempt > retries || signal?.aborted) throw error;
        const delayMs = retryDelayMs(attempt, { retryDelay, maxRetryAfter, retryAfterMs: error.retryAfterMs });
        options.onRetry?.({ url, attempt, delayMs, error });
        try {
          await delay(delayMs, undefined, { signal });
        } catch {
          throw new AbortError('crawl interrupted');
        }
      }
    }
  }

  return {
    fetchPage,
    close: () => agent.close(),
  };
}

/**
 * Stop reading a body we will not use. undici reports the abort as an
 * 'error' event, which must not become an uncaught exception.
 * @param {{ on: (event: 'error', listener: () => void) => unknown, destroy: () => void }} body
 */
function discard(body) {
  body.on('error', () => {});
  body.destroy();
}

/**
 * @param {AsyncIterable<Buffer> & { destroy: () => void, on: (event: 'error', listener: () => void) => unknown }} stream
 * @param {number} cap
 */
async function readCapped(stream, cap) {
  /** @type {Buffer[]} */
  const chunks = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.length;
    if (size > cap) {
      discard(stream);
      throw new PageTooLargeError(`body is over --max-page-bytes ${cap}`);
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
}

/**
 * Map whatever undici threw to one of our typed errors.
 * @param {any} error
 * @param {{ signal?: AbortSignal, timeoutSignal: AbortSignal, timeout: number }} context
 */
function classify(error, { signal, timeoutSignal, timeout }) {
  if (error instanceof HttpStatusError || error instanceof PageTooLargeError) return error;
  if (signal?.aborted) return new AbortError('crawl interrupted', { cause: error });
  const code = error?.code ?? error?.cause?.code;
  if (timeoutSignal.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new TimeoutError(`no answer within ${timeout} ms`, { cause: error });
  }
  const detail = code ? `${code}${error?.message ? ': ' + error.message : ''}` : String(error?.message ?? error);
  return new FetchError(detail, { cause: error, code: 'FETCH' });
}
