// @ts-check
/** url(...) and "@ import" references in CSS, at the offsets of the URL itself inside its quotes. */

/** @typedef {{ start: number, end: number, value: string }} CssRef */

// The space after @import is optional: @import"x" is valid CSS.
const CSS_REF = /url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)|@import\s*(?:"([^"]*)"|'([^']*)')|\/\*[\s\S]*?(?:\*\/|$)/gi;

/** @param {string} text CSS source @param {number} [offset] added to every position, for CSS inside HTML @returns {CssRef[]} */
export function scanCss(text, offset = 0) {
  /** @type {CssRef[]} */ const refs = [];
  if (!text.includes('url(') && !text.includes('URL(') && !text.includes('@import')) return refs;
  for (const match of text.matchAll(CSS_REF)) {
    if (match[0].startsWith('/*')) continue;
    const groupIndex = [1, 2, 3, 4, 5].find((i) => match[i] !== undefined);
    if (groupIndex === undefined) continue;
    const value = match[groupIndex];
    if (value === '') continue;
    const start = /** @type {number} */ (match.index) + match[0].indexOf(value, groupIndex === 3 ? 4 : 0);
    refs.push({ start: start + offset, end: start + offset + value.length, value: unescapeCss(value) });
  }
  return refs;
}

/** @param {string} value */
function unescapeCss(value) {
  if (!value.includes('\\')) return value;
  return value.replace(/\\([0-9a-fA-F]{1,6})\s?|\\(.)/g, (_, hex, char) => (hex ? String.fromCodePoint(parseInt(hex, 16)) : char));
}
