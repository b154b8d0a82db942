// @ts-check
import { MemoryFrontier } from '../store/frontier.js';
import { MemoryRecordStore } from '../store/records.js';

/**
 * The one coordination seam: where a run's URLs, records and staged bodies live, and what happens around the fetch
 * phase. Implemented by LocalCoordination below and SharedCrawl (distributed/shared.js).
 * @typedef {import('./run.js').CrawlRun} CrawlRun
 * @typedef {{
 *   shared: boolean, ownsOut: boolean, frontier: import('../store/frontier.js').Frontier, records: import('../store/records.js').RecordStore,
 *   blobs: import('../store/blobs.js').LogBlobStore | import('../distributed/dir-blobs.js').DirBlobStore | null,
 *   seeds(roots: string[]): string[], attach(run: CrawlRun): void, backoff(info: { url: string, delayMs: number, error: Error }): void,
 *   idle(): Promise<void> | null, knows(key: string): boolean, waits(key: string): boolean | undefined,
 *   wantsLinks(run: CrawlRun): boolean, feed(): import('./early.js').Feed | null,
 *   barrier(run: CrawlRun, state: { interrupted: boolean }): Promise<void>, release(): void,
 *   finishPool(run: CrawlRun, out: string): Promise<import('./run.js').FinishPool | null>, finished(): Promise<void>,
 *   lastCrawl(): import('../recrawl/prior.js').Prior | null, close(): Promise<void>,
 * }} Coordination
 *   shared: pages are leased, and nothing is planned from one process's view: no journal, ask-ahead or unasked carry.
 *   ownsOut: this process locks OUT and writes the tree; lastCrawl: else the leases bring the last crawl.
 *   idle: wait while work is held elsewhere; waits: undefined when unknown here; wantsLinks and feed: for early writes;
 *   barrier: every process's fetch phase is over; finishPool: null for this process's threads.
 */

/** @implements {Coordination} */
export class LocalCoordination {
  shared = false;
  ownsOut = true;

  /**
   * @param {{ maxPages: number, arena: import('../store/arena.js').Arena, recordsColumn: number, blobs: import('../store/blobs.js').LogBlobStore | null }} options
   */
  constructor({ maxPages, arena, recordsColumn, blobs }) {
    this.frontier = new MemoryFrontier({ maxPages, keyOf: (key) => arena.own(key) });
    this.records = new MemoryRecordStore(arena, recordsColumn);
    this.blobs = blobs;
  }

  /** @param {string[]} roots */
  seeds(roots) {
    return roots;
  }

  attach() {}

  backoff() {}

  idle() {
    return null;
  }

  /** @param {string} key */
  knows(key) {
    return this.frontier.states.has(key);
  }

  /** @param {string} key */
  waits(key) {
    return this.frontier.queued(key);
  }

  /** @param {CrawlRun} run */
  wantsLinks(run) {
    return run.early?.wanted() ?? false;
  }

  feed() {
    return null;
  }

  async barrier() {}

  release() {
    this.frontier.release();
  }

  async finishPool() {
    return null;
  }

  async finished() {}

  lastCrawl() {
    return null;
  }

  async close() {}
}
