// @ts-check
/**
 * Hot plain files served from memory, in the one byte budget. A file is read once; each encoding is made once, on the thread
 * pool, or read from a `.gz` / `.br` sibling that decompresses to the file's bytes; each variant's headers are built once.
 * Per request: a Map lookup, a `stat` at most once a second per file, the negotiation, a 304 check, one write.
 * static.js streams the rest: Range requests, files over `maxFileBytes`, directory redirects, anything missing.
 */
import fs from 'node:fs';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { brotliOptions, BUFFER_OVERHEAD, ENTRY_OVERHEAD, exact, recount } from './byte-cache.js';
import { isNotModified, preferredEncodings } from './http-util.js';
import { isCompressible } from './content-type.js';
import { realInside } from './paths.js';

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);
/** @type {(data: Buffer, options: zlib.ZlibOptions) => Promise<Buffer>} */ const gunzip = promisify(zlib.gunzip);
/** @type {(data: Buffer, options: zlib.BrotliOptions) => Promise<Buffer>} */ const brotliDecompress = promisify(zlib.brotliDecompress);

/** The headers cost more than the saving. */
const MIN_COMPRESS = 1024;

/**
 * @typedef {{ body: Buffer, headers: string[], etag: string }} Variant
 * @typedef {{ bytes: number, kind: 'file', real: string, signature: string, checkedAt: number, mtimeMs: number, identity: Variant,
 *   compressible: boolean, abs: string, type: string, size: number, gzip: Variant | null | undefined, br: Variant | null | undefined }} FileEntry
 *   gzip, br: undefined until a client asks for them; null when not worth it
 */

/** @param {fs.Stats} st */ const signatureOf = (st) => `${st.ino}:${st.size}:${st.mtimeMs}`;

export class FileCache {
  #cache;
  #options;
  /** @type {Map<string, Promise<FileEntry | null>>} */ #loading = new Map();

  /**
   * @param {import('lru-cache').LRUCache<string, import('./byte-cache.js').Sized>} cache the shared byte budget
   * @param {{ realRoot: string, cacheControl: string, maxFileBytes: number, checkMs?: number, now?: () => number }} options
   */
  constructor(cache, options) {
    this.#cache = cache;
    this.#options = { checkMs: 1000, now: Date.now, ...options };
  }

