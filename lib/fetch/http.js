// @ts-check
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { AbortError, ContentEncodingError, FetchError, HttpStatusError, PageTooLargeError, PrerenderError, TimeoutError, UsageError } from '../errors.js';
import { parseRetryAfter } from './retry.js';
import { fanout } from './abort.js';
import { OPTION_BY_NAME } from '../options/crawl-options.js';

/**
 * The HTTP loader: one undici pool per run, closed with `close()`.
 * @typedef {Record<string, string | string[] | undefined>} Headers
 * @typedef {{ url: string, status: number, headers: Headers, body: Buffer, location?: string, notModified?: boolean }} LoadResult
 *   a 2xx page, a redirect or a 304 (both with an empty body); any other status throws an HttpStatusError
 * @typedef {{ signal?: AbortSignal, headers?: Record<string, string> }} LoadOptions
 * @typedef {{ load(url: string, options?: LoadOptions): Promise<LoadResult>, close(): Promise<void> }} Loader
 */

/**
 * undici's Agent alone: its package entry loads every API and slows each start (BENCHMARKS.md, "Decisions", undici).
 * If a later undici moves the file, the entry is loaded instead. @type {typeof import('undici').Agent}
 */
export const Agent = loadAgent();

function loadAgent() {
  const require = createRequire(import.meta.url);
  const dispatcherOnly = 'undici/lib/dispatcher/agent.js'; // (a variable: the type checker reads undici's types, not its sources)
  try {
    return require(dispatcherOnly);
  } catch {
    return require('undici').Agent;
  }
}

export const USER_AGENT = 'prerender/0.1 (+static pre-rendering; https://www.npmjs.com/package/prerender)';

/**
 * @param {{ concurrency?: number, timeout?: number, maxPageBytes?: number, headers?: Record<string, string> }} [options]
 *   each as the crawl option of that name, with its default
 * @returns {Loader}
 */
export function createHttpLoader(options = {}) {
  const { concurrency, timeout, maxPageBytes } = httpLoaderOptions(options);
  const agent = new Agent({
    connections: concurrency,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    connect: { timeout },
    keepAliveTimeout: 10_000,
  });
  const baseHeaders = { 'user-agent': USER_AGENT, accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'accept-encoding': 'identity', ...options.headers };

  /** @param {string} url @param {LoadOptions} [callOptions] @returns {Promise<LoadResult>} */
  function load(url, callOptions = {}) {
    const headers = callOptions.headers ? { ...baseHeaders, ...callOptions.headers } : baseHeaders;
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(url, maxPageBytes, timeout, callOptions.signal, resolve, reject);
      exchange.start(agent, headers);
    });
  }

  return { load, close: () => agent.close() };
}

/** Bytes of an unwanted body (a redirect's, an error page's) read to keep its connection, as undici's dump() does. */
const DISCARD_LIMIT = 128 * 1024;

/**
 * One request on undici's handler API, with no stream or AbortController per request (BENCHMARKS.md, "Decisions").
 * It settles once; the --timeout timer, the run's signal and the size cap abort it.
 */
class Exchange {
  /** @type {{ abort(reason?: Error): void } | null} undici's, once the request has started */
  #controller = null;
  /** @type {Error | null} why this side aborted */
  #abortedWith = null;
  /** @type {LoadResult | Error | null} what the headers gave: a redirect, a 304, an error status */
  #known = null;
  /** @type {Buffer[]} */ #chunks = [];
  #size = 0;
  #settled = false;
  /** @type {Headers} */ #headers = {};
  #status = 0;
  /** @type {string[]} */ #encodings = [];
  #timer;
  /** @type {() => void} */ #unlink = () => {};

