// @ts-check
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';

/**
 * Keep a large crawl's heap close to what is live in it. On a machine with
 * several GB of memory V8 lets its old generation grow to up to four times
 * what survived the last full collection before it runs the next one; a
 * crawl promotes a steady stream of short-lived page data, so at 200,000
 * pages that slack, not what is live, was most of the resident memory. Once
 * a full collection leaves more than `liveBytes` live, V8 is told to grow
 * the heap by at most `percent` % between full collections (its
 * `--heap-growing-percent`); below half of that, V8 decides again. Small
 * crawls are left alone (`when`, e.g. until 5,000 pages are fetched, unless
 * much is live already, as in a re-crawl that has loaded its last state):
 * their slack is small and the extra collections would cost them a few % of
 * CPU and of pages/s against a slow origin (BENCHMARKS.md).
 *
 * The flag is per process, so it holds in the worker threads' heaps too.
 * V8 flags are per process: this is for the command line, not the library.
 *
 * @param {{ liveBytes?: number, percent?: number, when?: (live: number) => boolean, setFlags?: (flags: string) => void }} [options]
 *   when: whether to bound now, given the bytes live (checked at each full collection past `liveBytes`; default always);
 *   setFlags: for tests
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
 * Set again the flags the bounds in force hold. A new isolate's heap set-up
 * (a worker thread's start) puts V8's growth factor of young generations
 * back to 2 (checked: the main thread's grew to 32 MiB after one started),
 * so threads.js calls this until each is online. A growth can still slip in
 * meanwhile, or while a long task keeps the check from running: the young
 * generation then ends one doubling above the cap (16 MiB).
 */
export function reassertHeapBounds() {
  for (const again of holders) again();
}

/**
 * When a crawl's heap is bounded (boundHeapGrowth's `when`): past its first
 * 5,000 pages, or at once when more than 32 MiB is live (a re-crawl that has
 * loaded its last state). 20,000 products peaked at 234 MB with it, 265 MB
 * with the bound from 32 MiB live only; a re-crawl of 200,000 pages waiting
 * for its 5,000th page grew to 378–443 MB (BENCHMARKS.md).
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
 * Keep the main thread's young generation at a few MiB. V8 doubles its
 * semi-spaces whenever enough objects survive its scavenges, which a crawl's
 * steady stream of page data always does, up to 16 MiB each here: at 200,000
 * pages that was 34 MB of resident memory, for no speed a crawl could
 * measure against 4 MiB semi-spaces (BENCHMARKS.md). Their largest size is
 * fixed at start-up (`--max-semi-space-size`, on a command line we do not
 * own: npm's shims start bin/), but V8 reads how much they grow by at each
 * growth: once the young generation reaches `capBytes` it stops growing
 * (`--semi-space-growth-factor=1`); when V8 shrinks it again (allocation
 * slowed down), it may grow back to the cap. Checked after each collection
 * this thread runs. Worker threads have a smaller cap of their own
 * (threads.js) and grow to it whatever this flag says (checked). Loading
 * the crawl's modules alone grows it to 16 MiB, so a crawling process calls
 * this before it loads anything else (lib/start.js).
 *
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
 * Give the young generation's growth back to V8 (the bound start.js set):
 * for a shared crawl's coordinator, which feeds on every process's pages
 * and spent about 10 % more CPU a page with the bound (BENCHMARKS.md).
 */
export function releaseYoungGeneration() {
  youngBound?.();
}

/**
 * The heap bound of a crawling process (`crawl`, `worker`): from 8 MiB live,
 * when crawlBound says so. (A local crawl's young generation is bounded
 * from the process's start: lib/start.js.)
 * @param {{ fetched: number }} stats the process's crawl counters
 * @param {{ setFlags?: (flags: string) => void }} [options] for tests
 * @returns {() => void} stop watching
 */
export function boundCrawlHeap(stats, options = {}) {
  return boundHeapGrowth({ liveBytes: 8 * 1024 * 1024, when: crawlBound(stats), ...options });
}
