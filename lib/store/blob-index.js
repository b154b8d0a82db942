// @ts-check
/**
 * Where each blob lies in the log: a table packed in typed arrays (BENCHMARKS.md, "Decisions"), found by open
 * addressing on the id's first four bytes. A deleted entry stays, marked, and is reused if its id returns.
 * @typedef {{ at: number, length: number }} BlobPlace
 */

const ID_BYTES = 32;
const ID_WORDS = ID_BYTES / 4;
/** The table is at most 70 % full (uniform hashes: short probes). */
const LOAD_FACTOR = 7;
const LOAD_DIVISOR = 10;
const DELETED = -1;

export class BlobIndex {
  #ids = Buffer.alloc(ID_BYTES * 1024);
  /** #ids a word at a time */
  #words = wordsOf(this.#ids);
  #at = new Float64Array(1024);
  /** blobs are capped well under 4 GB (--max-page-bytes) */
  #length = new Uint32Array(1024);
  /** entry number + 1; 0: empty */
  #table = new Int32Array(2048);
  /** 1: marked live (compaction) */
  #marks = new Uint8Array(1024);
  #entries = 0;
  #size = 0;
  #scratch = new Uint8Array(ID_BYTES);
  #scratchWords = new Uint32Array(this.#scratch.buffer);

  get size() {
    return this.#size;
  }

  /** The entry of an id, or -1. @param {string} id */
  #find(id) {
    return id.length === ID_BYTES * 2 && parseHex(id, this.#scratch) ? this.#lookup() : -1;
  }

