// @ts-check
import { ownString } from './frontier.js';
/**
 * Bytes by key outside the JS heap, in 1 MiB chunks, not objects per URL that V8 lets grow before collecting. Keys get
 * slots in first-seen order; a slot holds one value per column, so the stores sharing an arena keep each key once.
 */

const CHUNK = 1 << 20;
const MIN_GARBAGE_TO_COMPACT = 4 * CHUNK;

/** @template {Uint8Array | Uint32Array | Int32Array} T @param {T} array @param {number} capacity @returns {T} */
export function grown(array, capacity) {
  const next = /** @type {T} */ (new /** @type {any} */ (array.constructor)(capacity));
  next.set(array);
  return next;
}

export class Arena {
  /** @type {Map<string, number>} */ #slots = new Map();
  /** @type {string[]} slot -> key */ keys = [];
  #columns;
  #capacity = 1024;
  /** per slot and column: chunk index + 1 of the value; 0: no value */
  #chunkOf;
  #offset;
  #length;
  /** @type {Buffer[]} */ #chunks = [];
  #used = CHUNK;
  #live = 0;
  #garbage = 0;
  /** @type {((capacity: number) => void)[]} told when the slots grow */ #growers = [];

  /** @param {number} [columns] values a slot may hold */
  constructor(columns = 1) {
    this.#columns = columns;
    this.#chunkOf = new Uint32Array(this.#capacity * columns);
    this.#offset = new Uint32Array(this.#capacity * columns);
    this.#length = new Uint32Array(this.#capacity * columns);
  }

  get capacity() {
    return this.#capacity;
  }

  /** Call `grow(capacity)` whenever the slots grow, so that arrays kept beside them grow too. @param {(capacity: number) => void} grow */
  onGrow(grow) {
    this.#growers.push(grow);
  }

  /** @param {string} key */
  slotOf(key) {
    return this.#slots.get(key);
  }

  /** The one string kept for a key: the arena's, or an own copy (never a slice of page text). @param {string} key */
  own(key) {
    return this.keys[this.#slots.get(key) ?? this.intern(ownString(key))];
  }

  /** The slot of a key, a new one if it has none. @param {string} key */
  intern(key) {
    let slot = this.#slots.get(key);
    if (slot !== undefined) return slot;
    slot = this.keys.length;
    if (slot >= this.#capacity) this.#grow();
    this.#slots.set(key, slot);
    this.keys.push(key);
    return slot;
  }

  #grow() {
    this.#capacity *= 2;
    this.#chunkOf = grown(this.#chunkOf, this.#capacity * this.#columns);
    this.#offset = grown(this.#offset, this.#capacity * this.#columns);
    this.#length = grown(this.#length, this.#capacity * this.#columns);
    for (const grow of this.#growers) grow(this.#capacity);
  }

  /** Copied in. @param {number} slot @param {Uint8Array} source @param {number} length @param {number} [column] */
  write(slot, source, length, column = 0) {
    const at = slot * this.#columns + column;
    const chunk = this.#chunkOf[at];
    const old = this.#length[at];
    if (chunk !== 0 && length <= old) {
      this.#chunks[chunk - 1].set(source.subarray(0, length), this.#offset[at]);
      this.#length[at] = length;
      this.#live -= old - length;
      this.#garbage += old - length;
      return;
    }
    if (chunk !== 0) this.clear(slot, column);
    this.#place(at, length).set(source.subarray(0, length));
    this.#live += length;
    if (this.#garbage > MIN_GARBAGE_TO_COMPACT && this.#garbage > this.#live) this.#compact();
  }

  /** Room for a value at the end; the value's place (slot and column) points at it. @param {number} at @param {number} length */
  #place(at, length) {
    if (length > CHUNK) {
      this.#chunks.push(Buffer.allocUnsafeSlow(length));
      this.#used = CHUNK;
      this.#chunkOf[at] = this.#chunks.length;
      this.#offset[at] = 0;
      this.#length[at] = length;
      return this.#chunks[this.#chunks.length - 1];
    }
    if (this.#used + length > CHUNK) {
      this.#chunks.push(Buffer.allocUnsafeSlow(CHUNK));
      this.#used = 0;
    }
    const offset = this.#used;
    this.#used += length;
    this.#chunkOf[at] = this.#chunks.length;
    this.#offset[at] = offset;
    this.#length[at] = length;
    return this.#chunks[this.#chunks.length - 1].subarray(offset, offset + length);
  }

  /** A view, valid until the slot is written again. @param {number} slot @param {number} [column] */
  read(slot, column = 0) {
    const at = slot * this.#columns + column;
    const chunk = this.#chunkOf[at];
    if (chunk === 0) return undefined;
    const offset = this.#offset[at];
    return this.#chunks[chunk - 1].subarray(offset, offset + this.#length[at]);
  }

  /** @param {number} slot @param {number} [column] */
  clear(slot, column = 0) {
    const at = slot * this.#columns + column;
    if (this.#chunkOf[at] === 0) return;
    this.#garbage += this.#length[at];
    this.#live -= this.#length[at];
    this.#chunkOf[at] = 0;
    this.#length[at] = 0;
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
    const places = this.keys.length * this.#columns;
    for (let at = 0; at < places; at++) {
      const chunk = chunkOf[at];
      if (chunk === 0) continue;
      const length = this.#length[at];
      this.#place(at, length).set(old[chunk - 1].subarray(offset[at], offset[at] + length));
    }
    this.#garbage = 0;
  }

  /** For tests and benchmarks. */
  get bytes() {
    return this.#chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  }
}
