// @ts-check
import { varintAt } from '../store/fields.js';
import { newRecord } from '../store/records.js';

/**
 * A record as the shared crawl keeps it: one `rec` hash field per URL, its seen-set byte then its record. The first
 * byte is all the Lua scripts read or write: q/r queued or leased, a link or a requisite; Q/R the same with 5 referrers
 * noted; d done, a page; x done, not a page. Then nothing, JSON (queued records, which scripts may fail), or PACKED and
 * fields: a tag byte (field number, plus HEX for a 32-byte hash), then a varint, a varint-length string, or nothing.
 */

export const PACKED = 0x01;
const HEX = 0x40;
const EXTRA = 63;

/** @typedef {'str' | 'uint' | 'json' | 'flag' | 'state' | 'type'} FieldType */
/** @type {[string, FieldType][]} index + 1 is the tag */ const FIELDS = [
  ['state', 'state'], ['kind', 'str'], ['status', 'uint'], ['contentType', 'str'], ['type', 'type'], ['charset', 'str'],
  ['etag', 'str'], ['lastModified', 'str'], ['location', 'str'], ['via', 'str'], ['hops', 'uint'], ['wanted', 'str'],
  ['file', 'str'], ['body', 'str'], ['scan', 'str'], ['bytes', 'uint'], ['sha256', 'str'], ['error', 'json'],
  ['change', 'str'], ['compare', 'str'], ['compressed', 'json'], ['stale', 'flag'], ['aliasOf', 'str'], ['render', 'json'],
];
/** The charset is the content type's `charset=` parameter, as written there. */
const CHARSET_OF_TYPE = FIELDS.length + 1;
const STATES = ['queued', 'done', 'failed', 'redirect', 'gone'];
const TYPES = ['html', 'css', 'other'];
const TAG = new Map(FIELDS.map(([name], i) => [name, i + 1]));
const SKIPPED = new Set(['key', 'referrers']);
const HEX64 = /^[0-9a-f]{64}$/;

/** @param {string | undefined} contentType */
function charsetParam(contentType) {
  const match = contentType ? /;\s*charset=([^;\s]+)/i.exec(contentType) : null;
  return match ? match[1] : undefined;
}

/** @param {number[]} out @param {number} n */
function varint(out, n) {
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
}

/** @param {number[]} out @param {string} text */
function bytes(out, text) {
  const buffer = Buffer.from(text, 'utf8');
  varint(out, buffer.length);
  for (const byte of buffer) out.push(byte);
}

/** @param {import('../store/records.js').PageRecord} record @returns {string} q, r, d or x */
export function seenByte(record) {
  if (record.state === 'queued') return record.kind === 'navigation' ? 'q' : 'r';
  return record.state === 'done' ? 'd' : 'x';
}

/** Without its first byte. @param {import('../store/records.js').PageRecord} record @returns {Buffer} */
export function packRecord(record) {
  /** @type {Record<string, unknown>} */ const kept = {};
  for (const [name, value] of Object.entries(record)) {
    if (value === undefined || SKIPPED.has(name)) continue;
    if ((name === 'kind' && value === 'navigation') || (name === 'hops' && value === 0) || (name === 'stale' && value === false)) continue;
    kept[name] = value;
  }
  if (record.state === 'queued') return Buffer.from(JSON.stringify(kept), 'utf8');
  /** @type {number[]} */ const out = [PACKED];
  /** @type {Record<string, unknown>} */ const extra = {};
  for (const [name, value] of Object.entries(kept)) {
    const tag = TAG.get(name);
    const type = tag ? FIELDS[tag - 1][1] : undefined;
    if (!tag || !type) {
      extra[name] = value;
    } else if (name === 'charset' && value === charsetParam(record.contentType)) {
      out.push(CHARSET_OF_TYPE);
    } else if (type === 'state' || type === 'type') {
      const index = (type === 'state' ? STATES : TYPES).indexOf(/** @type {string} */ (value));
      if (index < 0) extra[name] = value;
      else { out.push(tag); varint(out, index); }
    } else if (type === 'uint') {
      if (Number.isSafeInteger(value) && /** @type {number} */ (value) >= 0) { out.push(tag); varint(out, /** @type {number} */ (value)); } else extra[name] = value;
    } else if (type === 'flag') {
      if (value === true) out.push(tag); else extra[name] = value;
    } else if (type === 'json') {
      out.push(tag);
      bytes(out, JSON.stringify(value));
    } else if (typeof value !== 'string') {
      extra[name] = value;
    } else if (HEX64.test(value)) {
      out.push(tag | HEX);
      for (let i = 0; i < 64; i += 2) out.push(parseInt(value.slice(i, i + 2), 16));
    } else {
      out.push(tag);
      bytes(out, value);
    }
  }
  if (Object.keys(extra).length > 0) {
    out.push(EXTRA);
    bytes(out, JSON.stringify(extra));
  }
  return Buffer.from(out);
}

/** First byte and record. @param {import('../store/records.js').PageRecord} record */
export function storedValue(record) {
  return Buffer.concat([Buffer.from(seenByte(record), 'latin1'), packRecord(record)]);
}


/** @param {Buffer} value with its first byte @param {string} key @returns {import('../store/records.js').PageRecord} */
export function decodeStored(value, key) {
  const first = String.fromCharCode(value[0]);
  const record = newRecord(key, first === 'r' || first === 'R' ? 'requisite' : 'navigation', null);
  record.referrers = undefined;
  if (value.length <= 1) return record;
  if (value[1] !== PACKED) {
    const parsed = JSON.parse(value.subarray(1).toString('utf8'));
    if (parsed.kind === undefined) parsed.kind = 'navigation';
    return Object.assign(record, parsed);
  }
  /** @type {Record<string, unknown>} */ const fields = {};
  let at = 2;
  while (at < value.length) {
    const tag = value[at++];
    if (tag === CHARSET_OF_TYPE) {
      fields.charset = true;
      continue;
    }
    if (tag === EXTRA) {
      const [length, start] = varintAt(value, at);
      Object.assign(fields, JSON.parse(value.subarray(start, start + length).toString('utf8')));
      at = start + length;
      continue;
    }
    const [name, type] = FIELDS[(tag & ~HEX) - 1] ?? [];
    if (!name) throw new Error(`unknown field ${tag} in a packed record`);
    if (tag & HEX) {
      fields[name] = value.subarray(at, at + 32).toString('hex');
      at += 32;
    } else if (type === 'flag') {
      fields[name] = true;
    } else if (type === 'uint' || type === 'state' || type === 'type') {
      const [n, next] = varintAt(value, at);
      fields[name] = type === 'state' ? STATES[n] : type === 'type' ? TYPES[n] : n;
      at = next;
    } else {
      const [length, start] = varintAt(value, at);
      const text = value.subarray(start, start + length).toString('utf8');
      fields[name] = type === 'json' ? JSON.parse(text) : text;
      at = start + length;
    }
  }
  if (!('kind' in fields)) fields.kind = 'navigation';
  if (fields.charset === true) fields.charset = charsetParam(/** @type {string | undefined} */ (fields.contentType));
  return Object.assign(record, fields);
}
