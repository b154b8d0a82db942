// @ts-check
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PrerenderError } from '../errors.js';
import { sha256 } from '../store/blobs.js';

/**
 * The links each page of the state followed, so a page carried without a request is followed without reading,
 * hashing and deciding its stored scan (issue 42). A cache beside the state: when missing, damaged, of another
 * state or of other link rules, pages are followed from their scans as before.
 * File: a JSON header line, varints, then the sha256 of both. Per state line: 0 (no list), or count + 1, flags,
 * skipped requisites, then each link as target << 1 | requisite. A target below `lines` is a state line; above,
 * an entry of the header's `extra` keys (followed URLs the state does not list: failed, over a limit).
 * @typedef {{ key: string, kind: 'navigation' | 'requisite' }} Followed
 * @typedef {{ items: Followed[], skipped: number, complete: boolean }} FollowList
 *   complete: every link decided "crawl" was followed, so a listed URL it links to is among `items`
 */

export const FOLLOW_FILE = 'follow.bin';
const FORMAT = 'prerender-follow';
const VERSION = 1;
const COMPLETE = 1;
const HASH_BYTES = 32;

/** A state's own: its finish time and line count. @param {string} finishedAt @param {number} lines */
export function followToken(finishedAt, lines) {
  return `${finishedAt} ${lines}`;
}

/** This run's lists, per arena slot, in one growing array: [flags, skipped, count, ...slot << 1 | requisite]. */
export class FollowNotes {
  #arena;
  /** @type {Int32Array} per slot: offset + 1 of its note; 0: none */ #at;
  #pool = new Uint32Array(4096);
  #used = 0;