  /** The entry of the id in #scratch, or -1: compared a word at a time, with no call into C++. */
  #lookup() {
    const mask = this.#table.length - 1;
    const words = this.#words;
    const id = this.#scratchWords;
    let slot = id[0] & mask;
    for (;;) {
      const entry = this.#table[slot] - 1;
      if (entry < 0) return -1;
      const w = entry * ID_WORDS;
      if (words[w] === id[0] && words[w + 1] === id[1] && words[w + 2] === id[2] && words[w + 3] === id[3]
        && words[w + 4] === id[4] && words[w + 5] === id[5] && words[w + 6] === id[6] && words[w + 7] === id[7]) return entry;
      slot = (slot + 1) & mask;
    }
  }

  /** @param {string} id */
  has(id) {
    const entry = this.#find(id);
    return entry >= 0 && this.#at[entry] !== DELETED;
  }

  /** @param {string} id @returns {BlobPlace | undefined} */
  get(id) {
    const entry = this.#find(id);
    if (entry < 0 || this.#at[entry] === DELETED) return undefined;
    return { at: this.#at[entry], length: this.#length[entry] };
  }

  /** @param {string} id a sha256 in lower-case hex @param {BlobPlace} place */
  set(id, place) {
    if (id.length !== ID_BYTES * 2 || !parseHex(id, this.#scratch)) throw new Error(`not a blob id: ${id}`);
    return this.#set(place);
  }

  /** An id given as its 32 bytes (a frame's header, an index file's entry). @param {Uint8Array} bytes @param {number} at @param {BlobPlace} place */
  setBytes(bytes, at, place) {
    this.#scratch.set(bytes.subarray(at, at + ID_BYTES));
    return this.#set(place);
  }

  /** @param {BlobPlace} place the id is in #scratch */
  #set(place) {
    let entry = this.#lookup();
    if (entry < 0) {
      if (this.#entries >= this.#at.length) this.#growEntries(Math.ceil(this.#at.length * 1.5));
      if ((this.#entries + 1) * LOAD_DIVISOR > this.#table.length * LOAD_FACTOR) this.#rehash(this.#table.length * 2);
      entry = this.#entries++;
      this.#ids.set(this.#scratch, entry * ID_BYTES);
      this.#insert(entry);
      this.#at[entry] = DELETED;
      this.#marks[entry] = 0;
    }
    if (this.#at[entry] === DELETED) this.#size++;
    this.#at[entry] = place.at;
    this.#length[entry] = place.length;
    return this;
  }

  /** @param {string} id */
  delete(id) {
    const entry = this.#find(id);
    if (entry < 0 || this.#at[entry] === DELETED) return false;
    this.#at[entry] = DELETED;
    this.#size--;
    return true;
  }

  /** For a compaction: whether it was known and not marked yet. @param {string} id */
  mark(id) {
    const entry = this.#find(id);
    if (entry < 0 || this.#at[entry] === DELETED || this.#marks[entry] === 1) return false;
    this.#marks[entry] = 1;
    return true;
  }

  clearMarks() {
    this.#marks.fill(0);
  }

  /** @returns {IterableIterator<[string, BlobPlace]>} the marked ids */
  * marked() {
    for (const [id, place, entry] of this.#all()) if (this.#marks[entry] === 1) yield [id, place];
  }

  clear() {
    this.#entries = 0;
    this.#size = 0;
    this.#table.fill(0);
  }

  /** @returns {IterableIterator<[string, BlobPlace]>} */
  * [Symbol.iterator]() {
    for (const [id, place] of this.#all()) yield [id, place];
  }

  /** @returns {IterableIterator<[string, BlobPlace, number]>} */
  * #all() {
    for (let entry = 0; entry < this.#entries; entry++) {
      if (this.#at[entry] === DELETED) continue;
      yield [this.#ids.toString('hex', entry * ID_BYTES, (entry + 1) * ID_BYTES), { at: this.#at[entry], length: this.#length[entry] }, entry];
    }
  }

  /** Each live entry's id bytes into `target` at `at`, with its place. @returns {IterableIterator<[number, BlobPlace]>} the entries */
  * entries() {
    for (let entry = 0; entry < this.#entries; entry++) {
      if (this.#at[entry] !== DELETED) yield [entry, { at: this.#at[entry], length: this.#length[entry] }];
    }
  }

  /** @param {number} entry @param {Buffer} target @param {number} at */
  copyId(entry, target, at) {
    this.#ids.copy(target, at, entry * ID_BYTES, (entry + 1) * ID_BYTES);
  }

  /** @param {number} entry */
  #insert(entry) {
    const mask = this.#table.length - 1;
    let slot = this.#words[entry * ID_WORDS] & mask;
    while (this.#table[slot] !== 0) slot = (slot + 1) & mask;
    this.#table[slot] = entry + 1;
  }

  /** Room for `count` ids, so an index read back whole never grows on the way. @param {number} count */
  reserve(count) {
    if (count > this.#at.length) this.#growEntries(count);
    let table = this.#table.length;
    while (count * LOAD_DIVISOR > table * LOAD_FACTOR) table *= 2;
    if (table > this.#table.length) this.#rehash(table);
  }

  /** @param {number} capacity */
  #growEntries(capacity) {
    const ids = Buffer.alloc(capacity * ID_BYTES);
    this.#ids.copy(ids);
    this.#ids = ids;
    this.#words = wordsOf(ids);
    const at = new Float64Array(capacity);
    at.set(this.#at);
    this.#at = at;
    const length = new Uint32Array(capacity);
    length.set(this.#length);
    this.#length = length;
    const marks = new Uint8Array(capacity);
    marks.set(this.#marks);
    this.#marks = marks;
  }

  /** @param {number} capacity */
  #rehash(capacity) {
    this.#table = new Int32Array(capacity);
    for (let entry = 0; entry < this.#entries; entry++) this.#insert(entry);
  }
}

/** Each ASCII code's hex digit value (lower-case digits only); 16 for anything else. */
const HEX_DIGIT = new Uint8Array(128).fill(16);
for (let i = 0; i < 10; i++) HEX_DIGIT[48 + i] = i;
for (let i = 0; i < 6; i++) HEX_DIGIT[97 + i] = 10 + i;

/** 64 lower-case hex digits into `into`'s 32 bytes: false, `into` spoilt, for anything else. @param {string} id @param {Uint8Array} into */
function parseHex(id, into) {
  for (let i = 0; i < ID_BYTES; i++) {
    const a = id.charCodeAt(2 * i);
    const b = id.charCodeAt(2 * i + 1);
    const high = a < 128 ? HEX_DIGIT[a] : 16;
    const low = b < 128 ? HEX_DIGIT[b] : 16;
    if ((high | low) > 15) return false;
    into[i] = (high << 4) | low;
  }
  return true;
}

/** @param {Buffer} bytes from Buffer.alloc, which never takes the shared pool: at offset 0 of its own memory */
function wordsOf(bytes) {
  return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
}
