// @ts-check
/**
 * The frontier: which in-scope URLs are known, which wait, which are in
 * flight. Keys and queue state only; what is known about a page lives in the
 * record store. The API is async so a shared frontier (Redis) can stand in.
 *
 * `maxPages` bounds the URLs that become pages: a URL that ends as a
 * redirect or a failure gives its slot back, and the first URL refused for
 * lack of room is admitted in its place.
 *
 * @typedef {'navigation' | 'requisite'} LinkKind
 * @typedef {{ key: string, kind: LinkKind, referrer: string | null }} FrontierItem
 * @typedef {'added' | 'known' | 'limit'} AddOutcome
 * @typedef {{
 *   add(items: FrontierItem[]): Promise<AddOutcome[]>,
 *   take(max: number): Promise<string[]>,
 *   done(key: string, outcome: { page: boolean, requisitesSkipped?: number, linksTo?: import('../engine/early.js').LinksTo }): Promise<FrontierItem[]>,
 *   retry(key: string): Promise<void>,
 *   counts(): { queued: number, inFlight: number, known: number, overLimit: number, overLimitSaturated: boolean },
 *   idle?(): Promise<void>,
 *   wantsLinks?(): boolean,
 *   release?(): void,
 *   queued?(key: string): boolean,
 * }} Frontier
 *   done() returns the items admitted in place of a URL that did not become a page;
 *   linksTo: the page's links, when collected for a frontier that wantsLinks() (a
 *   shared crawl's coordinator writes pages early from them: crawl/early.js).
 *   counts() is synchronous: a shared frontier answers with what its last take() saw;
 *   its `queued` then counts the work other processes still hold, so a
 *   process does not stop while another may still add URLs.
 *   idle(): for a frontier that may have nothing to hand out while the
 *   crawl goes on elsewhere (leases held by other processes, politeness):
 *   resolves after a short wait.
 *   release(): the crawl phase is over and its counts read: a frontier that
 *   holds its URLs in this process lets them go (phase two never asks it
 *   again; at 200,000 URLs its map is about 9 MB of the peak).
 *   queued(): whether a URL waits to be taken (a re-crawl's requests asked ahead
 *   are for those only: revalidate.js).
 */

/** Distinct over-limit URLs remembered; past this the count is a lower bound. */
const MAX_OVER_LIMIT_TRACKED = 200_000;

/** States kept per key: small integers, not objects. */
const QUEUED = 0;
const IN_FLIGHT = 1;
const DONE = 2;

/**
 * A copy of `s` that does not share memory with any other string. Keys come
 * out of the links text of the page that named them (`slice`: V8 makes a
 * view that keeps that whole text alive, 2-50 KB a page); a key that is
 * kept for the crawl must not hold its page's text.
 * @param {string} s
 */
export function ownString(s) {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** @implements {Frontier} */
export class MemoryFrontier {
  /**
   * @param {{ maxPages: number, keyOf?: (key: string) => string }} options keyOf: the one
   *   string the run keeps for a URL (the record store's), instead of a copy of its own
   */
  constructor({ maxPages, keyOf = ownString }) {
    this.maxPages = maxPages;
    this.keyOf = keyOf;
    /** @type {Map<string, number>} key -> state */
    this.states = new Map();
    /** @type {string[]} */
    this.queue = [];
    this.head = 0;
    this.inFlight = 0;
    /** URLs that ended as something other than a page (their slots are free again). */
    this.freed = 0;
    /** @type {Map<string, FrontierItem>} in scope, refused for lack of room, in order of arrival */
    this.overflow = new Map();
    this.overflowSaturated = false;
  }

  /** @param {FrontierItem[]} items */
  async add(items) {
    return items.map((item) => this.#addOne(item));
  }

  /**
   * @param {FrontierItem} item
   * @returns {AddOutcome}
   */
  #addOne(item) {
    if (this.states.has(item.key)) return 'known';
    if (this.states.size - this.freed >= this.maxPages) {
      if (this.overflow.has(item.key)) return 'known';
      if (this.overflow.size < MAX_OVER_LIMIT_TRACKED) this.overflow.set(item.key, item);
      else this.overflowSaturated = true;
      return 'limit';
    }
    // Kept for the whole crawl: a string of its own, not a slice of the page text it was found in
    // (a slice keeps all of that text alive); the run's (index.js) is the one its arena keeps.
    const key = this.keyOf(item.key);
    item.key = key;
    this.states.set(key, QUEUED);
    this.queue.push(key);
    return 'added';
  }

  /** @param {number} max */
  async take(max) {
    const taken = [];
    while (taken.length < max && this.head < this.queue.length) {
      const key = this.queue[this.head++];
      if (this.states.get(key) !== QUEUED) continue;
      this.states.set(key, IN_FLIGHT);
      this.inFlight++;
      taken.push(key);
    }
    if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return taken;
  }

  /**
   * @param {string} key
   * @param {{ page: boolean }} outcome
   */
  async done(key, { page }) {
    if (this.states.get(key) === IN_FLIGHT) this.inFlight--;
    this.states.set(key, DONE);
    if (page) return [];
    this.freed++;
    /** @type {FrontierItem[]} */
    const promoted = [];
    for (const [waiting, item] of this.overflow) {
      this.overflow.delete(waiting);
      if (this.#addOne(item) === 'added') promoted.push(item);
      break;
    }
    return promoted;
  }

  /** @param {string} key */
  queued(key) {
    return this.states.get(key) === QUEUED;
  }

  /** @param {string} key */
  async retry(key) {
    if (this.states.get(key) === IN_FLIGHT) this.inFlight--;
    this.states.set(key, QUEUED);
    this.queue.push(key);
  }

  release() {
    this.states = new Map();
    this.queue = [];
    this.head = 0;
    this.overflow = new Map();
  }

  counts() {
    return {
      queued: this.queue.length - this.head,
      inFlight: this.inFlight,
      known: this.states.size,
      overLimit: this.overflow.size,
      overLimitSaturated: this.overflowSaturated,
    };
  }
}
