// @ts-check
/**
 * The page store: the manifest's pages with price slots, each split once at its placeholders, so no HTML is parsed per request.
 * A page loads on its first request, which checks each recorded offset holds the placeholder; a stale manifest or an edited
 * file is scanned once instead, with a warning. Pages live in the server's one byte budget (byte-cache.js), dropped when the manifest changes.
 */
import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { renderPlaceholder } from '../document/placeholders.js';
import { BUFFER_OVERHEAD, createByteCache, ENTRY_OVERHEAD, exact, recount, releaseGarbage, RssBoundedCache } from './byte-cache.js';
import { isUtf8Type } from './escape.js';
import { deflateParts } from './gzip.js';
import { MANIFEST_NAME, parseManifest } from './manifest.js';
import { contentTypeFor } from './content-type.js';
import { joinInside, realInside } from './paths.js';
import { splitAtSlots } from './splice.js';

/**
 * @typedef {import('./manifest.js').Manifest} Manifest @typedef {import('./manifest.js').PageMeta} PageMeta @typedef {import('./manifest.js').Slot} Slot
 * @typedef {{ warn(message: string): void, info?(message: string): void }} Logger
 * @typedef {{ key: string, parts: Buffer[], skus: string[], contentType: string, asciiOnly: boolean, bytes: number, fileBytes: number,
 *   tag: string, generation: number, deflated: Buffer[] | null }} PreparedPage
 *   parts: n+1 pieces around n slots; asciiOnly: not labelled UTF-8, so prices go in as ASCII; bytes: its cost in the cache,
 *   deflated parts included; tag: a hash of the file, for filled pages' ETags; generation: the manifest it was loaded under
 */

const FILTER_PLACEHOLDER = /<!--prerender:price sku=([A-Za-z0-9%._~-]*)-->/g;

/** latin1 keeps offsets in bytes. @param {Buffer} buf @returns {Slot[]} */
export function scanPlaceholders(buf) {
  /** @type {Slot[]} */ const slots = [];
  const text = buf.toString('latin1');
  for (const m of text.matchAll(FILTER_PLACEHOLDER)) {
    let sku;
    try {
      sku = decodeURIComponent(m[1]);
    } catch {
      continue;
    }
    slots.push({ sku, offset: /** @type {number} */ (m.index), length: m[0].length });
  }
  return slots;
}

/** @param {Buffer} buf @param {PageMeta} meta @param {Slot[]} slots meta.slots, unpacked */
function slotsMatch(buf, meta, slots) {
  if (!meta.slotsValid) return false;
  if (meta.bytes !== null && meta.bytes !== buf.length) return false;
  for (const slot of slots) {
    if (slot.offset + slot.length > buf.length) return false;
    const expected = renderPlaceholder('filter', slot.sku);
    if (expected.length !== slot.length) return false;
    if (buf.toString('latin1', slot.offset, slot.offset + slot.length) !== expected) return false;
  }
  return true;
}

export class PageStore extends EventEmitter {
  #root;
  #logger;
  /** @type {Manifest | null} */ manifest = null;
  /** placeholderMode 'filter'. */
  #filling = false;
  /** @type {import('lru-cache').LRUCache<string, import('./byte-cache.js').Sized>} shared with the plain files */
  #cache;
  /** @type {Map<string, Promise<PreparedPage | null>>} */ #loading = new Map();
  #generation = 0;
  /** Set when this store makes its own cache. @type {number | null} */
  #cacheBytes;
  /** @type {string | null} */ #manifestSignature = null;

