// @ts-check
/**
 * A price endpoint's answer: text/plain, or JSON (`{ "price": … }`, or an object by SKU for a batch); anything else is invalid.
 * Security: price text loses invalid UTF-8, control and bidi-override characters; past `maxPriceLength` it is invalid.
 */
import { PrerenderError } from '../errors.js';
import { parseJsonNumbersAsText } from './parse.js';

/** The endpoint answered, but not with something usable as a price. */
export class InvalidPriceAnswerError extends PrerenderError {
  code = 'PRICE_ANSWER_INVALID';
}

const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffd]/g;
const SPACES = /[\t\n\r]+/g;

/** @param {string} text @param {number} maxLength @returns {string | null} null for "no price" (empty) */
export function cleanPriceText(text, maxLength) {
  const clean = text.replace(SPACES, ' ').replace(CONTROLS, '').trim();
  if (clean === '') return null;
  if (clean.length > maxLength) throw new InvalidPriceAnswerError(`price text longer than ${maxLength} characters`);
  return clean;
}

/** The media type and charset of a Content-Type, lower case. @param {string | string[] | undefined} header */
export function mediaType(header) {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return { type: '', charset: null };
  const [type, ...params] = value.toLowerCase().split(';');
  let charset = null;
  for (const p of params) {
    const m = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/.exec(p);
    if (m) charset = m[1];
  }
  return { type: type.trim(), charset };
}

/** Invalid UTF-8 bytes are dropped, never shown as U+FFFD. @param {Buffer} body @param {string | null} charset */
function decode(body, charset) {
  const label = charset ?? 'utf-8';
  let decoder;
  try {
    decoder = new TextDecoder(label, { fatal: true });
  } catch {
    throw new InvalidPriceAnswerError(`unknown charset ${JSON.stringify(label).slice(0, 40)}`);
  }
  try {
    return decoder.decode(body);
  } catch {
    return new TextDecoder(label).decode(body).replaceAll('\ufffd', '');
  }
}

/** @param {Buffer} body @param {string | string[] | undefined} contentType @returns {{ json: boolean, text: string }} */
function readBody(body, contentType) {
  const { type, charset } = mediaType(contentType);
  const json = type === 'application/json' || type.endsWith('+json');
  if (!json && type !== 'text/plain') {
    throw new InvalidPriceAnswerError(`answer is ${type ? JSON.stringify(type) : 'without Content-Type'}, not text/plain or JSON`);
  }
  const text = decode(body, json && charset === null ? 'utf-8' : charset).trim();
  // A text/plain answer written as JSON is read as JSON too.
  return { json: json || text.startsWith('{'), text };
}

/** @param {string} text */
function parseJson(text) {
  try {
    // Numbers as written: { "price": 12.50 } is "12.50", not "12.5".
    return parseJsonNumbersAsText(text);
  } catch {
    throw new InvalidPriceAnswerError('answer is not valid JSON');
  }
}

/** @param {unknown} value text, number, null, or with unwrap { price } @param {number} maxLength @param {boolean} [unwrap] @returns {string | null} */
function jsonPrice(value, maxLength, unwrap = false) {
  if (unwrap && value !== null && typeof value === 'object' && !Array.isArray(value)) value = /** @type {{ price?: unknown }} */ (value).price;
  if (value === undefined || value === null) return null;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string') return cleanPriceText(value, maxLength);
  throw new InvalidPriceAnswerError('JSON price is not text or a number');
}

/** Null for "no price". @param {Buffer} body @param {string | string[] | undefined} contentType @param {number} maxLength @returns {string | null} */
export function readSingleAnswer(body, contentType, maxLength) {
  const { json, text } = readBody(body, contentType);
  if (!json) return cleanPriceText(text, maxLength);
  const data = parseJson(text);
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new InvalidPriceAnswerError('JSON answer is not an object');
  return jsonPrice(data.price ?? null, maxLength);
}

/**
 * SKUs it does not list have no price; a bad value fails only its SKU.
 * @param {Buffer} body @param {string | string[] | undefined} contentType @param {string[]} skus @param {number} maxLength
 * @returns {Map<string, string | null | InvalidPriceAnswerError>}
 */
export function readBatchAnswer(body, contentType, skus, maxLength) {
  const { json, text } = readBody(body, contentType);
  if (!json) throw new InvalidPriceAnswerError('a batch answer ({skus} in the template) must be a JSON object by SKU');
  const data = parseJson(text);
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new InvalidPriceAnswerError('batch JSON answer is not an object by SKU');
  /** @type {Map<string, string | null | InvalidPriceAnswerError>} */ const out = new Map();
  for (const sku of skus) {
    const value = Object.hasOwn(data, sku) ? data[sku] : null;
    try {
      out.set(sku, jsonPrice(value, maxLength, true));
    } catch (error) {
      out.set(sku, /** @type {InvalidPriceAnswerError} */ (error));
    }
  }
  return out;
}
