// @ts-check
/** Price text to page bytes: HTML-escaped, and for pages not labelled UTF-8 non-ASCII as numeric references, the same in any ASCII-compatible charset. */

import { textHash } from './etag.js';

const HTML_SPECIAL = /[&<>"']/g;
/** @type {Record<string, string>} */ const ENTITY = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** @param {string} text */
export function escapeHtml(text) {
  return text.replace(HTML_SPECIAL, (c) => ENTITY[c]);
}

/** @param {string} text @param {boolean} asciiOnly @returns {Buffer} */
export function encodePriceText(text, asciiOnly) {
  const escaped = escapeHtml(text);
  if (!asciiOnly) return Buffer.from(escaped, 'utf8');
  if (/^[\x00-\x7f]*$/.test(escaped)) return Buffer.from(escaped, 'latin1');
  let out = '';
  for (const ch of escaped) {
    const cp = /** @type {number} */ (ch.codePointAt(0));
    out += cp < 0x80 ? ch : `&#${cp};`;
  }
  return Buffer.from(out, 'latin1');
}

/** Is this Content-Type labelled UTF-8? @param {string} contentType */
export function isUtf8Type(contentType) {
  return /;\s*charset\s*=\s*"?utf-?8"?\s*(?:;|$)/i.test(contentType);
}

/** @typedef {{ buf: Buffer, hash: import('./etag.js').TextHash }} EncodedPrice its bytes and its hash for the ETag */

/** Prices repeat a lot: escaping and hashing them need not. */
export class PriceEncoder {
  /** @type {Map<string, EncodedPrice>} */ #utf8 = new Map();
  /** @type {Map<string, EncodedPrice>} */ #ascii = new Map();
  #max;
  /** @param {number} [max] entries per charset before the memo starts over */
  constructor(max = 20_000) {
    this.#max = max;
  }
  /** @param {string} text @param {boolean} asciiOnly @returns {EncodedPrice} */
  entry(text, asciiOnly) {
    const memo = asciiOnly ? this.#ascii : this.#utf8;
    let found = memo.get(text);
    if (found === undefined) {
      found = { buf: encodePriceText(text, asciiOnly), hash: textHash(text) };
      if (memo.size >= this.#max) memo.clear();
      memo.set(text, found);
    }
    return found;
  }
  /** @param {string} text @param {boolean} asciiOnly */
  encode(text, asciiOnly) {
    return this.entry(text, asciiOnly).buf;
  }
}
