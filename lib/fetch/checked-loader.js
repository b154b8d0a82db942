// @ts-check
import { AbortError, HttpStatusError, LoaderResultError } from '../errors.js';
import { fanout } from './abort.js';
import { parseRetryAfter } from './retry.js';

/**
 * A caller's `loader` held to the crawl's contract (docs/api.md): a bad result fails with a LoaderResultError saying what
 * is missing, error statuses throw HttpStatusError so they retry, and the run's signal ends the wait even if the loader ignores it.
 * @param {import('./http.js').Loader} loader @returns {import('./http.js').Loader}
 */
export function checkedLoader(loader) {
  return {
    async load(url, options = {}) {
      const value = await untilAborted(Promise.resolve().then(() => loader.load(url, options)), options.signal);
      return checkLoadResult(url, value);
    },
    async close() {
      await loader.close?.();
    },
  };
}

/** The promise is left unobserved on abort. @template T @param {Promise<T>} promise @param {AbortSignal | undefined} signal @returns {Promise<T>} */
function untilAborted(promise, signal) {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const unlink = fanout.link(signal, () => reject(new AbortError('crawl interrupted')));
    promise.then(
      (value) => { unlink(); resolve(value); },
      (error) => { unlink(); reject(error); },
    );
  });
}

/** @param {string} url the URL asked for @param {unknown} value what the loader resolved with @returns {import('./http.js').LoadResult} */
export function checkLoadResult(url, value) {
  const bad = (/** @type {string} */ what) => new LoaderResultError(`the loader's result for ${url} ${what}`);
  if (!value || typeof value !== 'object') throw bad(`is ${value === null ? 'null' : typeof value}, not { url, status, headers, body }`);
  const result = /** @type {Record<string, unknown>} */ (value);
  const { status } = result;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
    throw bad(`has no usable "status" (a whole number from 200 to 599), got ${JSON.stringify(status)}`);
  }
  const headers = lowerCased(result.headers);
  if (!headers) throw bad('has "headers" that are not an object of strings');
  const base = { url: typeof result.url === 'string' && result.url !== '' ? result.url : url, status, headers };
  if (status === 304 || result.notModified === true) return { ...base, body: Buffer.alloc(0), notModified: true };
  if (status >= 400) throw new HttpStatusError(status, { retryAfterMs: parseRetryAfter(headers['retry-after']) });
  if (status >= 300) {
    const { location } = result;
    if (typeof location !== 'string' || location === '') throw new HttpStatusError(status, { why: 'redirect without a location' });
    return { ...base, body: Buffer.alloc(0), location };
  }
  if (result.location !== undefined) throw bad(`has a "location" with status ${status} (a redirect is a 3xx)`);
  const body = asBuffer(result.body);
  if (!body) throw bad(`has no "body" (a Buffer, a Uint8Array or a string), got ${result.body === null ? 'null' : typeof result.body}`);
  return { ...base, body };
}

/** @param {unknown} body @returns {Buffer | null} */
function asBuffer(body) {
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return null;
}

/** As the HTTP loader gives them: numbers become text, null values no header; a fetch `Headers` is read too. @param {unknown} headers @returns {import('./http.js').Headers | null} */
function lowerCased(headers) {
  if (headers === undefined || headers === null) return {};
  if (typeof headers !== 'object' || Array.isArray(headers)) return null;
  const listed = /** @type {{ entries?: () => Iterable<[string, unknown]> }} */ (headers);
  const entries = typeof listed.entries === 'function' ? [...listed.entries()] : Object.entries(headers);
  /** @type {import('./http.js').Headers} */ const lower = {};
  for (const [name, item] of entries) {
    if (item === undefined || item === null) continue;
    const value = typeof item === 'number' ? String(item) : item;
    if (typeof value !== 'string' && !(Array.isArray(value) && value.every((part) => typeof part === 'string' || typeof part === 'number'))) return null;
    lower[name.toLowerCase()] = Array.isArray(value) ? value.map(String) : value;
  }
  return lower;
}
