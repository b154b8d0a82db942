// @ts-check
/**
 * Bytes by key, kept outside the JS heap: what a crawl knows about each of
 * its URLs (the record store, the last run's state, the journal of a killed
 * run) at 200,000 pages would be 200,000 objects and a million strings, which
 * V8 lets grow to two or three times their size before it collects. Here a
 * URL costs its key, one Map entry and its packed bytes in 1 MiB chunks.
 *
 * Keys get slots (0, 1, 2...) in the order they are first seen; a slot holds
 * at most one value. A value written again goes in place when it fits, else
 * at the end; the chunks are compacted when more than half of them is
 * garbage.
 */

const CHUNK = 1 << 20;
const MIN_GARBAGE_TO_COMPACT = 4 * CHUNK;

/**
 * @template {Uint8Array | Uint32Array | Int32Array} T
 * @param {T} array
 * @param {number} capacity
 * @returns {T}
 */
export function grown(array, capacity) {
  const next = /** @type {T} */ (new /** @type {any} */ (array.constructor)(capacity));
  next.set(array);
  return next;
}

export class Arena {
  /** @type {Map<string, number>} */
  #slots = new Map();
  /** @type {string[]} slot -> key */
  keys = [];
  /** chunk index + 1 of a slot's value; 0: no value */
  #chunkOf = new Uint32Array(1024);
  #offset = new Uint32Array(1024);
  #length = new Uint32Array(1024);
  /** @type {Buffer[]} */
  #chunks = [];
  #used = CHUNK;
  #live = 0;
  #garbage = 0;
  /** @type {((capacity: number) => void) | null} called when the slot arrays grow */
  onGrow = null;

  get capacity() {
    return this.#length.length;
  }

  /** Slots handed out. */
  get count() {
    return this.keys.length;
  }

  /** @param {string} key */
  slotOf(key) {
    return this.#slots.get(key);
  }

  /**
   * The slot of a key, a new one if it has none.
   * @param {string} key
   */
  intern(key) {
    let slot = this.#slots.get(key);
    if (slot !== undefined) return slot;
    slot = this.keys.length;
    if (slot >= this.#length.length) this.#grow();
    this.#slots.set(key, slot);
    this.keys.push(key);
    return slot;
  }

  #grow() {
    const capacity = this.#length.length * 2;
    this.#chunkOf = grown(this.#chunkOf, capacity);
    this.#offset = grown(this.#offset, capacity);
    this.#length = grown(this.#length, capacity);
    this.onGrow?.(capacity);
  }

  /**
   * Copy `length` bytes of `source` in as the slot's value.
   * @param {number} slot
   * @param {Uint8Array} source
   * @param {number} length
   */
  write(slot, source, length) {
    const chunk = this.#chunkOf[slot];
    const old = this.#length[slot];
    if (chunk !== 0 && length <= old) {
      this.#chunks[chunk - 1].set(source.subarray(0, length), this.#offset[slot]);
      this.#length[slot] = length;
      this.#live -= old - length;
      this.#garbage += old - length;
      return;
    }
    if (chunk !== 0) this.clear(slot);
    this.#place(slot, length).set(source.subarray(0, length));
    this.#live += length;
    if (this.#garbage > MIN_GARBAGE_TO_COMPACT && this.#garbage > this.#live) this.#compact();
  }

  /**
   * Room for a value at the end; the slot points at it.
   * @param {number} slot
   * @param {number} length
   */
  #place(slot, length) {
    if (length > CHUNK) {
      // A value larger than a chunk (a long error or render report) gets a chunk of its own.
      this.#chunks.push(Buffer.allocUnsafeSlow(length));
      this.#chunkOf[slot] = this.#chunks.length;
      this.#offset[slot] = 0;
      this.#length[slot] = length;
      return this.#chunks[this.#chunks.length - 1];
    }
    if (this.#used + length > CHUNK) {
      this.#chunks.push(Buffer.allocUnsafeSlow(CHUNK));
      this.#used = 0;
    }
    const at = this.#used;
    this.#used += length;
    this.#chunkOf[slot] = this.#chunks.length;
    this.#offset[slot] = at;
    this.#length[slot] = length;
    return this.#chunks[this.#chunks.length - 1].subarray(at, at + length);
  }

  /**
   * The slot's value (a view, valid until the slot is written again), or undefined.
   * @param {number} slot
   */
  read(slot) {
    const chunk = this.#chunkOf[slot];
    if (chunk === 0) return undefined;
    const at = this.#offset[slot];
    return this.#chunks[chunk - 1].subarray(at, at + this.#length[slot]);
  }

  /** @param {number} slot */
  clear(slot) {
    if (this.#chunkOf[slot] === 0) return;
    this.#garbage += this.#length[slot];
    this.#live -= this.#length[slot];
    this.#chunkOf[slot] = 0;
    this.#length[slot] = 0;
  }

  /** Values copied into fresh chunks, in slot order; the old chunks go. */
  #compact() {
    const old = this.#chunks;
    const chunkOf = this.#chunkOf;
    const offset = this.#offset;
    this.#chunks = [];
    this.#used = CHUNK;
    this.#chunkOf = new Uint32Array(chunkOf.length);
    this.#offset = new Uint32Array(offset.length);
    for (let slot = 0; slot < this.keys.length; slot++) {
      const chunk = chunkOf[slot];
      if (chunk === 0) continue;
      const length = this.#length[slot];
      this.#place(slot, length).set(old[chunk - 1].subarray(offset[slot], offset[slot] + length));
    }
    this.#garbage = 0;
  }

  /** Bytes held in chunks (for tests and benchmarks). */
  get bytes() {
    return this.#chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  }

  clearAll() {
    this.#slots.clear();
    this.keys = [];
    this.#chunks = [];
    this.#chunkOf.fill(0);
    this.#length.fill(0);
    this.#used = CHUNK;
    this.#live = 0;
    this.#garbage = 0;
  }
}
