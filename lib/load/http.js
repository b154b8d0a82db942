// @ts-check
import { Agent, request } from 'undici';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { ContentEncodingError, FetchError, HttpStatusError, PageTooLargeError, TimeoutError, AbortError } from '../errors.js';
import { parseRetryAfter } from './retry.js';
import { fanout } from './abort.js';

/**
 * The HTTP loader: one undici pool per run, closed with `close()`.
 *
 * @typedef {Record<string, string | string[] | undefined>} Headers
 * @typedef {{
 *   url: string,
 *   status: number,
 *   headers: Headers,
 *   body: Buffer,
 *   location?: string,
 *   notModified?: boolean,
 * }} LoadResult
 *   A 2xx page, a redirect (3xx other than 304: `location` set, body empty),
 *   or a 304 (`notModified`, body empty). Any other status is thrown as an
 *   HttpStatusError.
 * @typedef {{ signal?: AbortSignal, headers?: Record<string, string> }} LoadOptions
 * @typedef {{ load(url: string, options?: LoadOptions): Promise<LoadResult>, close(): Promise<void> }} Loader
 *   What the crawl needs to get a page. Tests pass a fake; rendering wraps one.
 */

export const USER_AGENT = 'prerender/0.1 (+static pre-rendering; https://www.npmjs.com/package/prerender)';

/**
 * @param {{
 *   concurrency: number, timeout: number, maxPageBytes: number,
 *   headers?: Record<string, string>,
 * }} options
 * @returns {Loader}
 */
export function createHttpLoader(options) {
  const { concurrency, timeout, maxPageBytes } = options;
  const agent = new Agent({
    connections: concurrency,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    connect: { timeout },
    keepAliveTimeout: 10_000,
  });
  const baseHeaders = { 'user-agent': USER_AGENT, accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'accept-encoding': 'identity', ...options.headers };

  /**
   * @param {string} url
   * @param {LoadOptions} [callOptions]
   * @returns {Promise<LoadResult>}
   */
  async function load(url, callOptions = {}) {
    const { signal } = callOptions;
    // One controller per request; its timer goes when the request ends.
    // (AbortSignal.timeout() would keep every request's objects alive for
    // the whole timeout, and AbortSignal.any() leaks a WeakRef per call on Node 20.)
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeout);
    const unlink = fanout.link(signal, () => controller.abort());
    const headers = callOptions.headers ? { ...baseHeaders, ...callOptions.headers } : baseHeaders;
    try {
      const response = await request(url, { dispatcher: agent, method: 'GET', headers, signal: controller.signal });
      const { statusCode: status } = response;
      const responseHeaders = response.headers;
      if (status === 304) {
        await response.body.dump();
        return { url, status, headers: responseHeaders, body: Buffer.alloc(0), notModified: true };
      }
      if (status >= 300 && status < 400) {
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
      const encodings = contentEncodings(responseHeaders['content-encoding']);
      const raw = await readCapped(response.body, maxPageBytes);
      const body = encodings.length === 0 ? raw : await decode(raw, encodings, maxPageBytes);
      return { url, status, headers: responseHeaders, body };
    } catch (error) {
      throw classify(error, { signal, timedOut: controller.signal.aborted && !signal?.aborted, timeout });
    } finally {
      clearTimeout(timer);
      unlink();
    }
  }

  return { load, close: () => agent.close() };
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
 * The codings of a Content-Encoding header, in the order they were applied.
 * @param {string | string[] | undefined} header
 */
function contentEncodings(header) {
  if (header === undefined) return [];
  const text = Array.isArray(header) ? header.join(',') : header;
  return text.split(',').map((coding) => coding.trim().toLowerCase()).filter((coding) => coding !== '' && coding !== 'identity');
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotli = promisify(zlib.brotliDecompress);

/**
 * Decode a body the origin compressed although we asked for identity: gzip,
 * deflate (zlib or raw, as browsers accept) and br. The decoded size is
 * capped too, so a compression bomb stops at --max-page-bytes with bounded
 * memory.
 * @param {Buffer} body
 * @param {string[]} encodings
 * @param {number} cap
 */
async function decode(body, encodings, cap) {
  let data = body;
  for (const coding of [...encodings].reverse()) {
    const options = { maxOutputLength: cap };
    try {
      if (coding === 'gzip' || coding === 'x-gzip') data = await gunzip(data, options);
      else if (coding === 'br') data = await brotli(data, options);
      else if (coding === 'deflate') data = await inflate(data, options).catch(() => inflateRaw(data, options));
      else throw new ContentEncodingError(`the body is in Content-Encoding "${coding}", which prerender cannot decode`);
    } catch (error) {
      if (error instanceof ContentEncodingError) throw error;
      if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new PageTooLargeError(`the ${coding}-decoded body is over --max-page-bytes ${cap}`);
      }
      throw new ContentEncodingError(`cannot decode the ${coding} body: ${/** @type {Error} */ (error).message}`, { cause: error });
    }
  }
  return data;
}

/**
 * Map whatever undici threw to one of our typed errors.
 * @param {any} error
 * @param {{ signal?: AbortSignal, timedOut: boolean, timeout: number }} context
 */
function classify(error, { signal, timedOut, timeout }) {
  if (error instanceof HttpStatusError || error instanceof PageTooLargeError || error instanceof ContentEncodingError) return error;
  if (signal?.aborted) return new AbortError('crawl interrupted', { cause: error });
  const code = error?.code ?? error?.cause?.code;
  if (timedOut || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new TimeoutError(`no answer within ${timeout} ms`, { cause: error });
  }
  const detail = code ? `${code}${error?.message ? ': ' + error.message : ''}` : String(error?.message ?? error);
  return new FetchError(detail, { cause: error, code: 'FETCH' });
}
