// @ts-check
import { performance } from 'node:perf_hooks';
import { RENAMED_LISTED } from '../naming/assign.js';
import { EarlyOutputs } from './early-outputs.js';

/**
 * Early writes: a page is rendered on a thread into a scratch file once every URL it links to is settled. Phase two
 * takes it only if it is what phase two would make. Local tree and idle time only.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('./page-work.js').RenderOutput} RenderOutput
 * @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {{ body: string, scan: string, type: 'html' | 'css', charset: string }} Source a fed page's staged bytes
 * @typedef {{ key: string, deps: string[], left: number, source?: Source }} Waiting
 * @typedef {{ keys: string[], never: Set<string>, sure?: Set<string> }} LinksTo
 *   never: links that can never be pages of the crawl; sure: (shared crawl) those sure to come through the feed
 * @typedef {{ read(wantMs: number, max: number): Promise<{ key: string, record: PageRecord, linksTo?: LinksTo }[]>, stop(): Promise<void> }} Feed
 *   every process's results; read keeps the feed wanted wantMs more
 */

const MAX_WAITING = 10_000;
/** Past it a ready page waits in line, so early writes take only idle thread time. */
const MAX_IN_FLIGHT = 16;
/** Past this main-thread busy share early writes pause: a CPU-bound crawl gains nothing from them. */
const BUSY = 0.6;
const WINDOW_MS = 250;
const MAX_KNOWN = 500_000;

/** A URL that ended as anything but a page with a file: links to it make a page wait for phase two. */
const UNSETTLED = '';

/** On the hooks `afterPage` and `afterPass`: early outputs serve the first pass only. @param {CrawlRun} run @param {EarlyWrites} early */
export function plugEarlyWrites(run, early) {
  run.hooks.on('afterPage', 'early writes', (page) => early.visited(page));
  run.hooks.on('afterPass', 'early writes', () => early.drop());
}

/** A coordinator that stops reading stops the feed within this. */
const FEED_WANT_MS = 2000;
const FEED_BATCH = 512;
const FEED_EVERY_MS = 50;

export class EarlyWrites {
  /**
   * @param {CrawlRun} run @param {import('./page-work.js').RenderContext} context
   * @param {Feed | null} [feed] a shared crawl's feed: every result comes from it
   */
  constructor(run, context, feed = null) {
    this.run = run;
    this.context = context;
    /** @type {Map<string, string>} URL -> its wanted file, or UNSETTLED */ this.known = new Map();
    /** @type {Map<string, Waiting[]>} a queued URL -> the pages waiting for it */ this.waiters = new Map();
    this.waiting = 0;
    /** @type {Waiting[]} ready, waiting for a render slot (from readyAt) */ this.ready = [];
    this.readyAt = 0;
    /** @type {Set<string>} URLs fed twice */ this.refed = new Set();
    this.done = new EarlyOutputs();
    this.open = true;
    this.contextSet = false;
    this.inFlight = 0;
    this.utilization = performance.eventLoopUtilization();
    this.checkedAt = performance.now();
    this.busy = false;
    this.always = run.options.early === 'always';
    this.counts = { taken: 0 };
    this.feed = feed;
    this.fed = 0;
    if (feed) this.#follow(feed);
  }

  /** In a shared crawl this process's results come through the feed like the others'. @param {import('./fetch-phase.js').PageInFlight} page */
  visited(page) {
    if (this.feed) return;
    this.#settle(page.key, page.record, page.linksTo);
    page.linksTo = undefined;
    if (this.readyAt < this.ready.length) this.#pump();
  }