  /**
   * Reads the manifest synchronously: a missing one means a plain static tree, with a warning; a malformed one throws.
   * @param {string} realRoot
   * @param {{ logger: Logger, cacheBytes?: number, maxRss?: number | null, cache?: import('lru-cache').LRUCache<string, import('./byte-cache.js').Sized> }} options
   */
  constructor(realRoot, { logger, cacheBytes = 64 * 1024 * 1024, maxRss = null, cache }) {
    super();
    this.#root = realRoot;
    this.#logger = logger;
    // Without a cache given, one is made once the manifest is read, charged for its pages.
    const bound = maxRss === null ? null : { maxRss, onFloor: (/** @type {string} */ m) => logger.warn(m) };
    this.#cache = cache ?? createByteCache(cacheBytes, { bound });
    this.#cacheBytes = cache ? null : cacheBytes;
    const file = path.join(realRoot, MANIFEST_NAME);
    let text;
    try {
      text = fs.readFileSync(file);
      this.#manifestSignature = signature(fs.statSync(file));
    } catch (error) {
      if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'ENOENT') throw error;
      this.#manifestSignature = 'missing';
      logger.warn(`no ${MANIFEST_NAME} in ${realRoot}: serving the files as they are, without price filling`);
      return;
    }
    let manifest;
    try {
      manifest = parseManifest(text);
    } catch (error) {
      throw new Error(`${file}: ${/** @type {Error} */ (error).message}`, { cause: error });
    }
    this.#use(manifest);
    if (this.#cacheBytes !== null) {
      const charged = Math.min(manifest.pages.memoryBytes, this.#cacheBytes / 2);
      this.#cache = createByteCache(this.#cacheBytes - charged, { bound });
      // Parsing's garbage freed now rather than kept until the heap fills.
      releaseGarbage();
      if (charged >= 16 * 1024 * 1024) logger.info?.(`the manifest's ${manifest.pages.size} pages take ${Math.round(charged / 1048576)} MB of the ${Math.round(this.#cacheBytes / 1048576)} MB cache budget`);
    }
  }

  get cache() {
    return this.#cache;
  }

