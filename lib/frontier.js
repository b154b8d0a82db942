// @ts-check
/**
 * The set of in-scope URLs, keyed by canonical URL, with a FIFO queue of
 * those still to fetch. Each URL has exactly one entry for the whole run.
 */

/**
 * @typedef {'queued' | 'fetching' | 'done' | 'failed' | 'redirect'} EntryState
 * @typedef {{
 *   key: string,
 *   state: EntryState,
 *   kind: 'navigation' | 'requisite',
 *   file?: string,
 *   location?: string,
 *   referrers?: string[],
 *   stagedAt?: number,
 *   stagedBody?: number,
 *   stagedScan?: number,
 *   meta?: PageMeta,
 *   error?: { status?: number, message: string, code?: string },
 * }} Entry
 * @typedef {{
 *   status: number,
 *   contentType: string,
 *   bytes?: number,
 *   sha256?: string,
 *   etag?: string,
 *   lastModified?: string,
 *   charset?: string,
 *   type: 'html' | 'css' | 'other',
 * }} PageMeta
 */

const MAX_REFERRERS = 5;
/** Distinct over-limit URLs remembered for counting; past this the count is a lower bound. */
const MAX_OVER_LIMIT_TRACKED = 200_000;

export class Frontier {
  /** @param {{ maxPages: number }} options */
  constructor({ maxPages }) {
    this.maxPages = maxPages;
    /** @type {Map<string, Entry>} */
    this.entries = new Map();
    /** @type {string[]} */
    this.queue = [];
    this.head = 0;
    /** @type {Set<string>} distinct in-scope URLs refused because of maxPages */
    this.refused = new Set();
    /** true when more URLs were refused than `refused` remembers */
    this.overLimitSaturated = false;
  }

  /**
   * @param {string} key canonical URL
   * @param {{ referrer?: string, kind?: 'navigation' | 'requisite' }} [from]
   * @returns {'added' | 'known' | 'limit'}
   */
  add(key, from = {}) {
    const existing = this.entries.get(key);
    if (existing) {
      if (from.referrer && existing.referrers && existing.referrers.length < MAX_REFERRERS && !existing.referrers.includes(from.referrer)) {
        existing.referrers = existing.referrers.concat(from.referrer); // exact size, unlike push
      }
      if (from.kind === 'navigation') existing.kind = 'navigation';
      return 'known';
    }
    if (this.entries.size >= this.maxPages) {
      if (this.refused.size < MAX_OVER_LIMIT_TRACKED) this.refused.add(key);
      else if (!this.refused.has(key)) this.overLimitSaturated = true;
      return 'limit';
    }
    // Every field declared up front keeps entries small and of one shape.
    this.entries.set(key, {
      key,
      state: 'queued',
      kind: from.kind ?? 'navigation',
      referrers: from.referrer ? [from.referrer] : [],
      file: undefined,
      location: undefined,
      stagedAt: undefined,
      stagedBody: undefined,
      stagedScan: undefined,
      meta: undefined,
      error: undefined,
    });
    this.queue.push(key);
    return 'added';
  }

  /** @returns {Entry | undefined} the next entry to fetch, marked as fetching */
  next() {
    while (this.head < this.queue.length) {
      const key = this.queue[this.head++];
      if (this.head > 4096 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      const entry = this.entries.get(key);
      if (entry && entry.state === 'queued') {
        entry.state = 'fetching';
        return entry;
      }
    }
    return undefined;
  }

  /** Put an interrupted entry back (it will not count as fetched). */
  /** @param {Entry} entry */
  requeue(entry) {
    entry.state = 'queued';
  }

  /** Distinct in-scope URLs not crawled because of maxPages (a lower bound when saturated). */
  get overLimit() {
    return this.refused.size;
  }

  get pending() {
    return this.queue.length - this.head;
  }

  /**
   * The entry a key finally leads to, following redirects (at most 10 hops).
   * @param {string} key
   * @returns {Entry | undefined}
   */
  resolve(key) {
    let entry = this.entries.get(key);
    for (let hops = 0; entry && entry.state === 'redirect' && entry.location && hops < 10; hops++) {
      entry = this.entries.get(entry.location);
    }
    return entry;
  }
}
