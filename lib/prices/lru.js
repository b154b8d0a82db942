// @ts-check
import { LRUCache } from 'lru-cache';

/** Entries are fresh, then stale but served (stale-while-revalidate), then gone. @template V */
export class TtlCache {
  /** @type {LRUCache<string, { value: V, freshUntil: number, staleUntil: number }>} */ #lru;
  #now;

  /** @param {{ max: number, now?: () => number }} options */
  constructor({ max, now = Date.now }) {
    this.#lru = new LRUCache({ max: Math.max(1, max) });
    this.#now = now;
  }

  get size() {
    return this.#lru.size;
  }

  /** @param {string} key @returns {{ value: V, stale: boolean } | undefined} undefined when absent or past its stale limit */
  get(key) {
    const entry = this.#lru.get(key);
    if (!entry) return undefined;
    const now = this.#now();
    if (now >= entry.staleUntil) {
      this.#lru.delete(key);
      return undefined;
    }
    return { value: entry.value, stale: now >= entry.freshUntil };
  }

  /** @param {string} key @param {V} value @param {number} ttlMs fresh for this long @param {number} [staleMs] then served while refreshed */
  set(key, value, ttlMs, staleMs = 0) {
    const now = this.#now();
    this.#lru.set(key, { value, freshUntil: now + ttlMs, staleUntil: now + ttlMs + staleMs });
  }

  clear() {
    this.#lru.clear();
  }
}
