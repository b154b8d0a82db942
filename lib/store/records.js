// @ts-check
import { Arena, grown } from './arena.js';
import { FieldCodec } from './fields.js';
/**
 * The record store: all that is known of each in-scope URL. Async, so a Redis store implements the same calls.
 * Invariant: `get` may hand out a copy, so a caller that changes a record `put`s it; a record taken while queued is
 * one object for every `get` until put.
 * @typedef {import('./frontier.js').FrontierItem} FrontierItem @typedef {import('./frontier.js').AddOutcome} AddOutcome
 * @typedef {'queued' | 'done' | 'failed' | 'redirect' | 'gone'} RecordState gone: a page of the last crawl that now answers 404 or 410
 * @typedef {'new' | 'changed' | 'not-modified' | 'same-bytes'} Change
 * @typedef {{
 *   key: string, kind: import('./frontier.js').LinkKind, state: RecordState, referrers: string[] | undefined,
 *   status: number | undefined, contentType: string | undefined, type: 'html' | 'css' | 'other' | undefined, charset: string | undefined,
 *   etag: string | undefined, lastModified: string | undefined, location: string | undefined, via: string | undefined, hops: number,
 *   wanted: string | undefined, file: string | undefined, body: string | undefined, scan: string | undefined,
 *   bytes: number | undefined, sha256: string | undefined, error: { status?: number, message: string, code?: string } | undefined,
 *   change: Change | undefined, compare: string | undefined, compressed: string[] | undefined, stale: boolean,
 *   aliasOf: string | undefined, render: import('../render/step.js').RenderInfo | undefined, fetched?: number, maxAge?: number, immutable?: boolean,
 * }} PageRecord
 *   body/scan: blob ids of the staged body and scan; bytes/sha256: of the written file; via/hops: the redirect that led
 *   here; compare: sha256 without --ignore spans; fetched: its run's start, in epoch seconds, when last fetched or revalidated.
 * @typedef {{
 *   admit(items: FrontierItem[], outcomes: AddOutcome[]): Promise<void>, get(key: string): Promise<PageRecord | undefined>,
 *   getMany?(keys: string[]): Promise<(PageRecord | undefined)[]>, put(record: PageRecord): Promise<void>,
 *   list(states: RecordState | RecordState[]): Promise<PageRecord[]>, keys(state: RecordState): Promise<string[]>, close(): Promise<void>,
 * }} RecordStore
 */

export const MAX_REFERRERS = 5;

/**
 * In order, a round trip per batch with `getMany`.
 * @param {RecordStore} store @param {string[]} keys @param {number} [batch] @returns {AsyncGenerator<[string, PageRecord | undefined]>}
 */
export async function* eachRecord(store, keys, batch = 1000) {
  for (let start = 0; start < keys.length; start += batch) {
    const chunk = keys.slice(start, start + batch);
    const records = store.getMany ? await store.getMany(chunk) : await Promise.all(chunk.map((key) => store.get(key)));
    for (let i = 0; i < chunk.length; i++) yield [chunk[i], records[i]];
  }
}

/**
 * Every field declared, so all records share one shape.
 * @param {string} key @param {import('./frontier.js').LinkKind} kind @param {string | null} referrer @returns {PageRecord}
 */
export function newRecord(key, kind, referrer) {
  return {
    key, kind, state: 'queued', referrers: referrer ? [referrer] : [],
    status: undefined, contentType: undefined, type: undefined, charset: undefined, etag: undefined, lastModified: undefined,
    location: undefined, via: undefined, hops: 0, wanted: undefined, file: undefined, body: undefined, scan: undefined, bytes: undefined, sha256: undefined,
    error: undefined, change: undefined, compare: undefined, compressed: undefined, stale: false, aliasOf: undefined, render: undefined,
  };
}

const STATES = /** @type {const} */ ([undefined, 'queued', 'done', 'failed', 'redirect', 'gone']);
/** @type {Map<RecordState, number>} */ const STATE_CODE = new Map(STATES.flatMap((state, i) => (state ? [[state, i]] : [])));
const NO_REFERRERS = 1;
const FILE_IS_WANTED = 2;

