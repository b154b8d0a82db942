// @ts-check
/**
 * Where each blob lies in the log: a table packed in typed arrays (BENCHMARKS.md, "Decisions"), found by open
 * addressing on the id's first four bytes. A deleted entry stays, marked, and is reused if its id returns.
 * @typedef {{ at: number, length: number }} BlobPlace
 */

const ID_BYTES = 32;
/** The table is at most 70 % full (uniform hashes: short probes). */
const LOAD_FACTOR = 7;
const LOAD_DIVISOR = 10;
const DELETED = -1;

export class BlobIndex {
  #ids = Buffer.alloc(ID_BYTES * 1024);
  #at = new Float64Array(1024);
  /** blobs are capped well under 4 GB (--max-page-bytes) */
  #length = new Uint32Array(1024);
  /** entry number + 1; 0: empty */
  #table = new Int32Array(2048);
  /** 1: marked live (compaction) */
  #marks = new Uint8Array(1024);
  #entries = 0;
  #size = 0;
  #scratch = Buffer.alloc(ID_BYTES);

  get size() {
    return this.#size;
  }

  /** The entry of an id, or -1. @param {string} id */
  #find(id) {
    if (id.length !== ID_BYTES * 2 || this.#scratch.write(id, 0, 'hex') !== ID_BYTES) return -1;
    const mask = this.#table.length - 1;
    let slot = this.#scratch.readUInt32LE(0) & mask;
    for (;;) {
      const entry = this.#table[slot] - 1;
      if (entry < 0) return -1;
      if (this.#ids.compare(this.#scratch, 0, ID_BYTES, entry * ID_BYTES, (entry + 1) * ID_BYTES) === 0) return entry;
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
    let entry = this.#find(id);
    if (entry < 0) {
      if (id.length !== ID_BYTES * 2 || !/^[0-9a-f]+$/.test(id)) throw new Error(`not a blob id: ${id}`);
      if (this.#entries >= this.#at.length) this.#growEntries(Math.ceil(this.#at.length * 1.5));
      if ((this.#entries + 1) * LOAD_DIVISOR > this.#table.length * LOAD_FACTOR) this.#rehash(this.#table.length * 2);
      entry = this.#entries++;
      this.#ids.write(id, entry * ID_BYTES, 'hex');
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

  /** @param {number} entry */
  #insert(entry) {
    const mask = this.#table.length - 1;
    let slot = this.#ids.readUInt32LE(entry * ID_BYTES) & mask;
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