  /** @param {Manifest} manifest */
  #use(manifest) {
    this.manifest = manifest;
    for (const w of manifest.warnings) this.#logger.warn(w);
    this.#filling = manifest.mode === 'filter';
    if (!this.#filling) {
      this.#logger.info?.(`manifest placeholderMode is '${manifest.mode}': pages are served as they are (for nginx SSI / ESI in front)`);
    }
    // Plain files stay: they check their own stat.
    for (const key of [...this.#cache.keys()]) if (key.startsWith('p\u0000') || key.startsWith('b\u0000')) this.#cache.delete(key);
    this.#loading.clear();
    this.#generation++;
  }

  get fillableCount() {
    return this.#filling && this.manifest ? this.manifest.pages.fillableCount : 0;
  }

  /** @param {string} key @returns {PageMeta | undefined} set when the page has price slots */
  fillable(key) {
    return this.#filling && this.manifest ? this.manifest.pages.fillable(key) : undefined;
  }

  /** Recorded, else from the extension. @param {string} key */
  contentType(key) {
    return this.manifest?.pages.contentType(key) ?? contentTypeFor(key);
  }

  /** From the cache synchronously, or a promise while it loads; null when the file is gone or unsafe. @param {PageMeta} meta @returns {PreparedPage | Promise<PreparedPage | null>} */
  get(meta) {
    const cached = /** @type {PreparedPage | undefined} */ (this.#cache.get(`p\u0000${meta.key}`));
    if (cached) return cached;
    let pending = this.#loading.get(meta.key);
    if (!pending) {
      const generation = this.#generation;
      pending = this.#prepare(meta).then(
        (page) => {
          if (page && generation === this.#generation) this.#remember(page);
          return page;
        },
        (error) => {
          this.#logger.warn(`${meta.key}: cannot load: ${error.message}`);
          return null;
        },
      ).finally(() => {
        if (generation === this.#generation) this.#loading.delete(meta.key);
      });
      this.#loading.set(meta.key, pending);
    }
    return pending;
  }

  /** For gzip answers, made on first use. @param {PreparedPage} page */
  deflated(page) {
    if (!page.deflated) {
      ({ parts: page.parts, deflated: page.deflated } = packed(page.parts, deflateParts(page.parts)));
      page.bytes = preparedBytes(page.fileBytes, page.parts.length) + page.deflated.reduce((n, b) => n + b.length + BUFFER_OVERHEAD, 0);
      recount(this.#cache, `p\u0000${page.key}`, page);
    }
    return page.deflated;
  }

  /** A filled page's, by its ETag. @param {PreparedPage} page @param {string} etag @returns {Buffer | undefined} */
  brotliBody(page, etag) {
    const entry = /** @type {{ bytes: number, body: Buffer } | undefined} */ (this.#cache.get(`b\u0000${page.key}\u0000${etag}`));
    return entry?.body;
  }

  /** @param {PreparedPage} page @param {string} etag @param {Buffer} body */
  rememberBrotli(page, etag, body) {
    if (page.generation === this.#generation) this.#cache.set(`b\u0000${page.key}\u0000${etag}`, /** @type {import('./byte-cache.js').Sized} */ ({ bytes: body.length + 2 * etag.length + ENTRY_OVERHEAD + BUFFER_OVERHEAD, body: exact(body) }));
  }

  /** @param {PreparedPage} page */
  #remember(page) {
    this.#cache.set(`p\u0000${page.key}`, page);
  }

  /** @param {PageMeta} meta @returns {Promise<PreparedPage | null>} */
  async #prepare(meta) {
    const abs = joinInside(this.#root, meta.key);
    const real = abs && (await realInside(this.#root, abs));
    if (!real) {
      this.#logger.warn(`${meta.key}: missing, or a link leading outside the served directory; not served`);
      return null;
    }
    const buf = await fs.promises.readFile(real);
    let slots = meta.slots;
    if (!slotsMatch(buf, meta, slots)) {
      slots = scanPlaceholders(buf);
      this.#logger.warn(`${meta.key}: the manifest's placeholder offsets do not match the file (stale manifest or edited file); found ${slots.length} placeholder(s) by scanning it once`);
      this.emit('stale', meta.key);
    }
    const contentType = meta.contentType ?? contentTypeFor(meta.key);
    return {
      key: meta.key,
      parts: splitAtSlots(buf, slots),
      skus: slots.map((s) => s.sku),
      contentType,
      asciiOnly: !isUtf8Type(contentType),
      bytes: preparedBytes(buf.length, slots.length + 1),
      fileBytes: buf.length,
      tag: crypto.createHash('sha256').update(buf).digest('base64url').slice(0, 16),
      generation: this.#generation,
      deflated: null,
    };
  }

  /** A broken manifest keeps the current one, with a warning; true when a new one is in use. */
  async reloadManifest() {
    const file = path.join(this.#root, MANIFEST_NAME);
    let st;
    try {
      st = await fs.promises.stat(file);
    } catch {
      return false;
    }
    const sig = signature(st);
    if (sig === this.#manifestSignature) return false;
    let manifest;
    try {
      const text = await fs.promises.readFile(file);
      if (signature(await fs.promises.stat(file)) !== sig) return false; // still being written
      this.#manifestSignature = sig;
      manifest = parseManifest(text);
    } catch (error) {
      this.#manifestSignature = sig;
      this.#logger.warn(`${MANIFEST_NAME} changed but cannot be used (${/** @type {Error} */ (error).message}); keeping the previous one`);
      this.emit('manifest-error', error);
      return false;
    }
    this.#use(manifest);
    // Free the old pages, and let an RSS bound start over from here.
    releaseGarbage();
    if (this.#cache instanceof RssBoundedCache) this.#cache.rebase();
    this.#logger.info?.(`${MANIFEST_NAME} reloaded: ${this.fillableCount} pages with price slots`);
    this.emit('manifest-reload');
    return true;
  }
}

/** Its file, its objects, and the views that split it. @param {number} fileBytes @param {number} parts */
function preparedBytes(fileBytes, parts) {
  return fileBytes + ENTRY_OVERHEAD + BUFFER_OVERHEAD * (parts + 1);
}

/**
 * The parts and their deflated forms in one allocation: a few small blocks would land in the holes evicted pages leave and
 * split them (BENCHMARKS.md, Serving, "Third pass: the RSS bound"). @param {Buffer[]} parts @param {Buffer[]} deflated
 */
function packed(parts, deflated) {
  const all = [...parts, ...deflated];
  const block = Buffer.allocUnsafeSlow(all.reduce((n, b) => n + b.length, 0));
  let at = 0;
  const views = all.map((b) => {
    b.copy(block, at);
    at += b.length;
    return block.subarray(at - b.length, at);
  });
  return { parts: views.slice(0, parts.length), deflated: views.slice(parts.length) };
}

/** @param {fs.Stats} st */
function signature(st) {
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
}
