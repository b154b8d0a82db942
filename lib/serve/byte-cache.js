// @ts-check
/**
 * The server's one memory budget: a byte-bounded LRU holding every cached variant (split pages with slots, hot plain files,
 * filled pages' brotli bodies). Each entry says its cost in `bytes`; one that grows is set again so it is counted.
 */
import { LRUCache } from 'lru-cache';
import v8 from 'node:v8';
import vm from 'node:vm';
import zlib from 'node:zlib';

/** @typedef {{ bytes: number }} Sized */

/** An entry's JS objects and the cache's bookkeeping, and each Buffer's; see BENCHMARKS.md, "Decisions". */
export const ENTRY_OVERHEAD = 1536;
export const BUFFER_OVERHEAD = 160;

/**
 * Evicted Buffers are freed only when V8 collects their objects, which external-memory pressure alone triggers only every
 * several tens of MB (BENCHMARKS.md, "Decisions"). Null when the runtime does not let us start a major GC. @type {(() => void) | null}
 */
const collect = (() => {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc');
    v8.setFlagsFromString('--no-expose-gc');
    if (typeof gc !== 'function') return null;
    return () => gc({ type: 'major', execution: 'async' });
  } catch {
    return null;
  }
})();

/**
 * @typedef {{ maxRss: number, rss?: () => number, checkEveryBytes?: number, onFloor?: (message: string) => void }} RssBound
 *   checkEveryBytes: cached between two looks at the RSS, 1 MiB by default; onFloor: said once when the cache is at its floor and the process still over
 */

/**
 * An LRU by bytes that also shrinks when the process grows past `maxRss`: what it cannot count (V8's free pages, the
 * allocator's free lists and fragmentation) shows only in the RSS. Every `checkEveryBytes` cached, past `maxRss`, the growth
 * since the last look comes off its limit (down to 1/16 of it), and the freed memory is reused by the next entries. A growth
 * is taken off once, since freed memory still counts in the RSS; well under `maxRss` again, the limit grows back.
 * @template {Sized} V @extends {LRUCache<string, V>}
 */
export class RssBoundedCache extends LRUCache {
  #limit;
  #floor;
  #maxRss;
  #rss;
  #checkEvery;
  #onFloor;
  #sinceCheck = 0;
  /** RSS when the limit was last lowered. */
  #lastHigh = 0;
  #saidFloor = false;
  #release;

  /** @param {LRUCache.Options<string, V, unknown>} options @param {RssBound} bound @param {(() => void) | null} release */
  constructor(options, bound, release) {
    super(options);
    this.#limit = this.maxSize;
    this.#floor = this.maxSize / 16;
    this.#maxRss = bound.maxRss;
    this.#rss = bound.rss ?? (() => process.memoryUsage.rss());
    this.#checkEvery = bound.checkEveryBytes ?? 1024 * 1024;
    this.#onFloor = bound.onFloor ?? null;
    this.#release = release;
  }

  /** At most maxSize. */
  get limit() {
    return this.#limit;
  }

