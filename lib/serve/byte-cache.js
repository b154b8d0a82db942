// @ts-check
/**
 * The one memory budget of the server: a byte-bounded LRU (lru-cache with
 * maxSize / sizeCalculation) holding every cached variant: pre-split pages
 * with slots (and their deflated parts), hot plain files (identity, gzip, br),
 * brotli bodies of filled pages. Each entry says what it costs in `bytes`; an
 * entry that grows (a compressed form added) is set again so it is counted.
 */
import { LRUCache } from 'lru-cache';
import v8 from 'node:v8';
import vm from 'node:vm';
import zlib from 'node:zlib';

/** @typedef {{ bytes: number }} Sized */

/**
 * What an entry costs besides its bytes: its objects on the JS heap and the
 * cache's own bookkeeping (measured: 1.6 to 2.2 KiB of heap a page, its Buffer objects included), and each Buffer it
 * holds (its ArrayBuffer, backing store and allocation).
 */
export const ENTRY_OVERHEAD = 1536;
export const BUFFER_OVERHEAD = 160;

/**
 * A major GC, started without waiting for it, or null when the runtime does
 * not let us have one. Evicted Buffers are freed only when V8 collects their
 * objects, which external-memory pressure alone triggers only every several
 * tens of MB (measured: 20 to 60 MB of evicted pages held at a 128 MiB
 * budget, more at 512 MiB).
 * @type {(() => void) | null}
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
 * @typedef {object} RssBound
 * @property {number} maxRss  resident bytes the process should stay under
 * @property {() => number} [rss]  the process's resident bytes now (default: process.memoryUsage.rss)
 * @property {number} [checkEveryBytes]  how many bytes cached between two looks at the RSS (default 1 MiB)
 * @property {(message: string) => void} [onFloor]  said once when the cache is down to its floor and the process is still over
 */

/**
 * An LRU by bytes that also holds fewer bytes when the process as a whole
 * grows past `maxRss`. What the cache counts is what its entries hold; what
 * it cannot count (V8's free heap pages, the allocator's free lists and
 * fragmentation, which grow as entries are replaced) only shows in the RSS.
 * So, every `checkEveryBytes` cached, it looks at the RSS: past `maxRss`, it
 * takes the growth since its last look off its limit (never below 1/16 of
 * its size) and evicts down to it, and the memory so freed is reused by the
 * next entries instead of more being asked of the system. A growth is taken
 * off once: freed memory the allocator keeps still counts in the RSS, and
 * taking the same excess off at every look would empty the cache. Well
 * under `maxRss` again (a burst of requests over), the limit grows back.
 * @template {Sized} V
 * @extends {LRUCache<string, V>}
 */
export class RssBoundedCache extends LRUCache {
  #limit;
  #floor;
  #maxRss;
  #rss;
  #checkEvery;
  #onFloor;
  #sinceCheck = 0;
  /** RSS when the limit was last lowered (a growth is taken off once). */
  #lastHigh = 0;
  #saidFloor = false;
  #release;

  /**
   * @param {LRUCache.Options<string, V, unknown>} options
   * @param {RssBound} bound
   * @param {(() => void) | null} release
   */
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

  /** The bytes the cache holds at most now (at most maxSize). */
  get limit() {
    return this.#limit;
  }