  /** Still matching the file on disk. @param {string} requestKey @returns {FileEntry | undefined} */
  get(requestKey) {
    const entry = /** @type {FileEntry | undefined} */ (this.#cache.get(`f\u0000${requestKey}`));
    if (!entry) return undefined;
    const now = this.#options.now();
    if (now - entry.checkedAt >= this.#options.checkMs) {
      let st;
      try {
        st = fs.statSync(entry.real);
      } catch {
        st = null;
      }
      if (!st || signatureOf(st) !== entry.signature) {
        this.#cache.delete(`f\u0000${requestKey}`);
        return undefined;
      }
      entry.checkedAt = now;
    }
    return entry;
  }

  /**
   * Null when it is not cacheable: too large, or changed while read.
   * @param {string} requestKey @param {string} abs in the tree @param {string} real inside the root @param {fs.Stats} st
   * @param {string} type its Content-Type @returns {Promise<FileEntry | null>}
   */
  load(requestKey, abs, real, st, type) {
    if (st.size > this.#options.maxFileBytes) return Promise.resolve(null);
    let pending = this.#loading.get(requestKey);
    if (!pending) {
      pending = this.#read(abs, real, st, type).then(
        (entry) => {
          if (entry) this.#cache.set(`f\u0000${requestKey}`, entry);
          return entry;
        },
        () => null,
      ).finally(() => this.#loading.delete(requestKey));
      this.#loading.set(requestKey, pending);
    }
    return pending;
  }

  /** @param {string} abs @param {string} real @param {fs.Stats} st @param {string} type @returns {Promise<FileEntry | null>} */
  async #read(abs, real, st, type) {
    const body = await fs.promises.readFile(real);
    const after = await fs.promises.stat(real);
    if (signatureOf(after) !== signatureOf(st) || body.length !== st.size) return null; // being written
    const compressible = isCompressible(type) && body.length >= MIN_COMPRESS;
    /** @type {FileEntry} */ const entry = {
      bytes: body.length + ENTRY_OVERHEAD + BUFFER_OVERHEAD,
      kind: 'file',
      real,
      abs,
      type,
      size: st.size,
      signature: signatureOf(st),
      checkedAt: this.#options.now(),
      mtimeMs: st.mtimeMs,
      compressible,
      identity: /** @type {Variant} */ (/** @type {unknown} */ (null)),
      gzip: compressible ? undefined : null,
      br: compressible ? undefined : null,
    };
    entry.identity = this.#variant(entry, body, null);
    return entry;
  }

  /** @param {FileEntry} entry @param {Buffer} data @param {'gzip' | 'br' | null} encoding @returns {Variant} */
  #variant(entry, data, encoding) {
    const etag = `"${entry.size.toString(16)}-${Math.floor(entry.mtimeMs).toString(16)}${encoding === 'gzip' ? '-gz' : encoding === 'br' ? '-br' : ''}"`;
    const headers = ['Content-Type', entry.type, 'Cache-Control', this.#options.cacheControl, 'X-Content-Type-Options', 'nosniff', 'Last-Modified', new Date(entry.mtimeMs).toUTCString()];
    if (isCompressible(entry.type)) headers.push('Vary', 'Accept-Encoding');
    headers.push('ETag', etag, 'Content-Length', String(data.length));
    if (encoding) headers.push('Content-Encoding', encoding);
    else headers.push('Accept-Ranges', 'bytes');
    return { body: data, headers, etag };
  }

  /**
   * The sibling, else compressed now; once, counted in the budget.
   * @param {string} requestKey @param {FileEntry} entry @param {'gzip' | 'br'} encoding @returns {Promise<void>}
   */
  compress(requestKey, entry, encoding) {
    const key = `${requestKey}\u0000${encoding}`;
    let pending = this.#loading.get(key);
    if (!pending) {
      const body = entry.identity.body;
      pending = this.#sibling(`${entry.abs}.${encoding === 'gzip' ? 'gz' : 'br'}`, body, encoding)
        .then((b) => b ?? (encoding === 'gzip' ? gzip(body, { level: 6 }) : brotli(body, brotliOptions(body.length, 6))))
        .then(
          (data) => {
            // Keep a compressed form only when it saves something.
            const made = data && data.length < body.length ? this.#variant(entry, exact(data), encoding) : null;
            entry[encoding] = made;
            entry.bytes += made ? made.body.length + BUFFER_OVERHEAD : 0;
            recount(this.#cache, `f\u0000${requestKey}`, entry);
            return null;
          },
          () => {
            entry[encoding] = null;
            return null;
          },
        )
        .finally(() => this.#loading.delete(key));
      this.#loading.set(key, pending);
    }
    return pending.then(() => undefined);
  }

  /**
   * A sibling inside the tree that decompresses to the file's very bytes: a .gz put there by hand, left from an older file, or
   * a page of its own (app.js.gz beside app.js) is never sent in the file's place.
   * @param {string} file @param {Buffer} body the file's bytes @param {'gzip' | 'br'} encoding @returns {Promise<Buffer | null>} null: none usable
   */
  async #sibling(file, body, encoding) {
    try {
      if (!(await fs.promises.stat(file)).isFile()) return null;
    } catch {
      return null;
    }
    const data = await realInside(this.#options.realRoot, file).then((real) => (real ? fs.promises.readFile(real) : null)).catch(() => null);
    if (!data) return null;
    const options = { maxOutputLength: body.length + 1 };
    const decoded = await (encoding === 'gzip' ? gunzip(data, options) : brotliDecompress(data, options)).catch(() => null);
    return decoded && decoded.equals(body) ? data : null;
  }

  /** @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res @param {FileEntry} entry @param {string} requestKey */
  send(req, res, entry, requestKey) {
    let chosen = entry.identity;
    if (entry.compressible) {
      for (const enc of preferredEncodings(/** @type {string | undefined} */ (req.headers['accept-encoding']))) {
        const v = entry[enc];
        if (v === undefined) {
          // First request for this encoding: make it, then answer.
          this.compress(requestKey, entry, enc).then(() => {
            if (!res.destroyed) this.send(req, res, entry, requestKey);
          });
          return;
        }
        if (v) {
          chosen = v;
          break;
        }
      }
    }
    if ((req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined) && isNotModified(req.headers, chosen.etag, entry.mtimeMs)) {
      const headers = [];
      for (let i = 0; i < chosen.headers.length; i += 2) {
        const name = chosen.headers[i];
        if (name !== 'Content-Type' && name !== 'Content-Length') headers.push(name, chosen.headers[i + 1]);
      }
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, chosen.headers);
    res.end(req.method === 'HEAD' ? undefined : chosen.body);
  }
}
