// @ts-check
/**
 * A filled page's ETag: weak, since the bytes differ per encoding; a hash of the page's file and a 64-bit hash of the texts
 * in its slots. Each price text is hashed once; per request the slots' hashes are only combined: no crypto call.
 */

/** @typedef {{ h1: number, h2: number }} TextHash */

/** Its length included, so ["ab", "c"] and ["a", "bc"] differ once combined. @param {string} text @returns {TextHash} */
export function textHash(text) {
  let h1 = 0xdeadbeef ^ text.length;
  let h2 = 0x41c6ce57 ^ text.length;
  for (let j = 0; j < text.length; j++) {
    const c = text.charCodeAt(j);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return { h1, h2 };
}

/** @param {string} pageTag a hash of the page's bytes @param {TextHash[]} hashes one per slot, in order */
export function combineEtag(pageTag, hashes) {
  let h1 = 0x9e3779b9 ^ hashes.length;
  let h2 = 0x85ebca6b ^ hashes.length;
  for (let i = 0; i < hashes.length; i++) {
    const h = hashes[i];
    h1 = Math.imul(h1 ^ h.h1, 2654435761);
    h1 = (h1 << 13) | (h1 >>> 19);
    h2 = Math.imul(h2 ^ h.h2, 1597334677);
    h2 = (h2 << 15) | (h2 >>> 17);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  // fixed width, so that the two halves cannot run into each other
  return `W/"${pageTag}-${(h1 >>> 0).toString(36).padStart(7, '0')}${(h2 >>> 0).toString(36).padStart(7, '0')}"`;
}

/** @param {string} pageTag @param {(string | null)[]} values null for a slot with the fallback @param {string} fallbackKey no price text can equal it */
export function filledEtag(pageTag, values, fallbackKey) {
  return combineEtag(pageTag, values.map((v) => textHash(typeof v === 'string' ? v : fallbackKey)));
}
