// @ts-check

/**
 * Early writes' outputs, until phase two takes them or a rename makes them stale.
 * @typedef {import('./page-work.js').RenderOutput} RenderOutput
 */
const RENDERING = 0;
const RENDERED = 1;
const FAILED = 2;

/** A URL's two bits in a page's sketch, by FNV-1a. @param {string} key @returns {[number, number]} */
function bitsOf(key) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return [hash & 255, (hash >>> 8) & 255];
}

/** Packed: a slot per page in typed arrays, not an object each. */
export class EarlyOutputs {
  constructor() {
    /** @type {Map<string, number>} URL -> slot */ this.slots = new Map();
    this.count = 0;
    this.temps = new Int32Array(1024);
    this.states = new Uint8Array(1024);
    this.sizes = new Uint32Array(1024);
    this.hashes = Buffer.alloc(1024 * 32);
    /** 256-bit sketch of each page's link URLs, to find the pages a renamed URL touches. */
    this.sketches = Buffer.alloc(1024 * 32);
    /** @type {Map<number, Pick<RenderOutput, 'placeholders' | 'warnings'>>} */ this.extras = new Map();
    /** @type {Map<number, Promise<void>>} by slot */ this.pending = new Map();
    /** @type {Set<Promise<void>>} kept or cleared */ this.inFlight = new Set();
    /** A render ending after clear() keeps nothing. */
    this.generation = 0;
  }

  get size() {
    return this.slots.size;
  }

  /** @param {string} key @param {number} temp @param {Promise<RenderOutput | null>} result @param {string[]} deps its links */
  add(key, temp, result, deps) {
    const slot = this.count++;
    if (slot === this.temps.length) this.#grow();
    this.slots.set(key, slot);
    for (const dep of deps) {
      const [a, b] = bitsOf(dep);
      this.sketches[slot * 32 + (a >> 3)] |= 1 << (a & 7);
      this.sketches[slot * 32 + (b >> 3)] |= 1 << (b & 7);
    }
    this.temps[slot] = temp;
    this.states[slot] = RENDERING;
    const generation = this.generation;
    const settled = result.then((out) => {
      this.pending.delete(slot);
      this.inFlight.delete(settled);
      if (generation !== this.generation) return; // cleared meanwhile: nothing of it is kept
      if (!out || !out.written) {
        this.states[slot] = FAILED;
        return;
      }
      this.sizes[slot] = out.bytes;
      this.hashes.write(out.sha256, slot * 32, 'hex');
      if (out.placeholders.length > 0 || out.warnings.length > 0) this.extras.set(slot, { placeholders: out.placeholders, warnings: out.warnings });
      this.states[slot] = RENDERED;
    });
    this.pending.set(slot, settled);
    this.inFlight.add(settled);
  }

  /** Its temp file written or abandoned. */
  async settled() {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  #grow() {
    const size = Math.max(1024, this.temps.length * 2);
    const grown = (/** @type {any} */ from, /** @type {any} */ Type, /** @type {number} */ length) => {
      const next = new Type(length);
      next.set(from);
      return next;
    };
    this.temps = grown(this.temps, Int32Array, size);
    this.states = grown(this.states, Uint8Array, size);
    this.sizes = grown(this.sizes, Uint32Array, size);
    const hashes = Buffer.alloc(size * 32);
    this.hashes.copy(hashes);
    this.hashes = hashes;
    const sketches = Buffer.alloc(size * 32);
    this.sketches.copy(sketches);
    this.sketches = sketches;
  }

  /** @param {string} key @returns {Promise<{ result: RenderOutput, temp: number } | null>} */
  async take(key) {
    const slot = this.slots.get(key);
    if (slot === undefined) return null;
    this.slots.delete(key);
    await this.pending.get(slot);
    const extra = this.extras.get(slot);
    this.extras.delete(slot);
    if (this.states[slot] !== RENDERED) return null;
    /** @type {RenderOutput} */ const result = {
      bytes: this.sizes[slot], sha256: this.hashes.toString('hex', slot * 32, slot * 32 + 32), written: true,
      placeholders: extra?.placeholders ?? [], warnings: extra?.warnings ?? [],
    };
    return { result, temp: this.temps[slot] };
  }

  /** And those of pages that may link to one: a sketch's false "maybe" costs a render. @param {string[]} keys */
  forgetLinksTo(keys) {
    for (const key of keys) this.slots.delete(key);
    const bits = keys.map(bitsOf);
    const sketches = this.sketches;
    for (const [key, slot] of this.slots) {
      const at = slot * 32;
      for (const [a, b] of bits) {
        if ((sketches[at + (a >> 3)] & (1 << (a & 7))) !== 0 && (sketches[at + (b >> 3)] & (1 << (b & 7))) !== 0) {
          this.slots.delete(key);
          break;
        }
      }
    }
  }

  clear() {
    this.generation++;
    this.count = 0;
    this.slots.clear();
    this.extras.clear();
    this.pending.clear();
    this.temps = new Int32Array(0);
    this.states = new Uint8Array(0);
    this.sizes = new Uint32Array(0);
    this.hashes = Buffer.alloc(0);
    this.sketches = Buffer.alloc(0);
  }
}