  /** Until the crawl phase ends, or it fails: phase two does the rest. @param {Feed} feed */
  async #follow(feed) {
    try {
      await feed.stop(); // what a killed coordinator left
      while (this.open) {
        const results = await feed.read(FEED_WANT_MS, FEED_BATCH);
        if (!this.open) break;
        this.fed += results.length;
        if (this.fed >= this.run.options.threadsFrom && !this.run.threads.ready) this.run.threads.warm();
        for (const { key, record, linksTo } of results) this.#settle(key, record, linksTo);
        this.#pump();
        if (results.length < FEED_BATCH) await new Promise((resolve) => { setTimeout(resolve, FEED_EVERY_MS).unref(); });
      }
    } catch {
      this.open = false;
      this.waiters.clear();
    }
  }

  /** @param {string} key @param {PageRecord} record @param {LinksTo | undefined} linksTo */
  #settle(key, record, linksTo) {
    if (!this.open) return;
    if (this.known.size >= MAX_KNOWN) {
      // Past this, no URL is remembered, so no page could be rendered with all its links: the rest is phase two's.
      this.open = false;
      this.waiters.clear();
      return;
    }
    // Fed again (its lease lapsed, another visit's result won): what was rendered from the first result goes.
    if (this.feed && this.known.has(key)) {
      this.done.forgetLinksTo([key]);
      this.refed.add(key); // and it is not rendered early again (a render of its first result may still wait in line)
    }
    // Remembered only while wanted, else its linkers wait for phase two; the feed's always, since pages wait on unknown URLs.
    const recorded = this.feed !== null || !this.#tooBusy() || this.waiters.has(key);
    const settled = recorded && record.state === 'done' && record.wanted !== undefined;
    if (recorded) this.known.set(key, settled ? /** @type {string} */ (record.wanted) : UNSETTLED);
    if (settled && record.change === 'new' && !record.stale && (record.type === 'html' || record.type === 'css')
      && record.body !== undefined && record.scan !== undefined && linksTo) {
      const source = this.feed ? { body: record.body, scan: record.scan, type: record.type, charset: record.charset ?? 'utf-8' } : undefined;
      this.#consider(key, linksTo, source);
    }
    const waiting = this.waiters.get(key);
    if (waiting) {
      this.waiters.delete(key);
      for (const waiter of waiting) {
        if (waiter.left < 0) continue; // given up already
        if (!settled) {
          waiter.left = -1;
          this.waiting--;
          continue;
        }
        if (--waiter.left === 0) {
          this.waiting--;
          this.#render(waiter.key, waiter.deps, waiter.source);
        }
      }
    }
  }

  /** A busy crawl pays nothing for a page's links. */
  wanted() {
    return this.open && !this.#tooBusy();
  }

  #tooBusy() {
    if (this.always) return false;
    if (this.run.threads.backlog > 0) return true;
    const now = performance.now();
    if (now - this.checkedAt >= WINDOW_MS) {
      const current = performance.eventLoopUtilization();
      this.busy = performance.eventLoopUtilization(current, this.utilization).utilization > BUSY;
      this.utilization = current;
      this.checkedAt = now;
    }
    return this.busy;
  }

  /** @param {string} key @param {LinksTo} linksTo @param {Source} [source] a fed page's staged bytes */
  #consider(key, linksTo, source) {
    if (!this.feed && this.#tooBusy()) return; // the feed's links are collected anyway: considered, rendered when there is time
    const deps = [...new Set(linksTo.keys)];
    let left = 0;
    /** @type {string[]} */ const pending = [];
    for (const dep of deps) {
      if (dep === key) continue;
      const file = this.known.get(dep);
      if (file !== undefined) {
        if (file === UNSETTLED) return; // a failure or redirect: phase two
        continue;
      }
      if (linksTo.never.has(dep)) continue;
      // In scope but not admitted (depth, limit, robots...), or in a shared crawl not sure to be: phase two.
      if (this.feed ? !linksTo.sure?.has(dep) : !this.#queued(dep)) return;
      pending.push(dep);
      left++;
    }
    if (left === 0) {
      this.#render(key, deps, source);
      return;
    }
    if (this.waiting >= MAX_WAITING) return;
    /** @type {Waiting} */ const waiter = { key, deps, left, source };
    this.waiting++;
    for (const dep of pending) {
      const list = this.waiters.get(dep);
      if (list) list.push(waiter);
      else this.waiters.set(dep, [waiter]);
    }
  }

  /** @param {string} key whether the frontier holds it, not yet visited */
  #queued(key) {
    return this.run.coordination.knows(key);
  }

  /** @param {string} key @param {string[]} deps @param {Source} [source] a fed page's staged bytes (else its record says) */
  #render(key, deps, source) {
    if (!this.open) return;
    if (this.inFlight >= MAX_IN_FLIGHT || !this.run.threads.ready || this.#tooBusy()) {
      if (this.ready.length - this.readyAt < MAX_WAITING) this.ready.push({ key, deps, left: 0, source }); // else phase two does it
      return;
    }
    this.#start(key, deps, source);
  }

  #pump() {
    while (this.readyAt < this.ready.length && this.open && this.inFlight < MAX_IN_FLIGHT && this.run.threads.ready && !this.#tooBusy()) {
      const next = this.ready[this.readyAt++];
      this.#start(next.key, next.deps, next.source);
    }
    if (this.readyAt === this.ready.length) {
      this.ready = [];
      this.readyAt = 0;
    } else if (this.readyAt > 1024 && this.readyAt * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.readyAt);
      this.readyAt = 0;
    }
  }

  /** @param {string} key @param {string[]} deps @param {Source} [source] */
  #start(key, deps, source) {
    const run = this.run;
    const file = this.known.get(key);
    const target = /** @type {import('../output/local-tree.js').LocalTree} */ (run.target);
    const blobs = /** @type {{ locate(id: string): import('./page-work.js').BlobPlace }} */ (/** @type {unknown} */ (run.blobs));
    if (!file || file === UNSETTLED || this.refed.has(key)) return;
    /** @type {Map<string, string>} */ const names = new Map();
    for (const dep of deps) {
      const found = dep === key ? file : this.known.get(dep);
      if (found === UNSETTLED) return;
      if (found !== undefined) names.set(dep, found);
    }
    if (!this.contextSet) {
      run.threads.setContext(this.context);
      this.contextSet = true;
    }
    const scratch = target.scratch();
    const result = (async () => {
      const record = source ?? await run.records.get(key);
      if (!record || record.body === undefined || record.scan === undefined) return null;
      const places = /** @type {[import('./page-work.js').BlobPlace, import('./page-work.js').BlobPlace]} */ ([blobs.locate(record.body), blobs.locate(record.scan)]);
      return run.threads.renderEarly({
        places, bodyId: record.body, scanId: record.scan, url: key, file,
        type: record.type === 'css' ? 'css' : 'html', charset: record.charset ?? 'utf-8', temp: scratch.path, names,
      });
    })().catch(() => null) // phase two renders it again, and says what fails
      .finally(() => {
        this.inFlight--;
        this.#pump();
      });
    this.inFlight++;
    this.done.add(key, scratch.n, result, deps);
  }

  /** A page linking to a renamed URL is rendered again in phase two. @param {{ renamed: string[] }} naming */
  close(naming) {
    this.stop();
    this.forgetLinksTo(naming.renamed);
  }

  /** Early outputs of pages that may link to these URLs are not taken; past RENAMED_LISTED, none is. @param {string[]} urls */
  forgetLinksTo(urls) {
    if (urls.length > RENAMED_LISTED) this.done.clear();
    else if (urls.length > 0) this.done.forgetLinksTo(urls);
  }

  stop() {
    if (this.open || this.known.size > 0) this.feed?.stop().catch(() => {}); // a lost Redis shows in the run's own calls
    this.open = false;
    this.known.clear();
    this.waiters.clear();
    this.ready = [];
    this.readyAt = 0;
  }

  /** Null: render it as usual. @param {string} key @param {string} file @returns {Promise<{ result: RenderOutput, adopt: () => Promise<void> } | null>} */
  async take(key, file) {
    const early = await this.done.take(key);
    if (!early) return null;
    this.counts.taken++;
    const target = /** @type {import('../output/local-tree.js').LocalTree} */ (this.run.target);
    return { result: early.result, adopt: () => target.adoptScratch(early.temp, file) };
  }

  /** @param {string} key whether a page has an early output to take */
  has(key) {
    return this.done.slots.has(key);
  }

  /** Resolves once no render runs, so none writes into the temp directory while the commit removes it. */
  async drop() {
    this.done.clear();
    await this.done.settled();
  }
}
