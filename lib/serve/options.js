// @ts-check
/** Options of createPriceFilter, createServer and runServeCommand: the one place defaults live, and bad values become UsageErrors. */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors.js';
import { classifyPriceSpec, DEFAULT_MAX_PRICE_LENGTH, normalizeZip } from '../prices/index.js';
import { FRONT_DEFAULTS, normalizeFrontOptions } from '../front/front-options.js';

/**
 * Spelled out: the type inferred from the frozen defaults would be their literal values, and the .d.ts would refuse any other.
 * @typedef {{ port: number, host: string, zipParam: string, zipCookie: string, defaultZip: string | null, fallback: string, static: boolean,
 *   priceTimeoutMs: number, priceQueueMs: number, priceCacheTtlMs: number, priceCacheStaleMs: number, priceNegativeTtlMs: number,
 *   priceCacheSize: number, priceConnections: number, maxPriceLength: number, watch: boolean, pollIntervalMs: number, pageCacheBytes: number,
 *   maxRssBytes: number | null, drainTimeoutMs: number, staticCacheControl: string, filledCacheControl: string, maxHeaderSize: number,
 *   headersTimeoutMs: number, requestTimeoutMs: number, keepAliveTimeoutMs: number, socketTimeoutMs: number, addRedirects: boolean,
 * } & import('../front/front-options.js').FrontDefaults} ServeDefaults
 */

/** @type {Readonly<ServeDefaults>} */ export const SERVE_DEFAULTS = Object.freeze({
  port: 8080,
  host: '127.0.0.1',
  zipParam: 'zip',
  zipCookie: 'zip',
  /** @type {string | null} */
  defaultZip: null,
  /** Text for a slot with no price (no source, unknown SKU without default, source down). */
  fallback: '',
  /** Whether the middleware also serves the files without slots (createServer: always). */
  static: true,
  /** Price endpoint: answer within this (from the moment the request is sent) or use the fallback. */
  priceTimeoutMs: 300,
  /** Price endpoint: longest wait for a free connection (beyond: local overload, the fallback; at once when the endpoint's measured pace says it would be). */
  priceQueueMs: 3000,
  priceCacheTtlMs: 60_000,
  priceCacheStaleMs: 60_000,
  priceNegativeTtlMs: 5_000,
  priceCacheSize: 50_000,
  priceConnections: 64,
  maxPriceLength: DEFAULT_MAX_PRICE_LENGTH,
  /** Reload the price file and the manifest when they change. */
  watch: true,
  pollIntervalMs: 2_000,
  /** The one memory budget (bytes) for every cached variant: pages with slots, plain files, their gzip and br forms. */
  pageCacheBytes: 512 * 1024 * 1024,
  /**
   * Resident bytes kept under by holding fewer cached pages (byte-cache.js); null: none. `prerender serve` sets pageCacheBytes + 96 MiB;
   * middleware shares its process with the application, whose memory is not the cache's to make room for. @type {number | null}
   */
  maxRssBytes: null,
  /** On SIGTERM/SIGINT (runServeCommand), wait this long for requests in flight. */
  drainTimeoutMs: 10_000,
  /** Cache-Control for files without slots. */
  staticCacheControl: 'public, max-age=0',
  /** Cache-Control for filled pages (they vary per visitor). */
  filledCacheControl: 'private, no-cache',
  maxHeaderSize: 8 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  /** A socket idle this long (e.g. a client that stops reading) is closed. */
  socketTimeoutMs: 30_000,
  /** Redirects of the server's own: a directory without its slash, `/` to the crawl root's page (off in front of an origin, whose paths they are). */
  addRedirects: true,
  /** In front of the live site (serve --origin): lib/front/options.js. */
  ...FRONT_DEFAULTS,
});

/**
 * @typedef {{ warn(message: string): void, info?(message: string): void }} Logger @typedef {import('../prices/index.js').PriceSource} PriceSource
 * @typedef {ServeDefaults & { root: string, realRoot: string, prices: string | PriceSource | Record<string, Record<string, string | number>> | null,
 *   logger: Logger }} ServeOptions
 * @typedef {Partial<Omit<ServeOptions, 'realRoot'>> & { root: string, port?: number | string }} ServeOptionsInput
 */

/** What node:http accepts as a header value (its own check, which throws per request). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** @type {Logger} */ const CONSOLE_LOGGER = { warn: (m) => console.warn(`prerender: ${m}`) };

