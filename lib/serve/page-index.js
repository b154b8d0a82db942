// @ts-check
/**
 * The manifest's pages, kept compact: 200,000 pages must not cost 200,000 objects. A Map from each key to the offset of its
 * record, the records packed in one Buffer off the heap; a PageMeta is made only when a page is asked for. Record: u8 flags
 * (1 slots valid, 2 size known, 4 has a content type), u16 content type index, u32 size, u32 slot count, then per slot u32
 * offset, u32 length, u16 SKU byte length, the SKU in UTF-8.
 */

/** @typedef {{ sku: string, offset: number, length: number }} Slot */

/** Made on demand, not stored. */
export class PageMeta {
  /** @param {string} key @param {string | null} contentType @param {number | null} bytes @param {Slot[]} slots @param {boolean} slotsValid */
  constructor(key, contentType, bytes, slots, slotsValid) {
    this.key = key;
    this.contentType = contentType;
    this.bytes = bytes;
    this.slots = slots;
    this.slotCount = slots.length;
    this.slotsValid = slotsValid;
  }
}

const MAX_U16 = 0xffff;
const MAX_U32 = 0xffffffff;

export class PageIndex {
  /** Offset of each key's record in #data. @type {Map<string, number>} */
  #offsets = new Map();
  #data = Buffer.allocUnsafeSlow(64 * 1024);
  #used = 0;
  /** @type {string[]} distinct content types */
  #types = [];
  /** @type {Map<string, number>} */ #typeIndex = new Map();
  /** Or a malformed slot list, scanned when loaded. */
  fillableCount = 0;

  get size() {
    return this.#offsets.size;
  }

  /** @param {string} key */
  has(key) {
    return this.#offsets.has(key);
  }

  keys() {
    return this.#offsets.keys();
  }

  /**
   * Slots that do not fit the record (an offset beyond 4 GiB, a SKU over 64 KiB) mark its slot list malformed.
   * @param {string} key @param {string | null} contentType @param {number | null} bytes @param {Slot[]} slots @param {boolean} slotsValid
   */
  set(key, contentType, bytes, slots, slotsValid) {
    let valid = slotsValid;
    /** @type {Buffer[]} */ const skus = [];
    for (const slot of slots) {
      const sku = Buffer.from(slot.sku, 'utf8');
      if (sku.length > MAX_U16 || slot.offset > MAX_U32 || slot.length > MAX_U32) valid = false;
      skus.push(sku);
    }
    const kept = valid ? slots : [];
    let size = 11;
    for (let i = 0; i < kept.length; i++) size += 10 + skus[i].length;
    this.#reserve(size);
    const d = this.#data;
    let at = this.#used;
    /** @type {number | undefined} undefined once 65,536 distinct types fill the table: then typed by extension */
    let type;
    if (contentType !== null) {
      type = this.#typeIndex.get(contentType);
      if (type === undefined && this.#types.length <= MAX_U16) {
        type = this.#types.length;
        this.#types.push(contentType);
        this.#typeIndex.set(contentType, type);
      }
    }
    const knownBytes = bytes !== null && bytes <= MAX_U32;
    d[at] = (valid ? 1 : 0) | (knownBytes ? 2 : 0) | (type !== undefined ? 4 : 0);
    d.writeUInt16LE(type ?? 0, at + 1);
    d.writeUInt32LE(knownBytes ? /** @type {number} */ (bytes) : 0, at + 3);
    d.writeUInt32LE(kept.length, at + 7);
    at += 11;
    for (let i = 0; i < kept.length; i++) {
      d.writeUInt32LE(kept[i].offset, at);
      d.writeUInt32LE(kept[i].length, at + 4);
      d.writeUInt16LE(skus[i].length, at + 8);
      skus[i].copy(d, at + 10);
      at += 10 + skus[i].length;
    }
    const previous = this.#offsets.get(key);
    if (previous !== undefined && this.#isFillable(previous)) this.fillableCount--;
    this.#offsets.set(key, this.#used);
    this.#used = at;
    if (this.#isFillable(this.#offsets.get(key) ?? 0)) this.fillableCount++;
  }

  /** Once all pages are in. */
  trim() {
    if (this.#data.length === this.#used) return;
    const exact = Buffer.allocUnsafeSlow(this.#used);
    this.#data.copy(exact, 0, 0, this.#used);
    this.#data = exact;
  }

  /** @param {number} at */
  #isFillable(at) {
    return (this.#data[at] & 1) === 0 || this.#data.readUInt32LE(at + 7) > 0;
  }

  /** @param {number} more */
  #reserve(more) {
    if (this.#used + more <= this.#data.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(this.#data.length * 2, this.#used + more));
    this.#data.copy(grown, 0, 0, this.#used);
    this.#data = grown;
  }

  /** @param {string} key @returns {string | null | undefined} undefined: no such page; null: no recorded type */
  contentType(key) {
    const at = this.#offsets.get(key);
    if (at === undefined) return undefined;
    return this.#data[at] & 4 ? this.#types[this.#data.readUInt16LE(at + 1)] : null;
  }

  /** When it has price slots, or a slot list to scan. @param {string} key @returns {PageMeta | undefined} */
  fillable(key) {
    const at = this.#offsets.get(key);
    if (at === undefined || !this.#isFillable(at)) return undefined;
    return this.#read(key, at);
  }

  /** @param {string} key @returns {PageMeta | undefined} */
  get(key) {
    const at = this.#offsets.get(key);
    return at === undefined ? undefined : this.#read(key, at);
  }

  /** @param {string} key @param {number} at */
  #read(key, at) {
    const d = this.#data;
    const flags = d[at];
    const count = d.readUInt32LE(at + 7);
    /** @type {Slot[]} */ const slots = new Array(count);
    let p = at + 11;
    for (let i = 0; i < count; i++) {
      const skuLength = d.readUInt16LE(p + 8);
      slots[i] = { offset: d.readUInt32LE(p), length: d.readUInt32LE(p + 4), sku: d.toString('utf8', p + 10, p + 10 + skuLength) };
      p += 10 + skuLength;
    }
    return new PageMeta(key, flags & 4 ? this.#types[d.readUInt16LE(at + 1)] : null, flags & 2 ? d.readUInt32LE(at + 3) : null, slots, (flags & 1) === 1);
  }

  /** The records, and per page its key and Map entry on the heap (BENCHMARKS.md, Serving, "Second pass"). */
  get memoryBytes() {
    return this.#data.length + this.#offsets.size * 100;
  }

  /** Bytes held off the JS heap by the records. */
  get recordBytes() {
    return this.#data.length;
  }
}