  /** @param {import('../store/arena.js').Arena} arena the run's, so a URL's key is its slot */
  constructor(arena) {
    this.#arena = arena;
    this.#at = new Int32Array(arena.capacity);
    arena.onGrow((capacity) => {
      const at = new Int32Array(capacity);
      at.set(this.#at);
      this.#at = at;
    });
  }

  /** @param {string} page @param {readonly Followed[]} items @param {number} skipped @param {boolean} complete */
  note(page, items, skipped, complete) {
    const arena = this.#arena;
    const slot = arena.intern(page);
    const need = this.#used + 3 + items.length;
    if (need > this.#pool.length) {
      const pool = new Uint32Array(Math.max(need, this.#pool.length * 2));
      pool.set(this.#pool.subarray(0, this.#used));
      this.#pool = pool;
    }
    const at = this.#used;
    this.#pool[at] = complete ? COMPLETE : 0;
    this.#pool[at + 1] = skipped;
    this.#pool[at + 2] = items.length;
    for (let i = 0; i < items.length; i++) this.#pool[at + 3 + i] = (arena.intern(items[i].key) << 1) | (items[i].kind === 'requisite' ? 1 : 0);
    this.#used = need;
    this.#at[slot] = at + 1;
  }

  /** Its links had effects a list does not replay (too deep, too long): followed from its scan next time. @param {string} page */
  forget(page) {
    const slot = this.#arena.slotOf(page);
    if (slot !== undefined) this.#at[slot] = 0;
  }

  /**
   * The file's bytes for a state whose lines are `lines`, in order.
   * @param {readonly string[]} lines @param {{ token: string, key: string }} header
   */
  encode(lines, { token, key }) {
    const arena = this.#arena;
    const lineOf = new Int32Array(arena.keys.length).fill(-1);
    for (let i = 0; i < lines.length; i++) {
      const slot = arena.slotOf(lines[i]);
      if (slot !== undefined) lineOf[slot] = i;
    }
    /** @type {string[]} */ const extra = [];
    /** @type {Map<number, number>} */ const extraOf = new Map();
    const out = new Varints();
    for (const url of lines) {
      const slot = arena.slotOf(url);
      const at = slot === undefined || slot >= this.#at.length ? 0 : this.#at[slot];
      if (at === 0) {
        out.push(0);
        continue;
      }
      const count = this.#pool[at + 1];
      out.push(count + 1);
      out.push(this.#pool[at - 1]);
      out.push(this.#pool[at]);
      for (let i = 0; i < count; i++) {
        const link = this.#pool[at + 2 + i];
        const target = link >>> 1;
        let index = target < lineOf.length ? lineOf[target] : -1;
        if (index < 0) {
          index = extraOf.get(target) ?? -1;
          if (index < 0) {
            index = lines.length + extra.length;
            extraOf.set(target, index);
            extra.push(arena.keys[target]);
          }
        }
        out.push(index * 2 + (link & 1));
      }
    }
    const head = Buffer.from(JSON.stringify({ format: FORMAT, version: VERSION, token, key, lines: lines.length, extra }) + '\n');
    const body = Buffer.concat([head, out.bytes()]);
    return Buffer.concat([body, Buffer.from(sha256(body), 'hex')]);
  }
}

/** Unsigned varints into a growing buffer. */
class Varints {
  #buffer = Buffer.allocUnsafe(65_536);
  #used = 0;

  /** @param {number} value a non-negative integer below 2 ** 53 */
  push(value) {
    if (this.#used + 8 > this.#buffer.length) {
      const buffer = Buffer.allocUnsafe(this.#buffer.length * 2);
      this.#buffer.copy(buffer, 0, 0, this.#used);
      this.#buffer = buffer;
    }
    while (value >= 0x80) {
      this.#buffer[this.#used++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.#buffer[this.#used++] = value;
  }

  bytes() {
    return this.#buffer.subarray(0, this.#used);
  }
}

/**
 * Written beside the state before the state is renamed: a state that does not carry its token finds no lists.
 * @param {string} stateDir @param {Buffer} bytes from `encode`
 */
export async function writeFollowLists(stateDir, bytes) {
  const temp = path.join(stateDir, `tmp-follow-${process.pid}.bin`);
  try {
    await writeFile(temp, bytes);
    await rename(temp, path.join(stateDir, FOLLOW_FILE));
  } catch (error) {
    throw new PrerenderError(`cannot write the crawl's follow lists ${path.join(stateDir, FOLLOW_FILE)}: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
}

/**
 * The last run's lists, or null when there are none for this state and these link rules.
 * @param {string} stateDir @param {{ token: string, key: string, lines: readonly string[], slotOf?: (url: string) => number | undefined }} expected
 *   lines: the state's URLs, in order; slotOf: the arena's slot of a URL, so lists are found by slot, not through a map of URLs
 * @returns {Promise<{ of(url: string): FollowList | null } | null>}
 */
export async function readFollowLists(stateDir, { token, key, lines, slotOf = mapOf(lines) }) {
  const bytes = await readFile(path.join(stateDir, FOLLOW_FILE)).catch(() => null);
  if (!bytes || bytes.length < HASH_BYTES) return null;
  const newline = bytes.indexOf(10);
  if (newline < 0 || newline >= bytes.length - HASH_BYTES) return null;
  let header;
  try {
    header = JSON.parse(bytes.subarray(0, newline).toString());
  } catch {
    return null;
  }
  if (header?.format !== FORMAT || header.version !== VERSION || header.token !== token || header.key !== key || header.lines !== lines.length || !Array.isArray(header.extra)) return null;
  const body = bytes.subarray(0, bytes.length - HASH_BYTES);
  if (sha256(body) !== bytes.subarray(bytes.length - HASH_BYTES).toString('hex')) return null;
  const starts = listStarts(bytes, newline + 1, bytes.length - HASH_BYTES, lines.length);
  if (!starts) return null;
  const extra = /** @type {string[]} */ (header.extra);
  let slots = 0;
  for (const url of lines) slots = Math.max(slots, (slotOf(url) ?? -1) + 1);
  const startOf = new Int32Array(slots);
  for (let i = 0; i < lines.length; i++) {
    const slot = slotOf(lines[i]);
    if (slot !== undefined) startOf[slot] = starts[i];
  }
  return {
    of(url) {
      const slot = slotOf(url);
      const at = slot === undefined || slot >= startOf.length ? 0 : startOf[slot];
      return at === 0 ? null : listAt(bytes, at - 1, lines, extra);
    },
  };
}

/** Without an arena: each URL's line. @param {readonly string[]} lines */
function mapOf(lines) {
  const slots = new Map(lines.map((url, i) => [url, i]));
  return (/** @type {string} */ url) => slots.get(url);
}

/** Per line, the byte offset + 1 of its list (0: none), or null if the bytes do not hold `count` lists. @param {Buffer} bytes @param {number} start @param {number} end @param {number} count */
function listStarts(bytes, start, end, count) {
  const index = new Int32Array(count);
  const reader = { bytes, at: start, end };
  for (let i = 0; i < count; i++) {
    const at = reader.at;
    const size = readVarint(reader);
    if (size < 0) return null;
    if (size === 0) continue;
    index[i] = at + 1;
    for (let k = 0; k < size + 1; k++) if (readVarint(reader) < 0) return null;
  }
  return reader.at === end ? index : null;
}

/** @param {Buffer} bytes @param {number} at @param {readonly string[]} lines @param {string[]} extra @returns {FollowList | null} */
function listAt(bytes, at, lines, extra) {
  const reader = { bytes, at, end: bytes.length };
  const count = readVarint(reader) - 1;
  const complete = (readVarint(reader) & COMPLETE) !== 0;
  const skipped = readVarint(reader);
  /** @type {Followed[]} */ const items = [];
  for (let i = 0; i < count; i++) {
    const link = readVarint(reader);
    const target = Math.floor(link / 2);
    const key = target < lines.length ? lines[target] : extra[target - lines.length];
    if (typeof key !== 'string') return null;
    items.push({ key, kind: link % 2 === 1 ? 'requisite' : 'navigation' });
  }
  return { items, skipped, complete };
}

/** -1 past the end. @param {{ bytes: Buffer, at: number, end: number }} reader */
function readVarint(reader) {
  let value = 0;
  let scale = 1;
  while (reader.at < reader.end) {
    const byte = reader.bytes[reader.at++];
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 0x80;
    if (scale > 2 ** 49) return -1;
  }
  return -1;
}
