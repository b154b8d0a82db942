// @ts-check
/**
 * The record store: what is known about each in-scope URL (status,
 * validators, wanted and final file, hashes of its staged body and scan,
 * bytes and sha256 of the written file, error, referrers). The frontier only
 * knows keys; everything else is here. Async, so that a store in Redis or on
 * disk implements the same calls; `MemoryRecordStore` is the one a local
 * crawl uses.
 *
 * @typedef {import('./frontier.js').FrontierItem} FrontierItem
 * @typedef {import('./frontier.js').AddOutcome} AddOutcome
 * @typedef {'queued' | 'done' | 'failed' | 'redirect' | 'gone'} RecordState
 *   gone: a page of the previous crawl that now answers 404 or 410
 * @typedef {'new' | 'changed' | 'not-modified' | 'same-bytes'} Change
 * @typedef {{
 *   key: string,
 *   kind: import('./frontier.js').LinkKind,
 *   state: RecordState,
 *   referrers: string[] | undefined,
 *   status: number | undefined,
 *   contentType: string | undefined,
 *   type: 'html' | 'css' | 'other' | undefined,
 *   charset: string | undefined,
 *   etag: string | undefined,
 *   lastModified: string | undefined,
 *   location: string | undefined,
 *   via: string | undefined,
 *   hops: number,
 *   wanted: string | undefined,
 *   file: string | undefined,
 *   body: string | undefined,
 *   scan: string | undefined,
 *   bytes: number | undefined,
 *   sha256: string | undefined,
 *   error: { status?: number, message: string, code?: string } | undefined,
 *   change: Change | undefined,
 *   compare: string | undefined,
 *   compressed: string[] | undefined,
 *   stale: boolean,
 *   aliasOf: string | undefined,
 *   render: import('../render/step.js').RenderInfo | undefined,
 * }} PageRecord
 *   body: the staged raw body's blob id (its sha256); scan: the blob id of
 *   its scan (links with offsets and resolved targets: the outlinks);
 *   bytes/sha256: of the file as written. via/hops: for a URL first reached
 *   through a redirect, the URL that redirected to it and the number of
 *   redirects that led here. compare: with --ignore, the sha256 of the body
 *   without the ignored spans, which tells whether it changed. aliasOf: the
 *   URL whose file this page shares (same wanted name, same bytes: "/" and
 *   "/index.html").
 * @typedef {{
 *   admit(items: FrontierItem[], outcomes: AddOutcome[]): Promise<void>,
 *   get(key: string): Promise<PageRecord | undefined>,
 *   put(record: PageRecord): Promise<void>,
 *   list(state: RecordState): Promise<PageRecord[]>,
 *   close(): Promise<void>,
 * }} RecordStore
 */

export const MAX_REFERRERS = 5;

/**
 * A fresh record: every field declared, so all records share one shape.
 * @param {string} key
 * @param {import('./frontier.js').LinkKind} kind
 * @param {string | null} referrer
 * @returns {PageRecord}
 */
export function newRecord(key, kind, referrer) {
  return {
    key, kind, state: 'queued', referrers: referrer ? [referrer] : [],
    status: undefined, contentType: undefined, type: undefined, charset: undefined, etag: undefined, lastModified: undefined,
    location: undefined, via: undefined, hops: 0, wanted: undefined, file: undefined, body: undefined, scan: undefined, bytes: undefined, sha256: undefined,
    error: undefined, change: undefined, compare: undefined, compressed: undefined, stale: false, aliasOf: undefined, render: undefined,
  };
}

/** @implements {RecordStore} */
export class MemoryRecordStore {
  /** @type {Map<string, PageRecord>} */
  #records = new Map();

  /**
   * Create records for new URLs; note the referrer and kind of known ones.
   * @param {FrontierItem[]} items
   * @param {AddOutcome[]} outcomes
   */
  async admit(items, outcomes) {
    for (let i = 0; i < items.length; i++) {
      const { key, kind, referrer } = items[i];
      if (outcomes[i] === 'added') {
        this.#records.set(key, newRecord(key, kind, referrer));
        continue;
      }
      const record = this.#records.get(key);
      if (!record) continue;
      if (kind === 'navigation') record.kind = 'navigation';
      const referrers = record.referrers;
      if (referrer && referrers && referrers.length < MAX_REFERRERS && !referrers.includes(referrer)) {
        record.referrers = referrers.concat(referrer); // exact size, unlike push
      }
    }
  }

  /** @param {string} key */
  async get(key) {
    return this.#records.get(key);
  }

  /** @param {PageRecord} record */
  async put(record) {
    this.#records.set(record.key, record);
  }

  /** @param {RecordState} state */
  async list(state) {
    const list = [];
    for (const record of this.#records.values()) if (record.state === state) list.push(record);
    return list;
  }

  async close() {
    this.#records.clear();
  }
}
