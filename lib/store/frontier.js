// @ts-check
/**
 * The frontier: which in-scope URLs are known, wait or are in flight, keys only. Async so Redis can stand in.
 * Invariant: `maxPages` bounds URLs that become pages; a redirect or failure gives its slot back to the first URL
 * refused for lack of room.
 * @typedef {'navigation' | 'requisite'} LinkKind
 * @typedef {{ key: string, kind: LinkKind, referrer: string | null }} FrontierItem
 * @typedef {'added' | 'known' | 'limit'} AddOutcome
 * @typedef {{
 *   add(items: FrontierItem[]): Promise<AddOutcome[]>, take(max: number): Promise<string[]>,
 *   done(key: string, outcome: { page: boolean, requisitesSkipped?: number, linksTo?: import('../engine/early.js').LinksTo }): Promise<FrontierItem[]>,
 *   retry(key: string): Promise<void>, counts(): { queued: number, inFlight: number, known: number, overLimit: number, overLimitSaturated: boolean },
 * }} Frontier
 *   done() returns the items admitted in place of a URL that did not become a page. counts() is synchronous: a shared
 *   frontier's `queued` includes other processes' work, so no process stops early.
 */

/** Past this the over-limit count is a lower bound. */
const MAX_OVER_LIMIT_TRACKED = 200_000;

/** States kept per key: small integers, not objects. */
const QUEUED = 0;
const IN_FLIGHT = 1;
const DONE = 2;

/** A copy sharing no memory: a `slice` of a page's links text would keep that whole text alive. @param {string} s */
export function ownString(s) {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** @implements {Frontier} */
export class MemoryFrontier {
  /** @param {{ maxPages: number, keyOf?: (key: string) => string }} options keyOf: the one string the run keeps for a URL */
  constructor({ maxPages, keyOf = ownString }) {
    this.maxPages = maxPages;
    this.keyOf = keyOf;
    /** @type {Map<string, number>} key -> state */ this.states = new Map();
    /** @type {string[]} */ this.queue = [];
    this.head = 0;
    this.inFlight = 0;
    /** URLs that ended as something other than a page: their slots are free again. */
    this.freed = 0;
    /** @type {Map<string, FrontierItem>} refused for lack of room, in order of arrival */ this.overflow = new Map();
    this.overflowSaturated = false;
  }

  /** @param {FrontierItem[]} items */
  async add(items) {
    return items.map((item) => this.#addOne(item));
  }

  /** @param {FrontierItem} item @returns {AddOutcome} */
  #addOne(item) {
    if (this.states.has(item.key)) return 'known';
    if (this.states.size - this.freed >= this.maxPages) {
      if (this.overflow.has(item.key)) return 'known';
      if (this.overflow.size < MAX_OVER_LIMIT_TRACKED) this.overflow.set(item.key, item);
      else this.overflowSaturated = true;
      return 'limit';
    }
    // Kept for the whole crawl: never a slice of the page text.
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

  /** @param {string} key @param {{ page: boolean }} outcome */
  async done(key, { page }) {
    if (this.states.get(key) === IN_FLIGHT) this.inFlight--;
    this.states.set(key, DONE);
    if (page) return [];
    this.freed++;
    /** @type {FrontierItem[]} */ const promoted = [];
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