  /** @param {string} key @param {V | undefined} value @param {LRUCache.SetOptions<string, V, unknown>} [options] */
  set(key, value, options) {
    super.set(key, value, options);
    const bytes = value?.bytes ?? 0;
    this.#sinceCheck += bytes;
    if (this.#sinceCheck >= this.#checkEvery) {
      this.#sinceCheck = 0;
      this.#check();
    }
    // An entry larger than the limit now is not kept: evicting for it would empty the cache. Counted all the same, so a cache at its floor still looks.
    if (bytes > this.#limit) this.delete(key);
    else if (this.calculatedSize > this.#limit) this.#evictTo(this.#limit);
    return this;
  }

  #check() {
    const rss = this.#rss();
    const over = rss - Math.max(this.#maxRss, this.#lastHigh);
    if (over > 0) {
      this.#lastHigh = rss;
      this.#limit = Math.max(this.#floor, Math.min(this.#limit, this.calculatedSize) - over);
      this.#evictTo(this.#limit);
      this.#release?.();
      if (this.#limit === this.#floor && !this.#saidFloor && this.#onFloor) {
        this.#saidFloor = true;
        this.#onFloor(`resident memory ${mb(rss)} MB is over the ${mb(this.#maxRss)} MB bound with the page cache down to ${mb(this.#limit)} MB: the process holds memory outside the cache (raise --max-rss / maxRssBytes, or lower --cache-bytes / pageCacheBytes)`);
      }
      return;
    }
    // Well under the bound again (rare: the allocator keeps most of what it took).
    const slack = Math.min(32 * 1024 * 1024, this.maxSize / 8);
    if (rss < this.#maxRss - slack) {
      this.#lastHigh = 0;
      if (this.#limit < this.maxSize) this.#limit = Math.min(this.maxSize, this.#limit + (this.#maxRss - slack - rss) / 2);
    }
  }

  /** The limit back to maxSize, after the cache was emptied on purpose (a new manifest), when the RSS says nothing of what it held. */
  rebase() {
    this.#limit = this.maxSize;
    this.#lastHigh = this.#rss();
    this.#sinceCheck = 0;
  }

  /** @param {number} bytes */
  #evictTo(bytes) {
    while (this.calculatedSize > bytes && this.size > 0) this.pop();
  }
}

/** @param {number} bytes */ const mb = (bytes) => Math.round(bytes / 1048576);

/**
 * After `releaseBytes` evicted (1/32 of the budget, at least 4 MiB), `release` (a major GC) runs, at most every `releaseEveryMs`;
 * `bound` also keeps the process's RSS under `bound.maxRss`. @param {number} maxBytes
 * @param {{ releaseBytes?: number, releaseEveryMs?: number, now?: () => number, release?: (() => void) | null, bound?: RssBound | null }} [options]
 * @returns {LRUCache<string, Sized>}
 */
export function createByteCache(maxBytes, { releaseBytes = Math.max(4 * 1024 * 1024, maxBytes / 32), releaseEveryMs = 1000, now = Date.now, release = collect, bound = null } = {}) {
  let evicted = 0;
  let lastRelease = -Infinity;
  const throttled = release
    ? () => {
        const at = now();
        if (at - lastRelease < releaseEveryMs) return;
        evicted = 0;
        lastRelease = at;
        release();
      }
    : null;
  /** @type {LRUCache.Options<string, Sized, unknown>} */ const options = {
    maxSize: Math.max(1, maxBytes),
    sizeCalculation: (entry) => Math.max(1, entry.bytes),
    // An entry larger than the whole budget is simply not kept.
    maxEntrySize: Math.max(1, maxBytes),
    dispose: (entry, _key, reason) => {
      if (reason !== 'evict' || !release) return;
      evicted += entry.bytes;
      if (evicted >= releaseBytes) throttled?.();
    },
  };
  return bound ? new RssBoundedCache(options, bound, throttled) : new LRUCache(options);
}

/** After a burst of garbage, such as the manifest read at start. */
export function releaseGarbage() {
  collect?.();
}

/** Whether evicted entries are released by a GC started on purpose. */
export const releasesEvicted = collect !== null;

/** lru-cache does not recompute the size of the same object set again: taken out and put back, unless the key holds another by now. @param {LRUCache<string, Sized>} cache @param {string} key @param {Sized} entry */
export function recount(cache, key, entry) {
  if (cache.peek(key) !== entry) return;
  cache.delete(key);
  cache.set(key, entry);
}

/** zlib's sync results and slices can be views into a larger allocation, kept alive while the cache counts only the view. @param {Buffer} buf */
export function exact(buf) {
  if (buf.byteOffset === 0 && buf.buffer.byteLength === buf.length) return buf;
  const copy = Buffer.allocUnsafeSlow(buf.length);
  buf.copy(copy);
  return copy;
}

/** The window no larger than the body: the default 4 MiB window allocates far more native memory than a page needs. @param {number} size @param {number} quality @returns {import('node:zlib').BrotliOptions} */
export function brotliOptions(size, quality) {
  const { BROTLI_PARAM_QUALITY, BROTLI_PARAM_LGWIN, BROTLI_PARAM_SIZE_HINT, BROTLI_PARAM_MODE, BROTLI_MODE_TEXT, BROTLI_MIN_WINDOW_BITS, BROTLI_MAX_WINDOW_BITS } = zlib.constants;
  const lgwin = Math.min(BROTLI_MAX_WINDOW_BITS, Math.max(BROTLI_MIN_WINDOW_BITS, Math.ceil(Math.log2(Math.max(2, size)))));
  return { params: { [BROTLI_PARAM_QUALITY]: quality, [BROTLI_PARAM_LGWIN]: lgwin, [BROTLI_PARAM_SIZE_HINT]: size, [BROTLI_PARAM_MODE]: BROTLI_MODE_TEXT } };
}
