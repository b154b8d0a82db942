// @ts-check

/**
 * Phase two's name table in shared memory: one copy for all threads, no JS object per URL. Open addressing over UTF-8 keys (FNV-1a);
 * data: entries of key length u32, value length u32, kind u8 (0 file, 1 redirect), key and value bytes; slots: 2^k offsets + 1, 0 empty.
 * @typedef {{ data: SharedArrayBuffer, slots: SharedArrayBuffer, maxHops: number }} SharedNameTable
 */

const FILE = 0;
const REDIRECT = 1;
const HEADER = 9;

/** @param {Uint8Array} bytes @param {number} start @param {number} end */
function fnv1a(bytes, start, end) {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    hash ^= bytes[i];
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * Two passes, sizes then the table, so no object per URL is made.
 * @param {Iterable<{ key: string, file?: string }>} pages iterated twice @param {{ key: string, location?: string }[]} redirects @param {number} maxHops @returns {SharedNameTable}
 */
export function encodeNameTable(pages, redirects, maxHops) {
  /** @type {(each: (key: string, value: string, kind: number) => void) => void} */ const entries = (each) => {
    for (const page of pages) if (page.file) each(page.key, page.file, FILE);
    for (const record of redirects) if (record.location) each(record.key, record.location, REDIRECT);
  };
  let size = 0;
  let count = 0;
  entries((key, value) => {
    size += HEADER + Buffer.byteLength(key, 'utf8') + Buffer.byteLength(value, 'utf8');
    count++;
  });
  const data = new SharedArrayBuffer(Math.max(1, size));
  const bytes = Buffer.from(data);
  let capacity = 16;
  while (capacity < count * 2) capacity *= 2;
  const slots = new SharedArrayBuffer(capacity * 4);
  const table = new Int32Array(slots);
  const mask = capacity - 1;
  let at = 0;
  entries((key, value, kind) => {
    if (at + HEADER > size) throw new Error('the name table changed while it was encoded');
    const keyLength = bytes.write(key, at + HEADER, 'utf8');
    const valueLength = bytes.write(value, at + HEADER + keyLength, 'utf8');
    bytes.writeUInt32LE(keyLength, at);
    bytes.writeUInt32LE(valueLength, at + 4);
    bytes[at + 8] = kind;
    const k = bytes.subarray(at + HEADER, at + HEADER + keyLength);
    let slot = fnv1a(k, 0, k.length) & mask;
    // A later entry for the same key wins, as in a Map: a page's file over a redirect.
    for (;;) {
      const taken = table[slot];
      if (taken === 0 || (taken - 1 !== at && sameKey(bytes, taken - 1, k))) break;
      slot = (slot + 1) & mask;
    }
    if (table[slot] === 0 || bytes[table[slot] - 1 + 8] !== FILE || kind === FILE) table[slot] = at + 1;
    at += HEADER + keyLength + valueLength;
  });
  return { data, slots, maxHops };
}

/** @param {Buffer} bytes @param {number} entry @param {Uint8Array} key */
function sameKey(bytes, entry, key) {
  const length = bytes.readUInt32LE(entry);
  if (length !== key.length) return false;
  const start = entry + HEADER;
  for (let i = 0; i < length; i++) if (bytes[start + i] !== key[i]) return false;
  return true;
}

/** In any thread. @param {SharedNameTable} shared @returns {{ fileOf(key: string): string | null }} */
export function openNameTable(shared) {
  const bytes = Buffer.from(shared.data);
  const table = new Int32Array(shared.slots);
  const mask = table.length - 1;
  /** @param {string} key @returns {number} the entry's offset, or -1 */
  const find = (key) => {
    const k = Buffer.from(key, 'utf8');
    let slot = fnv1a(k, 0, k.length) & mask;
    for (;;) {
      const taken = table[slot];
      if (taken === 0) return -1;
      if (sameKey(bytes, taken - 1, k)) return taken - 1;
      slot = (slot + 1) & mask;
    }
  };
  return {
    fileOf(key) {
      let current = key;
      for (let hops = 0; hops <= shared.maxHops; hops++) {
        const entry = find(current);
        if (entry < 0) return null;
        const keyLength = bytes.readUInt32LE(entry);
        const valueLength = bytes.readUInt32LE(entry + 4);
        const start = entry + HEADER + keyLength;
        const value = bytes.toString('utf8', start, start + valueLength);
        if (bytes[entry + 8] === FILE) return value;
        current = value;
      }
      return null;
    },
  };
}
