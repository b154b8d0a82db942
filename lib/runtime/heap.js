// @ts-check
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';

/**
 * Keep a large crawl's heap close to what is live: V8 lets the old
 * generation grow to several times what survived the last full collection.
 * Past `liveBytes` live (and `when` agrees), cap growth at `percent` %
 * (`--heap-growing-percent`); below half of it, V8 decides again. Flags are
 * per process (worker threads included): for the command line, not the library.
 * See BENCHMARKS.md, "Decisions" (heap bound).
 * @param {{ liveBytes?: number, percent?: number, when?: (live: number) => boolean, setFlags?: (flags: string) => void }} [options]
 *   when: checked at each full collection past `liveBytes` (default always)
 * @returns {() => void} stop watching, and give V8 its own policy back
 */
export function boundHeapGrowth({ liveBytes = 32 * 1024 * 1024, percent = 35, when = () => true, setFlags = v8.setFlagsFromString } = {}) {
  let bounded = false;
  /** @param {boolean} on */
  const set = (on) => {
    if (on === bounded) return;
    bounded = on;
    setFlags(`--heap-growing-percent=${on ? percent : 0}`);
  };
  const again = () => { if (bounded) setFlags(`--heap-growing-percent=${percent}`); };
  holders.add(again);
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (/** @type {{ detail?: { kind?: number } }} */ (/** @type {unknown} */ (entry)).detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
      const live = v8.getHeapStatistics().used_heap_size;
      if (live > liveBytes && when(live)) set(true);
      else if (live < liveBytes / 2) set(false);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => {
    observer.disconnect();
    holders.delete(again);
    set(false);
  };
}

/** @type {Set<() => void>} what each bound in force sets again after V8's flags were reset */
const holders = new Set();

/**
 * Set again the flags the bounds in force hold: a new isolate (a worker
 * thread's start) resets the young generation's growth factor to 2, so
 * threads.js calls this until each thread is online.
 */
export function reassertHeapBounds() {
  for (const again of holders) again();
}

/**
 * Bound a crawl's heap past its first 5,000 pages, or at once when more
 * than 32 MiB is live (a re-crawl that loaded its state). See BENCHMARKS.md,
 * "Decisions" (heap bound).
 * @param {{ fetched: number }} stats the crawl's counters, read at each full collection
 * @returns {(live: number) => boolean}
 */
export function crawlBound(stats) {
  return (live) => live > 32 * 1024 * 1024 || stats.fetched >= 5000;
}

/** @type {(() => void) | null} the young generation's bound in force, if any */
let youngBound = null;

/** The size of this thread's young generation (both semi-spaces), in bytes. */
export function youngGenerationSize() {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/**
 * Keep the main thread's young generation at `capBytes`: V8 doubles its
 * semi-spaces while objects survive, which a crawl's page data always does.
 * The maximum is fixed at start-up on a command line we do not own (npm's
 * shims), but the growth factor is read at each growth, so it is set to 1 at
 * the cap. Loading the crawl's modules alone grows it, so lib/start.js calls
 * this first. See BENCHMARKS.md, "Decisions" (young generation).
 * @param {{ capBytes?: number, setFlags?: (flags: string) => void, size?: () => number }} [options]
 *   size: the young generation's size now (for tests)
 * @returns {() => void} stop watching, and give V8 its own growth back
 */
export function boundYoungGeneration({ capBytes = 8 * 1024 * 1024, setFlags = v8.setFlagsFromString, size = youngGenerationSize } = {}) {
  let held = false;
  /** @param {boolean} on */
  const set = (on) => {
    if (on === held) return;
    held = on;
    setFlags(`--semi-space-growth-factor=${on ? 1 : 2}`);
  };
  const check = () => set(size() >= capBytes);
  const again = () => { if (held) setFlags('--semi-space-growth-factor=1'); };
  holders.add(again);
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  check();
  const stop = () => {
    observer.disconnect();
    holders.delete(again);
    set(false);
    if (youngBound === stop) youngBound = null;
  };
  youngBound = stop;
  return stop;
}

/**
 * Give the young generation's growth back to V8: for a shared crawl's
 * coordinator, which costs more CPU under the bound (BENCHMARKS.md, "Decisions").
 */
export function releaseYoungGeneration() {
  youngBound?.();
}

/**
 * The heap bound of a crawling process (`crawl`, `worker`): from 8 MiB live,
 * when crawlBound says so.
 * @param {{ fetched: number }} stats the process's crawl counters
 * @param {{ setFlags?: (flags: string) => void }} [options] for tests
 * @returns {() => void} stop watching
 */
export function boundCrawlHeap(stats, options = {}) {
  return boundHeapGrowth({ liveBytes: 8 * 1024 * 1024, when: crawlBound(stats), ...options });
}