  /**
   * @param {string} url @param {number} cap --max-page-bytes @param {number} timeout ms for the whole exchange
   * @param {AbortSignal | undefined} signal the run's @param {(result: LoadResult) => void} resolve @param {(error: Error) => void} reject
   */
  constructor(url, cap, timeout, signal, resolve, reject) {
    this.url = url;
    this.cap = cap;
    this.timeout = timeout;
    this.resolve = resolve;
    this.reject = reject;
    // Past the timeout, an outcome the headers gave (a redirect, an error status) stands without its body.
    this.#timer = setTimeout(() => this.#abort(this.#known ?? new TimeoutError(`no answer within ${timeout} ms`)), timeout);
    const unlink = fanout.link(signal, () => this.#abort(new AbortError('crawl interrupted')));
    if (this.#settled) unlink();
    else this.#unlink = unlink;
  }

  /** @param {import('undici').Agent} agent @param {Record<string, string>} headers */
  start(agent, headers) {
    if (this.#settled) return;
    let target;
    try {
      target = new URL(this.url);
    } catch (error) {
      this.#settle(classify(error, this.timeout));
      return;
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      this.#settle(new FetchError(`not an http(s) URL: ${this.url}`, { code: 'FETCH' }));
      return;
    }
    try {
      agent.dispatch({ origin: target.origin, path: `${target.pathname}${target.search}`, method: 'GET', headers }, this);
    } catch (error) {
      this.#settle(classify(error, this.timeout));
    }
  }

  /** @param {LoadResult | Error} outcome what the exchange settles with, its connection dropped */
  #abort(outcome) {
    if (this.#settled) return;
    const reason = outcome instanceof Error ? outcome : new AbortError('body not wanted');
    this.#abortedWith = reason;
    this.#settle(outcome);
    this.#controller?.abort(reason);
  }

  /** @param {LoadResult | Error} outcome */
  #settle(outcome) {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#unlink();
    this.#chunks = [];
    if (outcome instanceof Error) this.reject(outcome);
    else this.resolve(outcome);
  }

  /** @param {{ abort(reason?: Error): void }} controller */
  onRequestStart(controller) {
    this.#controller = controller;
    if (this.#abortedWith) controller.abort(this.#abortedWith);
  }

  /** @param {{ abort(reason?: Error): void }} controller @param {number} status @param {Headers} headers */
  onResponseStart(controller, status, headers) {
    // An interim answer (103 Early Hints, 102 Processing) comes before the real one.
    if (this.#settled || status < 200) return;
    this.#status = status;
    this.#headers = headers;
    const empty = Buffer.alloc(0);
    if (status === 304) {
      this.#known = { url: this.url, status, headers, body: empty, notModified: true };
    } else if (status >= 300 && status < 400) {
      const location = headers.location;
      this.#known = typeof location !== 'string' || location === ''
        ? new HttpStatusError(status, { why: Array.isArray(location) ? 'redirect with several Location headers' : 'redirect without a Location' })
        : { url: this.url, status, headers, body: empty, location };
    } else if (status >= 400) {
      this.#known = new HttpStatusError(status, { retryAfterMs: parseRetryAfter(headers['retry-after']) });

    } else if (Number(headers['content-length']) > this.cap) {
      this.#abort(new PageTooLargeError(`body of ${Number(headers['content-length'])} bytes is over --max-page-bytes ${this.cap}`));
      return;
    } else {
      this.#encodings = contentEncodings(headers['content-encoding']);
    }
  }

  /** @param {{ abort(reason?: Error): void }} controller @param {Buffer} chunk */
  onResponseData(controller, chunk) {
    if (this.#settled) return;
    this.#size += chunk.length;
    if (this.#known) {
      // Not wanted: read on (the connection is kept) up to a limit, then the outcome stands without it.
      if (this.#size > DISCARD_LIMIT) this.#abort(this.#known);
      return;
    }
    if (this.#size > this.cap) {
      this.#abort(new PageTooLargeError(`body is over --max-page-bytes ${this.cap}`));
      return;
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd() {
    if (this.#settled) return;
    if (this.#known) {
      this.#settle(this.#known);
      return;
    }
    // The answer is in: decoding it is not the origin's time, nor interrupted by the run's signal.
    clearTimeout(this.#timer);
    this.#unlink();
    const chunks = this.#chunks;
    const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, this.#size);
    const page = (/** @type {Buffer} */ body) => ({ url: this.url, status: this.#status, headers: this.#headers, body });
    if (this.#encodings.length === 0) {
      this.#settle(page(raw));
      return;
    }
    decode(raw, this.#encodings, this.cap).then((body) => this.#settle(page(body)), (error) => this.#settle(error));
  }

  /** @param {unknown} controller @param {Error} error */
  onResponseError(controller, error) {
    // A body cut off after the headers gave the outcome (a 404, a redirect) changes nothing.
    this.#settle(this.#known ?? classify(error, this.timeout));
  }
}

/** The codings of a Content-Encoding header, in the order they were applied. @param {string | string[] | undefined} header */
function contentEncodings(header) {
  if (header === undefined) return [];
  const text = Array.isArray(header) ? header.join(',') : header;
  return text.split(',').map((coding) => coding.trim().toLowerCase()).filter((coding) => coding !== '' && coding !== 'identity');
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotli = promisify(zlib.brotliDecompress);

/** Compressed although we asked for identity; capped so a bomb stops with bounded memory. @param {Buffer} body @param {string[]} encodings @param {number} cap */
async function decode(body, encodings, cap) {
  let data = body;
  for (const coding of [...encodings].reverse()) {
    const options = { maxOutputLength: cap };
    try {
      if (coding === 'gzip' || coding === 'x-gzip') data = await gunzip(data, options);
      else if (coding === 'br') data = await brotli(data, options);
      else if (coding === 'deflate') {
        // zlib-wrapped, or raw deflate as some servers send it.
        data = await inflate(data, options).catch((/** @type {NodeJS.ErrnoException} */ error) => {
          // Too large, or a zlib stream (its header read) cut short: not raw deflate either.
          if (error.code === 'ERR_BUFFER_TOO_LARGE' || error.code === 'Z_BUF_ERROR') throw error;
          return inflateRaw(data, options);
        });
      }
      else throw new ContentEncodingError(`the body is in Content-Encoding "${coding}", which prerender cannot decode`);
    } catch (error) {
      if (error instanceof ContentEncodingError) throw error;
      if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new PageTooLargeError(`the ${coding}-decoded body is over --max-page-bytes ${cap}`);
      }
      // The stream ended early: the body was cut short on the way.
      const truncated = /** @type {NodeJS.ErrnoException} */ (error).code === 'Z_BUF_ERROR';
      throw new ContentEncodingError(`cannot decode the ${coding} body: ${truncated ? 'it is cut short' : /** @type {Error} */ (error).message}`, { cause: error, truncated });
    }
  }
  return data;
}

/** To one of our typed errors. @param {any} error @param {number} timeout @returns {Error} */
function classify(error, timeout) {
  if (error instanceof PrerenderError) return error;
  const code = error?.code ?? error?.cause?.code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new TimeoutError(`no answer within ${timeout} ms`, { cause: error });
  }
  const detail = code ? `${code}${error?.message ? ': ' + error.message : ''}` : String(error?.message ?? error);
  return new FetchError(detail, { cause: error, code: 'FETCH' });
}

/** createHttpLoader's options checked and defaulted: a missing timeout must not mean none. @param {unknown} options */
function httpLoaderOptions(options) {
  if (!options || typeof options !== 'object') throw new UsageError('createHttpLoader(options): options must be an object');
  const given = /** @type {Record<string, unknown>} */ (options);
  /** @param {'concurrency' | 'timeout' | 'maxPageBytes'} name */ const whole = (name) => {
    const value = given[name] ?? OPTION_BY_NAME.get(name)?.default;
    if (!Number.isSafeInteger(value) || /** @type {number} */ (value) < 1) throw new UsageError(`createHttpLoader: "${name}" must be a whole number, at least 1, got ${typeof value === 'number' ? String(value) : JSON.stringify(value) ?? String(value)}`);
    return /** @type {number} */ (value);
  };
  const { headers } = given;
  if (headers !== undefined && (typeof headers !== 'object' || headers === null || Object.values(headers).some((value) => typeof value !== 'string'))) {
    throw new UsageError('createHttpLoader: "headers" must be an object of strings ({ name: value })');
  }
  return { concurrency: whole('concurrency'), timeout: whole('timeout'), maxPageBytes: whole('maxPageBytes') };
}