/** @param {ServeOptionsInput} input @returns {ServeOptions} */
export function normalizeServeOptions(input) {
  if (!input || typeof input !== 'object') throw new UsageError('serve: options must be an object with at least { root }');
  const known = new Set([...Object.keys(SERVE_DEFAULTS), 'root', 'prices', 'logger']);
  for (const key of Object.keys(input)) {
    if (!known.has(key)) throw new UsageError(`serve: unknown option "${key}" (known: ${[...known].sort().join(', ')})`);
  }
  /** @type {any} */ const o = { ...SERVE_DEFAULTS };
  for (const [k, v] of Object.entries(input)) if (v !== undefined) o[k] = v;

  if (typeof o.root !== 'string' || o.root === '') throw new UsageError('serve: give the directory to serve (the crawl output), e.g. prerender serve ./out');
  o.root = path.resolve(o.root);
  let st;
  try {
    st = fs.statSync(o.root);
  } catch {
    throw new UsageError(`serve: ${o.root} does not exist; run prerender crawl first or check the path`);
  }
  if (!st.isDirectory()) throw new UsageError(`serve: ${o.root} is not a directory`);
  o.realRoot = fs.realpathSync(o.root);

  const port = typeof o.port === 'string' && /^\d+$/.test(o.port) ? Number(o.port) : o.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`serve: --port must be 0-65535 (0 picks a free port), got ${JSON.stringify(o.port)}`);
  o.port = port;
  if (typeof o.host !== 'string' || o.host.trim() === '') throw new UsageError('serve: --host must be a host name or address, e.g. 127.0.0.1 or 0.0.0.0');

  for (const name of ['zipParam', 'zipCookie']) {
    if (typeof o[name] !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(o[name])) {
      throw new UsageError(`serve: --${name === 'zipParam' ? 'zip-param' : 'zip-cookie'} must be 1-64 letters, digits, "_", "." or "-", got ${JSON.stringify(o[name])}`);
    }
  }
  if (o.defaultZip !== null && o.defaultZip !== '') {
    const zip = normalizeZip(o.defaultZip);
    if (zip === null) throw new UsageError(`serve: --default-zip ${JSON.stringify(o.defaultZip)} is not a plausible zip code (3-10 letters, digits, spaces or hyphens)`);
    o.defaultZip = zip;
  } else o.defaultZip = null;
  if (typeof o.fallback !== 'string') throw new UsageError('serve: --fallback must be text');
  if (o.fallback.length > o.maxPriceLength) throw new UsageError(`serve: --fallback is longer than ${o.maxPriceLength} characters`);

  for (const name of ['priceTimeoutMs', 'priceQueueMs', 'priceCacheTtlMs', 'priceCacheSize', 'priceConnections', 'maxPriceLength', 'pageCacheBytes', 'maxHeaderSize', 'headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'socketTimeoutMs', 'pollIntervalMs']) {
    if (!Number.isFinite(o[name]) || o[name] <= 0) throw new UsageError(`serve: ${name} must be a positive number, got ${JSON.stringify(o[name])}`);
  }
  if (o.maxRssBytes !== null && (!Number.isFinite(o.maxRssBytes) || o.maxRssBytes <= o.pageCacheBytes)) {
    throw new UsageError(`serve: --max-rss (maxRssBytes) must be larger than --cache-bytes (pageCacheBytes, ${o.pageCacheBytes} bytes): the process needs memory besides its cache; got ${JSON.stringify(o.maxRssBytes)}`);
  }
  for (const name of ['priceCacheStaleMs', 'priceNegativeTtlMs', 'drainTimeoutMs']) {
    if (!Number.isFinite(o[name]) || o[name] < 0) throw new UsageError(`serve: ${name} must be a number >= 0, got ${JSON.stringify(o[name])}`);
  }
  // Counts: a fraction would reach lru-cache or undici, which fail later and elsewhere.
  for (const name of ['priceCacheSize', 'priceConnections']) {
    if (!Number.isInteger(o[name])) throw new UsageError(`serve: ${name} must be a whole number, got ${JSON.stringify(o[name])}`);
  }
  // A string such as 'false' would otherwise count as true.
  for (const name of ['static', 'watch', 'addRedirects']) {
    if (typeof o[name] !== 'boolean') throw new UsageError(`serve: ${name} must be true or false, got ${JSON.stringify(o[name])}`);
  }
  // Sent as header values: a CR/LF would make node:http throw on every request (uncaught on the hot-file path).
  for (const name of ['staticCacheControl', 'filledCacheControl']) {
    if (typeof o[name] !== 'string' || !HEADER_VALUE.test(o[name])) throw new UsageError(`serve: ${name} must be a Cache-Control header value (printable text, no line breaks), got ${JSON.stringify(o[name])}`);
  }

  if (o.prices === undefined || o.prices === '') o.prices = null;
  if (typeof o.prices === 'string') {
    const what = classifyPriceSpec(o.prices);
    if (what.kind === 'invalid') throw new UsageError(`serve: ${what.problem}`);
    if (what.kind === 'file') {
      if (!fs.existsSync(what.file)) throw new UsageError(`serve: price file ${what.file} does not exist`);
    }
  } else if (o.prices !== null && typeof o.prices !== 'object') {
    throw new UsageError('serve: prices must be a .json/.csv path, an http(s) URL template, an object { SKU: { ZIP: price } }, or a source with lookup(sku, zip)');
  }
  normalizeFrontOptions(o);
  if (!o.logger) o.logger = CONSOLE_LOGGER;
  if (typeof o.logger.warn !== 'function') throw new UsageError('serve: logger must have a warn(message) method');
  return o;
}
