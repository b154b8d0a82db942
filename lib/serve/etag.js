// @ts-check
/**
 * The ETag of a filled page: weak (the bytes differ per encoding, the page
 * does not), made of a hash of the page's file (computed once when the page
 * is loaded) and a 53-bit hash of the texts filled into its slots, so it
 * changes when either changes. Per request it costs a few multiplications per
 * character of the prices: no crypto call.
 */

/**
 * @param {string} pageTag a hash of the page's bytes
 * @param {(string | null)[]} values the price texts, null for a slot with the fallback
 * @param {string} fallbackKey what a fallback counts as (no price text can equal it)
 */
export function filledEtag(pageTag, values, fallbackKey) {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const text = typeof v === 'string' ? v : fallbackKey;
    for (let j = 0; j < text.length; j++) {
      const c = text.charCodeAt(j);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    // the end of a value: ["ab", "c"] and ["a", "bc"] differ
    h1 = Math.imul(h1 ^ 0x10000, 2654435761);
    h2 = Math.imul(h2 ^ 0x10000, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `W/"${pageTag}-${(4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)}"`;
}
