// @ts-check
/**
 * A compact binary form for flat objects of known fields. Each field present is a tag byte (its index, 1 to 63) and a
 * value: uint varint; str varint length + UTF-8; hex 32 bytes; enum one byte; flag nothing; json length + JSON; common
 * a number in a table learnt in memory, so only the codec that wrote bytes reads them. A value that does not fit its
 * form goes as JSON with the 0x40 bit set; unknown properties go as JSON under tag 63.
 * @typedef {'uint' | 'str' | 'hex' | 'json' | 'flag' | 'common' | readonly string[]} FieldKind
 * @typedef {readonly (readonly [string, FieldKind])[]} FieldTable
 */

const AS_JSON = 0x40;
const EXTRA = 63;
/** Each ASCII code's hex digit value (lower-case digits only); 16 for anything else. */
const HEX_DIGIT = new Uint8Array(128).fill(16);
for (let i = 0; i < 10; i++) HEX_DIGIT[48 + i] = i;
for (let i = 0; i < 6; i++) HEX_DIGIT[97 + i] = 10 + i;
/** Text shorter than this is tried as ASCII, copied without calling into C++. */
const SHORT_TEXT = 256;
const MAX_COMMON = 4096;

export class FieldCodec {
  /** @type {Buffer} */ #out = Buffer.allocUnsafeSlow(4096);
  #at = 0;
  /** @type {Map<string, number>} the 'common' strings, numbered */ #common = new Map();
  /** @type {string[]} */ #commonList = [];
  /** @type {Map<string, number>} */ #index;
  /** pick()'s fields wanted, by index (reused: pick is synchronous) */
  #mask = new Uint8Array(EXTRA);

  /** @param {FieldTable} fields @param {{ skip?: string[], extra?: boolean }} [options] skip: never written; extra: keep unknown properties */
  constructor(fields, { skip = [], extra = false } = {}) {
    if (fields.length >= EXTRA) throw new Error('too many fields');
    this.fields = fields;
    this.known = new Set([...fields.map(([name]) => name), ...skip]);
    /** @type {Map<string, number>} each field's index in the table */
    this.#index = new Map(fields.map(([name], i) => [name, i]));
    this.#names = fields.map(([name]) => name);
    this.#kinds = fields.map(([, kind]) => kind);
    this.extra = extra;
  }

  /** @type {string[]} the fields' names, by index */ #names;
  /** @type {FieldKind[]} the fields' kinds, by index */ #kinds;