/** Key, kind, state and referrers are kept apart. */
const CODEC = new FieldCodec([
  ['status', 'uint'], ['contentType', 'common'], ['type', ['html', 'css', 'other']], ['charset', 'common'],
  ['etag', 'str'], ['lastModified', 'str'], ['location', 'str'], ['via', 'str'], ['hops', 'uint'],
  ['wanted', 'str'], ['file', 'str'], ['body', 'hex'], ['scan', 'hex'], ['bytes', 'uint'], ['sha256', 'hex'],
  ['error', 'json'], ['change', ['new', 'changed', 'not-modified', 'same-bytes']], ['compare', 'hex'],
  ['compressed', 'json'], ['stale', 'flag'], ['aliasOf', 'str'], ['render', 'json'],
  ['fetched', 'uint'], ['maxAge', 'uint'], ['immutable', 'flag'],
]);

/** A local crawl's records, packed in the arena outside the JS heap; referrers are slot numbers. @implements {RecordStore} */
export class MemoryRecordStore {
  #arena;
  #column;
  #state;
  #kind;
  #flags;
  /** slot + 1 of each referrer; 0: none */ #referrers;
  /** @type {Map<string, PageRecord>} records taken while queued, until put */ #taken = new Map();

  /** @param {Arena} [arena] shared with the last run's pages, so a URL's key is kept once @param {number} [column] */
  constructor(arena = new Arena(), column = 0) {
    this.#arena = arena;
    this.#column = column;
    this.#state = new Uint8Array(arena.capacity);
    this.#kind = new Uint8Array(arena.capacity);
    this.#flags = new Uint8Array(arena.capacity);
    this.#referrers = new Int32Array(arena.capacity * MAX_REFERRERS);
    arena.onGrow((capacity) => {
      this.#state = grown(this.#state, capacity);
      this.#kind = grown(this.#kind, capacity);
      this.#flags = grown(this.#flags, capacity);
      this.#referrers = grown(this.#referrers, capacity * MAX_REFERRERS);
    });
  }

