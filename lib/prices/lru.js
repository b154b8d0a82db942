// @ts-check
/**
 * A bounded LRU cache whose entries expire. Insertion order of a Map is the
 * recency order: a hit moves the key to the end, eviction takes the first.
 * @template V
 */
export class TtlCache {
  /** @type {Map<string, { value: V, freshUntil: number, staleUntil: number }>} */
  #map = new Map();
  #max;
  #now;

  /**
   * @param {{ max: number, now?: () => number }} options
   */
  constructor({ max, now = Date.now }) {
    this.#max = Math.max(1, max);
    this.#now = now;
  }

  get size() {
    return this.#map.size;
  }

  /**
   * @param {string} key
   * @returns {{ value: V, stale: boolean } | undefined} undefined when absent or past its stale limit
   */
  get(key) {
    const entry = this.#map.get(key);
    if (!entry) return undefined;
    const now = this.#now();
    if (now >= entry.staleUntil) {
      this.#map.delete(key);
      return undefined;
    }
    this.#map.delete(key);
    this.#map.set(key, entry);
    return { value: entry.value, stale: now >= entry.freshUntil };
  }

  /**
   * @param {string} key
   * @param {V} value
   * @param {number} ttlMs fresh for this long
   * @param {number} [staleMs] then still served (while being refreshed) for this long
   */
  set(key, value, ttlMs, staleMs = 0) {
    const now = this.#now();
    this.#map.delete(key);
    this.#map.set(key, { value, freshUntil: now + ttlMs, staleUntil: now + ttlMs + staleMs });
    while (this.#map.size > this.#max) {
      const oldest = this.#map.keys().next().value;
      this.#map.delete(/** @type {string} */ (oldest));
    }
  }

  clear() {
    this.#map.clear();
  }
}