  /** A view of a scratch buffer, valid until the next call. @param {Record<string, any>} object @param {string} [omit] kept another way @returns {Buffer} */
  encode(object, omit) {
    this.#at = 0;
    const names = this.#names;
    const kinds = this.#kinds;
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      const kind = kinds[i];
      const value = object[name];
      if (value === undefined || (kind === 'flag' && value === false) || name === omit) continue;
      const tag = i + 1;
      if (kind === 'str' && typeof value === 'string') {
        this.#byte(tag);
        this.#string(value);
      } else if (kind === 'uint' && Number.isSafeInteger(value) && value >= 0) {
        this.#byte(tag);
        this.#varint(value);
      } else if (kind === 'hex' && typeof value === 'string' && value.length === 64 && this.#hex(tag, value)) {
        // written by #hex
      } else if (kind === 'flag' && value === true) {
        this.#byte(tag);
      } else if (kind === 'common' && typeof value === 'string' && this.#number(value) >= 0) {
        this.#byte(tag);
        this.#varint(this.#number(value));
      } else if (kind === 'json') {
        this.#byte(tag);
        this.#string(JSON.stringify(value));
      } else if (Array.isArray(kind) && kind.includes(value)) {
        this.#byte(tag);
        this.#byte(kind.indexOf(value));
      } else {
        this.#byte(tag | AS_JSON);
        this.#string(JSON.stringify(value));
      }
    }
    if (this.extra) {
      /** @type {Record<string, unknown> | null} */ let rest = null;
      for (const name of Object.keys(object)) {
        if (!this.known.has(name) && object[name] !== undefined) (rest ??= {})[name] = object[name];
      }
      if (rest) {
        this.#byte(EXTRA);
        this.#string(JSON.stringify(rest));
      }
    }
    return this.#out.subarray(0, this.#at);
  }

  /** @template {Record<string, any>} T @param {Uint8Array} bytes @param {T} into @returns {T} */
  decode(bytes, into) {
    const buffer = asBuffer(bytes);
    let at = 0;
    while (at < buffer.length) at = this.#field(buffer, at, /** @type {Record<string, any>} */ (into));
    return into;
  }

  /** @template {Record<string, any>} T @param {Uint8Array} bytes @param {readonly string[]} wanted @param {T} into @returns {T} */
  pick(bytes, wanted, into) {
    const buffer = asBuffer(bytes);
    const target = /** @type {Record<string, any>} */ (into);
    const mask = this.#mask;
    mask.fill(0);
    let left = 0;
    // A name not in the table can only be among the extra properties, which come last.
    let extra = false;
    for (const name of wanted) {
      const index = this.#index.get(name);
      if (index === undefined) extra = this.extra;
      else if (mask[index] === 0) {
        mask[index] = 1;
        left++;
      }
    }
    let at = 0;
    while (at < buffer.length && (left > 0 || extra)) {
      const tag = buffer[at];
      if (tag === EXTRA) {
        const extra = this.decode(buffer.subarray(at), /** @type {Record<string, any>} */ ({}));
        for (const name of wanted) if (Object.hasOwn(extra, name)) target[name] = extra[name];
        break;
      }
      const index = (tag & ~AS_JSON) - 1;
      if (mask[index] === 1) {
        at = this.#field(buffer, at, target);
        left--;
      } else {
        at = this.#skip(buffer, at);
      }
    }
    return into;
  }

  /** @param {Buffer} buffer @param {number} at its tag @param {Record<string, any>} target @returns {number} where the next field starts */
  #field(buffer, at, target) {
    const tag = buffer[at++];
    if (tag === EXTRA) {
      const length = varint(buffer, at);
      const start = varintEnd;
      Object.assign(target, JSON.parse(buffer.toString('utf8', start, start + length)));
      return start + length;
    }
    const field = this.fields[(tag & ~AS_JSON) - 1];
    if (!field) throw new Error(`unknown field ${tag} in packed bytes`);
    const name = field[0];
    const kind = field[1];
    if (tag & AS_JSON) {
      const length = varint(buffer, at);
      const start = varintEnd;
      target[name] = JSON.parse(buffer.toString('utf8', start, start + length));
      return start + length;
    }
    if (kind === 'hex') {
      target[name] = buffer.toString('hex', at, at + 32);
      return at + 32;
    }
    if (kind === 'flag') {
      target[name] = true;
      return at;
    }
    if (kind === 'uint') {
      target[name] = varint(buffer, at);
      return varintEnd;
    }
    if (kind === 'common') {
      target[name] = this.#commonList[varint(buffer, at)];
      return varintEnd;
    }
    if (Array.isArray(kind)) {
      target[name] = kind[buffer[at]];
      return at + 1;
    }
    const length = varint(buffer, at);
    const start = varintEnd;
    const text = buffer.toString('utf8', start, start + length);
    target[name] = kind === 'json' ? JSON.parse(text) : text;
    return start + length;
  }

  /** @param {Buffer} buffer @param {number} at its tag */
  #skip(buffer, at) {
    const tag = buffer[at++];
    const field = this.fields[(tag & ~AS_JSON) - 1];
    if (!field) throw new Error(`unknown field ${tag} in packed bytes`);
    const kind = field[1];
    if (tag & AS_JSON || kind === 'str' || kind === 'json') return varint(buffer, at) + varintEnd;
    if (kind === 'hex') return at + 32;
    if (kind === 'flag') return at;
    if (kind === 'uint' || kind === 'common') {
      varint(buffer, at);
      return varintEnd;
    }
    return at + 1; // an enum
  }

  /** A common string's number (a new one while there is room), or -1. @param {string} value */
  #number(value) {
    let n = this.#common.get(value);
    if (n === undefined) {
      if (this.#commonList.length >= MAX_COMMON) return -1;
      n = this.#commonList.length;
      this.#common.set(value, n);
      this.#commonList.push(value);
    }
    return n;
  }

  /** @param {number} n */
  #room(n) {
    if (this.#at + n <= this.#out.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(this.#out.length * 2, this.#at + n));
    this.#out.copy(next, 0, 0, this.#at);
    this.#out = next;
  }

  /** @param {number} byte */
  #byte(byte) {
    this.#room(1);
    this.#out[this.#at++] = byte;
  }

  /** @param {number} n */
  #varint(n) {
    this.#room(8);
    while (n >= 0x80) {
      this.#out[this.#at++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.#out[this.#at++] = n;
  }

  /** A tag and 32 bytes; false (nothing written) unless `text` is 64 lower-case hex digits. @param {number} tag @param {string} text 64 characters */
  #hex(tag, text) {
    this.#room(33);
    const out = this.#out;
    const at = this.#at;
    for (let i = 0; i < 32; i++) {
      const a = text.charCodeAt(2 * i);
      const b = text.charCodeAt(2 * i + 1);
      const high = a < 128 ? HEX_DIGIT[a] : 16;
      const low = b < 128 ? HEX_DIGIT[b] : 16;
      if ((high | low) > 15) return false;
      out[at + 1 + i] = (high << 4) | low;
    }
    out[at] = tag;
    this.#at = at + 33;
    return true;
  }

  /** @param {string} text */
  #string(text) {
    // Short ASCII text (URLs, file names, validators) is copied here: two calls into C++ cost more.
    if (text.length < SHORT_TEXT) {
      const length = text.length;
      this.#room(length + 2);
      const out = this.#out;
      let at = this.#at + (length < 0x80 ? 1 : 2);
      let i = 0;
      for (; i < length; i++) {
        const c = text.charCodeAt(i);
        if (c >= 0x80) break;
        out[at++] = c;
      }
      if (i === length) {
        if (length < 0x80) out[this.#at] = length;
        else {
          out[this.#at] = (length & 0x7f) | 0x80;
          out[this.#at + 1] = length >> 7;
        }
        this.#at = at;
        return;
      }
    }
    const length = Buffer.byteLength(text, 'utf8');
    this.#varint(length);
    this.#room(length);
    this.#at += this.#out.write(text, this.#at, length, 'utf8');
  }
}

/** @param {Uint8Array} bytes */
function asBuffer(bytes) {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Where the varint `varint()` read last ends (a module variable: no pair allocated per read). */
let varintEnd = 0;

/** A varint (7 bits a byte, low first); where it ends is left in `varintEnd`. @param {Buffer} buffer @param {number} at */
function varint(buffer, at) {
  let n = 0;
  let scale = 1;
  for (;;) {
    const byte = buffer[at++];
    if (byte === undefined) throw new Error('truncated packed bytes');
    n += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      varintEnd = at;
      return n;
    }
    scale *= 0x80;
  }
}

/** @param {Buffer} buffer @param {number} at @returns {[number, number]} value, next position */
export function varintAt(buffer, at) {
  const n = varint(buffer, at);
  return [n, varintEnd];
}
