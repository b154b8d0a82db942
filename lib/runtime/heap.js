// @ts-check
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';

/**
 * V8 lets the old generation grow to several times what survived the last full collection: past `liveBytes` live (and `when` agrees),
 * growth is capped at `percent` %. Flags are per process: for the command line, not the library. See BENCHMARKS.md, "Decisions".
 * @param {{ liveBytes?: number, percent?: number, when?: (live: number) => boolean, setFlags?: (flags: string) => void }} [options] @returns {() => void} stop
 */
export function boundHeapGrowth({ liveBytes = 32 * 1024 * 1024, percent = 35, when = () => true, setFlags = v8.setFlagsFromString } = {}) {
  let bounded = false;
  /** @param {boolean} on */ const set = (on) => {
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

/** A new isolate (a worker thread's start) resets the young generation's growth factor, so threads.js calls this until each thread is online. */
export function reassertHeapBounds() {
  for (const again of holders) again();
}

/** Past 5,000 pages, or when 32 MiB is live (a re-crawl's state); BENCHMARKS.md, "Decisions". @param {{ fetched: number }} stats @returns {(live: number) => boolean} */
export function crawlBound(stats) {
  return (live) => live > 32 * 1024 * 1024 || stats.fetched >= 5000;
}

/** @type {(() => void) | null} the young generation's bound in force, if any */
let youngBound = null;

/** Both semi-spaces, in bytes. */
export function youngGenerationSize() {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/**
 * V8 doubles the semi-spaces while objects survive, which page data always does. The maximum is fixed at start-up on a command
 * line we do not own (npm's shims), but the growth factor is read at each growth, so it is set to 1 at the cap. Loading the
 * modules alone grows it, so lib/start.js calls this first. See BENCHMARKS.md, "Decisions" (young generation).
 * @param {{ capBytes?: number, setFlags?: (flags: string) => void, size?: () => number }} [options] @returns {() => void} stop watching
 */
export function boundYoungGeneration({ capBytes = 8 * 1024 * 1024, setFlags = v8.setFlagsFromString, size = youngGenerationSize } = {}) {
  let held = false;
  /** @param {boolean} on */ const set = (on) => {
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

/** For a shared crawl's coordinator, which costs more CPU under the bound (BENCHMARKS.md, "Decisions"). */
export function releaseYoungGeneration() {
  youngBound?.();
}

/** From 8 MiB live, when crawlBound says so. @param {{ fetched: number }} stats @param {{ setFlags?: (flags: string) => void }} [options] @returns {() => void} stop watching */
export function boundCrawlHeap(stats, options = {}) {
  return boundHeapGrowth({ liveBytes: 8 * 1024 * 1024, when: crawlBound(stats), ...options });
}