  /**
   * @param {string} key
   * @param {V | undefined} value
   * @param {LRUCache.SetOptions<string, V, unknown>} [options]
   */
  set(key, value, options) {
    super.set(key, value, options);
    const bytes = value?.bytes ?? 0;
    this.#sinceCheck += bytes;
    if (this.#sinceCheck >= this.#checkEvery) {
      this.#sinceCheck = 0;
      this.#check();
    }
    // An entry larger than what the cache may hold now is not kept (evicting for it would empty the
    // cache, then drop it too). Counted above all the same, so that a cache at its floor still looks.
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
    // Well under the bound again (rare: the allocator keeps most of what it took): room for more.
    const slack = Math.min(32 * 1024 * 1024, this.maxSize / 8);
    if (rss < this.#maxRss - slack) {
      this.#lastHigh = 0;
      if (this.#limit < this.maxSize) this.#limit = Math.min(this.maxSize, this.#limit + (this.#maxRss - slack - rss) / 2);
    }
  }

  /**
   * Starts over from the RSS of now: the limit back to maxSize, and only a
   * growth past the present RSS (or the bound, whichever is higher) taken off.
   * For after the cache was emptied on purpose (a new manifest: its pages
   * dropped, the new one parsed), when the RSS says nothing of what the cache held.
   */
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

/** @param {number} bytes */
const mb = (bytes) => Math.round(bytes / 1048576);

/**
 * @param {number} maxBytes
 * @param {{ releaseBytes?: number, releaseEveryMs?: number, now?: () => number, release?: (() => void) | null, bound?: RssBound | null }} [options]
 *   after `releaseBytes` evicted (default: 1/32 of the budget, at least 4 MiB), `release`
 *   (default: a major GC, so that they are freed) is called, at most once every `releaseEveryMs` (1 s);
 *   `bound`: also keep the process's RSS under `bound.maxRss` (RssBoundedCache)
 * @returns {LRUCache<string, Sized>}
 */
export function createByteCache(maxBytes, { releaseBytes = Math.max(4 * 1024 * 1024, maxBytes / 32), releaseEveryMs = 1000, now = Date.now, release = collect, bound = null } = {}) {
  let evicted = 0;
  let lastRelease = -Infinity;
  /** `release`, at most once every `releaseEveryMs`. */
  const throttled = release
    ? () => {
        const at = now();
        if (at - lastRelease < releaseEveryMs) return;
        evicted = 0;
        lastRelease = at;
        release();
      }
    : null;
  /** @type {LRUCache.Options<string, Sized, unknown>} */
  const options = {
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

/** A major GC started now, when the runtime lets us (see `collect`): after a burst of garbage, such as the manifest read at start. */
export function releaseGarbage() {
  collect?.();
}

/** Whether evicted entries are released by a GC started on purpose (see createByteCache). */
export const releasesEvicted = collect !== null;

/**
 * Counts an entry again after it grew. (lru-cache does not recompute the
 * size when the same object is set again under its key: it must be taken out
 * and put back.) Does nothing when the key holds another entry by now.
 * @param {LRUCache<string, Sized>} cache
 * @param {string} key
 * @param {Sized} entry
 */
export function recount(cache, key, entry) {
  if (cache.peek(key) !== entry) return;
  cache.delete(key);
  cache.set(key, entry);
}

/**
 * A Buffer that owns exactly its bytes. zlib's sync results (and slices) can
 * be views into a much larger allocation, which would keep it all alive while
 * the cache counts only the view: 20,000 small deflated parts once pinned
 * 16 KiB each.
 * @param {Buffer} buf
 */
export function exact(buf) {
  if (buf.byteOffset === 0 && buf.buffer.byteLength === buf.length) return buf;
  const copy = Buffer.allocUnsafeSlow(buf.length);
  buf.copy(copy);
  return copy;
}

/**
 * Brotli options for a body of `size` bytes: the window no larger than the
 * body (the default 4 MiB window makes every compression allocate far more
 * native memory than a page needs).
 * @param {number} size
 * @param {number} quality
 * @returns {import('node:zlib').BrotliOptions}
 */
export function brotliOptions(size, quality) {
  const { BROTLI_PARAM_QUALITY, BROTLI_PARAM_LGWIN, BROTLI_PARAM_SIZE_HINT, BROTLI_PARAM_MODE, BROTLI_MODE_TEXT, BROTLI_MIN_WINDOW_BITS, BROTLI_MAX_WINDOW_BITS } = zlib.constants;
  const lgwin = Math.min(BROTLI_MAX_WINDOW_BITS, Math.max(BROTLI_MIN_WINDOW_BITS, Math.ceil(Math.log2(Math.max(2, size)))));
  return { params: { [BROTLI_PARAM_QUALITY]: quality, [BROTLI_PARAM_LGWIN]: lgwin, [BROTLI_PARAM_SIZE_HINT]: size, [BROTLI_PARAM_MODE]: BROTLI_MODE_TEXT } };
}
