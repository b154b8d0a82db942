// @ts-check
import zlib from 'node:zlib';
import { brotliOptions } from './byte-cache.js';
import { PriceEncoder } from './escape.js';
import { combineEtag, textHash } from './etag.js';
import { gzipFilled } from './gzip.js';
import { isNotModified, preferredEncodings } from './http-util.js';
import { zipFromRequest } from './request-zip.js';
import { chunkParts, joinParts } from './splice.js';

/**
 * A page with price slots, answered: the visitor's prices looked up (synchronously for files and cache hits), spliced into
 * its parts, and written in the encoding the client prefers.
 * @typedef {import('node:http').IncomingMessage} Req @typedef {import('node:http').ServerResponse} Res @typedef {import('./pages.js').PreparedPage} PreparedPage
 */

/** Larger filled pages are brotli-compressed on the thread pool. */
const SYNC_BROTLI_BYTES = 64 * 1024;

export class PageFiller {
  encoder = new PriceEncoder();

  /**
   * @param {{ options: import('./options.js').ServeOptions, pages: import('./pages.js').PageStore,
   *   prices: import('../prices/index.js').PriceSource, logger: import('./options.js').Logger }} deps
   */
  constructor({ options, pages, prices, logger }) {
    this.pages = pages;
    this.prices = prices;
    this.logger = logger;
    this.options = options;
    this.names = { zipParam: options.zipParam, zipCookie: options.zipCookie };
    /** Not any price text: it has a NUL. */
    this.fallbackHash = textHash(`\u0000fallback\u0000${options.fallback}`);
    this.fallback = { utf8: this.encoder.encode(options.fallback, false), ascii: this.encoder.encode(options.fallback, true) };
    /** The queue bound, the endpoint timeout, and a little. */
    this.priceDeadlineMs = options.priceQueueMs + options.priceTimeoutMs + 50;
  }

  /** @param {Req} req @param {Res} res @param {PreparedPage} page */
  fill(req, res, page) {
    const skus = page.skus;
    const zip = zipFromRequest(req.url, req.headers.cookie, this.names) ?? this.options.defaultZip;
    /** @type {(string | null | Promise<string | null>)[]} */ const values = new Array(skus.length);
    let pending = false;
    for (let i = 0; i < skus.length; i++) {
      let value;
      try {
        value = this.prices.lookup(skus[i], zip);
      } catch (error) {
        this.logger.warn(`prices: lookup failed for ${skus[i]}: ${/** @type {Error} */ (error).message}`);
        value = null;
      }
      if (value !== null && typeof value === 'object' && typeof value.then === 'function') pending = true;
      values[i] = value;
    }
    if (!pending) return this.send(req, res, page, /** @type {(string | null)[]} */ (values));
    // Never wait longer than the price timeout, whatever the source does.
    /** @type {NodeJS.Timeout | undefined} */ let timer;
    const deadline = new Promise((resolve) => {
      timer = setTimeout(resolve, this.priceDeadlineMs, null);
    });
    Promise.all(
      values.map((v) =>
        Promise.race([Promise.resolve(v), deadline]).then(
          (x) => (typeof x === 'string' ? x : null),
          () => null,
        ),
      ),
    ).then((resolved) => {
      clearTimeout(timer);
      if (!res.destroyed) this.send(req, res, page, resolved);
    });
  }

  /** @param {Req} req @param {Res} res @param {PreparedPage} page @param {(string | null)[]} values */
  send(req, res, page, values) {
    const ascii = page.asciiOnly;
    const parts = page.parts;
    const n = values.length;
    /** @type {Buffer[]} */ const encoded = new Array(n);
    /** @type {import('./etag.js').TextHash[]} */ const hashes = new Array(n);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (typeof v === 'string') {
        const e = this.encoder.entry(v, ascii);
        encoded[i] = e.buf;
        hashes[i] = e.hash;
      } else {
        encoded[i] = ascii ? this.fallback.ascii : this.fallback.utf8;
        hashes[i] = this.fallbackHash;
      }
    }
    const etag = combineEtag(page.tag, hashes);
    const headers = [
      'Content-Type', page.contentType,
      'Cache-Control', this.options.filledCacheControl,
      'Vary', 'Cookie, Accept-Encoding',
      'X-Content-Type-Options', 'nosniff',
      'ETag', etag,
    ];
    if (req.headers['if-none-match'] !== undefined && isNotModified(req.headers, etag, 0)) {
      res.writeHead(304, headers.slice(2));
      res.end();
      return;
    }
    const encoding = preferredEncodings(/** @type {string | undefined} */ (req.headers['accept-encoding']))[0];
    if (encoding === 'br') {
      const cached = this.pages.brotliBody(page, etag);
      if (cached) return write(req, res, headers, cached, 'br');
      return this.compress(req, res, page, etag, headers, joinParts(parts, encoded));
    }
    if (encoding === 'gzip') return write(req, res, headers, gzipFilled(parts, this.pages.deflated(page), encoded), 'gzip');
    // Identity: the page's parts go out as they are (no copy of the page per request).
    const { chunks, length } = chunkParts(parts, encoded);
    headers.push('Content-Length', String(length));
    res.writeHead(200, headers);
    if (req.method === 'HEAD' || chunks.length === 0) return void res.end();
    // (node:http corks the socket on the first write: the chunks leave in one writev)
    const last = chunks.length - 1;
    for (let i = 0; i < last; i++) res.write(chunks[i]);
    res.end(chunks[last]);
  }

  /**
   * Cached by the page's ETag: compressed once per page and prices.
   * @param {Req} req @param {Res} res @param {PreparedPage} page @param {string} etag @param {string[]} headers @param {Buffer} identity the filled page
   */
  compress(req, res, page, etag, headers, identity) {
    // Memory a pool thread takes stays with that thread, out of the cache's reach; a large page still goes there, not to hold the event loop.
    if (identity.length <= SYNC_BROTLI_BYTES) {
      let body;
      try {
        body = zlib.brotliCompressSync(identity, brotliOptions(identity.length, 5));
      } catch {
        return write(req, res, headers, identity, null);
      }
      this.pages.rememberBrotli(page, etag, body);
      return write(req, res, headers, body, 'br');
    }
    zlib.brotliCompress(identity, brotliOptions(identity.length, 5), (error, body) => {
      if (res.destroyed) return;
      if (error) return write(req, res, headers, identity, null);
      this.pages.rememberBrotli(page, etag, body);
      write(req, res, headers, body, 'br');
    });
  }
}

/** @param {Req} req @param {Res} res @param {string[]} headers @param {Buffer} body @param {string | null} encoding */
function write(req, res, headers, body, encoding) {
  headers.push('Content-Length', String(body.length));
  if (encoding) headers.push('Content-Encoding', encoding);
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}
