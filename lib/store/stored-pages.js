// @ts-check
import { Arena } from './arena.js';
import { FieldCodec } from './fields.js';

/**
 * The last run's pages, or a killed run's journal, packed in the arena. Read-only once loaded: `get` may hand one
 * object to several callers, so they must not change it.
 * @typedef {import('../recrawl/journal.js').JournalEntry} JournalEntry
 */

const CODEC = new FieldCodec([
  ['state', ['done', 'redirect']], ['status', 'uint'], ['contentType', 'common'], ['type', ['html', 'css', 'other']],
  ['charset', 'common'], ['etag', 'str'], ['lastModified', 'str'], ['location', 'str'], ['file', 'str'], ['wanted', 'str'],
  ['body', 'hex'], ['scan', 'hex'], ['bytes', 'uint'], ['sha256', 'hex'], ['compare', 'hex'], ['compressed', 'json'],
  ['placeholders', 'json'], ['render', 'json'], ['change', ['new', 'changed', 'not-modified', 'same-bytes']], ['stale', 'flag'],
  ['oldFiles', 'json'], ['fetched', 'uint'], ['maxAge', 'uint'], ['immutable', 'flag'],
], { skip: ['url'], extra: true });

/** Decoded pages kept for the next lookups. */
const RECENT = 64;

/** @template {JournalEntry} T */
export class StoredPages {
  #arena;
  #column;
  #size = 0;
  /** @type {Map<string, T>} */ #recent = new Map();

  /** @param {Arena} [arena] shared with the record store, so a URL's key is kept once @param {number} [column] */
  constructor(arena = new Arena(), column = 0) {
    this.#arena = arena;
    this.#column = column;
  }

  /** @param {string} url @param {T} page */
  set(url, page) {
    const slot = this.#arena.intern(url);
    if (this.#arena.read(slot, this.#column) === undefined) this.#size++;
    const bytes = CODEC.encode(page);
    // An empty value would read as "no page": a page always has a state.
    this.#arena.write(slot, bytes.length > 0 ? bytes : EMPTY, bytes.length > 0 ? bytes.length : 1, this.#column);
    this.#recent.delete(url);
    return this;
  }

  /** @param {string} url */
  get(url) {
    const recent = this.#recent.get(url);
    if (recent) return recent;
    const slot = this.#arena.slotOf(url);
    if (slot === undefined) return undefined;
    const page = this.#decode(slot, url);
    if (!page) return undefined;
    if (this.#recent.size >= RECENT) this.#recent.clear();
    this.#recent.set(url, page);
    return page;
  }

  /** @template {keyof T & string} K @param {string} url @param {readonly K[]} names @returns {(Pick<T, K> & { url: string }) | undefined} */
  pick(url, names) {
    const recent = this.#recent.get(url);
    if (recent) return recent;
    const slot = this.#arena.slotOf(url);
    return slot === undefined ? undefined : this.#pick(slot, url, names);
  }

  /** @template {keyof T & string} K @param {readonly K[]} names @returns {Generator<Pick<T, K> & { url: string }>} in the order of `values()` */
  * picks(names) {
    const keys = this.#arena.keys;
    for (let slot = 0; slot < keys.length; slot++) {
      const page = this.#pick(slot, keys[slot], names);
      if (page) yield page;
    }
  }

  /** @template {keyof T & string} K @param {number} slot @param {string} url @param {readonly K[]} names @returns {(Pick<T, K> & { url: string }) | undefined} */
  #pick(slot, url, names) {
    const bytes = this.#arena.read(slot, this.#column);
    if (bytes === undefined) return undefined;
    if (bytes.length === 1 && bytes[0] === 0) return /** @type {Pick<T, K> & { url: string }} */ ({ url });
    return CODEC.pick(bytes, names, /** @type {Pick<T, K> & { url: string }} */ ({ url }));
  }

  /** @param {string} url */
  has(url) {
    const slot = this.#arena.slotOf(url);
    return slot !== undefined && this.#arena.read(slot, this.#column) !== undefined;
  }

  get size() {
    return this.#size;
  }

  /** In the order their URLs were first set. */
  * values() {
    const keys = this.#arena.keys;
    for (let slot = 0; slot < keys.length; slot++) {
      const page = this.#decode(slot, keys[slot]);
      if (page) yield page;
    }
  }

  /** @param {number} slot @param {string} url @returns {T | undefined} */
  #decode(slot, url) {
    const bytes = this.#arena.read(slot, this.#column);
    if (bytes === undefined) return undefined;
    if (bytes.length === 1 && bytes[0] === 0) return /** @type {T} */ ({ url });
    return CODEC.decode(bytes, /** @type {T} */ ({ url }));
  }
}

const EMPTY = Buffer.from([0]);
