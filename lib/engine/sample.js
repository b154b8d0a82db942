// @ts-check

/**
 * `preview --sample <n>`: at most PER_SHAPE pages of each URL shape, n in all, and the roots. A shape is a URL's
 * directory, or its path, parameter names and lower-case word values (a=commit, not h=1a2b3c).
 */

export const PER_SHAPE = 2;

/** A value that names an action: a short lower-case word (commit, edit), not an id, hash or title. */
export const WORD = /^[a-z_]{1,16}$/;

/** @param {string} key canonical URL */
export function shapeOf(key) {
  const url = new URL(key);
  if (url.search.length < 2) return `${url.origin}${url.pathname.slice(0, url.pathname.lastIndexOf('/') + 1)}`;
  const params = [...new URLSearchParams(url.search.slice(1).replace(/;/g, '&'))].map(([name, value]) => (WORD.test(value) ? `${name}=${value}` : name));
  return `${url.origin}${url.pathname}?${params.join('&')}`;
}

/** @param {number} max pages fetched through links @returns {{ take(key: string): boolean }} take: the same answer each time */
export function createSampler(max) {
  /** @type {Map<string, number>} */ const shapes = new Map();
  /** @type {Set<string>} */ const taken = new Set();
  return {
    take(key) {
      if (taken.has(key)) return true;
      if (taken.size >= max) return false;
      const shape = shapeOf(key);
      const count = shapes.get(shape) ?? 0;
      if (count >= PER_SHAPE) return false;
      shapes.set(shape, count + 1);
      taken.add(key);
      return true;
    },
  };
}
