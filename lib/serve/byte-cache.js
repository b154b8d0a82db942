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
 * @param {number} maxBytes
 * @param {{ releaseBytes?: number, releaseEveryMs?: number, now?: () => number, release?: (() => void) | null }} [options]
 *   after `releaseBytes` evicted (default: 1/32 of the budget, at least 4 MiB), `release`
 *   (default: a major GC, so that they are freed) is called, at most once every `releaseEveryMs` (1 s)
 * @returns {LRUCache<string, Sized>}
 */
export function createByteCache(maxBytes, { releaseBytes = Math.max(4 * 1024 * 1024, maxBytes / 32), releaseEveryMs = 1000, now = Date.now, release = collect } = {}) {
  let evicted = 0;
  let lastRelease = -Infinity;
  return new LRUCache({
    maxSize: Math.max(1, maxBytes),
    sizeCalculation: (entry) => Math.max(1, entry.bytes),
    // An entry larger than the whole budget is simply not kept.
    maxEntrySize: Math.max(1, maxBytes),
    dispose: (entry, _key, reason) => {
      if (reason !== 'evict' || !release) return;
      evicted += entry.bytes;
      if (evicted < releaseBytes) return;
      const at = now();
      if (at - lastRelease < releaseEveryMs) return;
      evicted = 0;
      lastRelease = at;
      release();
    },
  });
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