  /** @param {FrontierItem[]} items @param {AddOutcome[]} outcomes */
  async admit(items, outcomes) {
    for (let i = 0; i < items.length; i++) {
      const { key, kind, referrer } = items[i];
      if (outcomes[i] === 'added') {
        const slot = this.#arena.intern(key);
        this.#arena.clear(slot, this.#column);
        this.#state[slot] = STATE_CODE.get('queued') ?? 0;
        this.#kind[slot] = kind === 'navigation' ? 0 : 1;
        this.#flags[slot] = 0;
        this.#referrers.fill(0, slot * MAX_REFERRERS, (slot + 1) * MAX_REFERRERS);
        // The slot first: interning may grow the arrays.
        const from = referrer ? this.#arena.intern(referrer) : -1;
        if (referrer) this.#referrers[slot * MAX_REFERRERS] = from + 1;
        continue;
      }
      const taken = this.#taken.get(key);
      if (taken) {
        if (kind === 'navigation') taken.kind = 'navigation';
        const referrers = taken.referrers;
        if (referrer && referrers && referrers.length < MAX_REFERRERS && !referrers.includes(referrer)) {
          taken.referrers = referrers.concat(referrer); // exact size, unlike push
        }
        continue;
      }
      const slot = this.#arena.slotOf(key);
      if (slot === undefined || this.#state[slot] === 0) continue;
      if (kind === 'navigation') this.#kind[slot] = 0;
      if (referrer && !(this.#flags[slot] & NO_REFERRERS)) this.#noteReferrer(slot, referrer);
    }
  }

  /** @param {number} slot @param {string} referrer */
  #noteReferrer(slot, referrer) {
    const from = this.#arena.slotOf(referrer);
    const base = slot * MAX_REFERRERS;
    for (let i = 0; i < MAX_REFERRERS; i++) {
      const noted = this.#referrers[base + i];
      if (noted === 0) {
        const slotOfReferrer = from ?? this.#arena.intern(referrer); // may grow the arrays: read them after
        this.#referrers[base + i] = slotOfReferrer + 1;
        return;
      }
      if (noted === (from ?? -1) + 1) return;
    }
  }

  /** @param {string} key */
  async get(key) {
    return this.#get(key);
  }

  /** @param {string[]} keys */
  async getMany(keys) {
    return keys.map((key) => this.#get(key));
  }

  /** @param {string} key */
  #get(key) {
    const taken = this.#taken.get(key);
    if (taken) return taken;
    const slot = this.#arena.slotOf(key);
    if (slot === undefined || this.#state[slot] === 0) return undefined;
    const record = this.#decode(slot, key);
    if (record.state === 'queued') this.#taken.set(key, record);
    return record;
  }

  /** @param {number} slot @param {string} key */
  #decode(slot, key) {
    const record = newRecord(key, this.#kind[slot] === 0 ? 'navigation' : 'requisite', null);
    record.state = /** @type {RecordState} */ (STATES[this.#state[slot]]);
    const flags = this.#flags[slot];
    if (flags & NO_REFERRERS) {
      record.referrers = undefined;
    } else {
      const base = slot * MAX_REFERRERS;
      for (let i = 0; i < MAX_REFERRERS && this.#referrers[base + i] !== 0; i++) {
        /** @type {string[]} */ (record.referrers).push(this.#arena.keys[this.#referrers[base + i] - 1]);
      }
    }
    const bytes = this.#arena.read(slot, this.#column);
    if (bytes) CODEC.decode(bytes, record);
    if (flags & FILE_IS_WANTED) record.file = record.wanted;
    return record;
  }

  /** @param {PageRecord} record */
  async put(record) {
    const slot = this.#arena.intern(record.key);
    // Every key interned before the arrays are written: interning may grow them.
    const referrers = (record.referrers ?? []).slice(0, MAX_REFERRERS).map((referrer) => this.#arena.intern(referrer) + 1);
    this.#state[slot] = STATE_CODE.get(record.state) ?? 0;
    this.#kind[slot] = record.kind === 'navigation' ? 0 : 1;
    const fileIsWanted = record.file !== undefined && record.file === record.wanted;
    this.#flags[slot] = (record.referrers ? 0 : NO_REFERRERS) | (fileIsWanted ? FILE_IS_WANTED : 0);
    const base = slot * MAX_REFERRERS;
    this.#referrers.fill(0, base, base + MAX_REFERRERS);
    this.#referrers.set(referrers, base);
    const bytes = CODEC.encode(record, fileIsWanted ? 'file' : undefined);
    if (bytes.length > 0) this.#arena.write(slot, bytes, bytes.length, this.#column);
    else this.#arena.clear(slot, this.#column);
    if (this.#taken.get(record.key) === record) this.#taken.delete(record.key);
  }

  /** @param {RecordState | RecordState[]} states */
  async list(states) {
    return [...this.#inState(states)].map((slot) => this.#taken.get(this.#arena.keys[slot]) ?? this.#decode(slot, this.#arena.keys[slot]));
  }

  /** @param {RecordState} state */
  async keys(state) {
    return [...this.#inState(state)].map((slot) => this.#arena.keys[slot]);
  }

  /** A taken record counts by its current state. @param {RecordState | RecordState[]} states */
  * #inState(states) {
    const wanted = new Set([states].flat());
    const codes = new Set([...wanted].map((state) => STATE_CODE.get(state)));
    const keys = this.#arena.keys;
    const anyTaken = this.#taken.size > 0;
    for (let slot = 0; slot < keys.length; slot++) {
      const taken = anyTaken ? this.#taken.get(keys[slot]) : undefined;
      if (taken ? wanted.has(taken.state) : codes.has(this.#state[slot])) yield slot;
    }
  }

  async close() {
    this.#taken.clear();
  }
}
