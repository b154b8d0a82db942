// @ts-check
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { boundCrawlHeap, boundHeapGrowth, boundYoungGeneration, crawlBound, releaseYoungGeneration } from '../../lib/runtime/heap.js';

v8.setFlagsFromString('--expose-gc');
const gc = /** @type {() => void} */ (vm.runInNewContext('gc'));

/**
 * Full collections until the observer has seen one (its entries come asynchronously).
 * @param {string[]} calls
 * @param {number} count calls to wait for
 */
async function collectUntil(calls, count) {
  for (let i = 0; i < 50 && calls.length < count; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('boundHeapGrowth', () => {
  it('bounds the heap growth once what is live passes the threshold, and gives V8 its policy back', async () => {
    /** @type {string[]} */
    const calls = [];
    const stop = boundHeapGrowth({ liveBytes: 1, percent: 35, setFlags: (flags) => calls.push(flags) });
    await collectUntil(calls, 1);
    expect(calls).toEqual(['--heap-growing-percent=35']);
    stop();
    expect(calls).toEqual(['--heap-growing-percent=35', '--heap-growing-percent=0']);
  });

  it('waits for `when` (a crawl past its first pages) before it bounds anything', async () => {
    /** @type {string[]} */
    const calls = [];
    let big = false;
    const stop = boundHeapGrowth({ liveBytes: 1, when: () => big, setFlags: (flags) => calls.push(flags) });
    /** @type {string[]} */
    const probe = [];
    const seen = boundHeapGrowth({ liveBytes: 1, setFlags: (flags) => probe.push(flags) });
    await collectUntil(probe, 1);
    expect(calls).toEqual([]);
    big = true;
    await collectUntil(calls, 1);
    stop();
    seen();
    expect(calls).toEqual(['--heap-growing-percent=35', '--heap-growing-percent=0']);
  });

  it('leaves a small heap to V8', async () => {
    /** @type {string[]} */
    const calls = [];
    /** @type {string[]} */
    const probe = [];
    const stop = boundHeapGrowth({ liveBytes: 64 * 1024 * 1024 * 1024, setFlags: (flags) => calls.push(flags) });
    // a second observer with a threshold of 1 byte tells when a collection has been seen
    const seen = boundHeapGrowth({ liveBytes: 1, setFlags: (flags) => probe.push(flags) });
    await collectUntil(probe, 1);
    stop();
    seen();
    expect(probe.length).toBeGreaterThan(0);
    expect(calls).toEqual([]);
  });

  it('a crawl is bounded past its first 5,000 pages, or at once with more than 32 MiB live (a re-crawl with its last state loaded)', () => {
    const stats = { fetched: 0 };
    const when = crawlBound(stats);
    expect(when(10 * 1024 * 1024)).toBe(false);
    expect(when(33 * 1024 * 1024)).toBe(true);
    stats.fetched = 5000;
    expect(when(10 * 1024 * 1024)).toBe(true);
  });

  it('the bound of crawl and worker processes: nothing before the 5,000th page (under 32 MiB live), bounded after it', async () => {
    const held = new Array(200_000).fill(0).map((_, i) => ({ i, s: `page ${i}` })); // well over 8 MiB live
    const stats = { fetched: 4999 };
    /** @type {string[]} */
    const calls = [];
    const stop = boundCrawlHeap(stats, { setFlags: (flags) => calls.push(flags) });
    /** @type {string[]} */
    const probe = [];
    const seen = boundHeapGrowth({ liveBytes: 1, setFlags: (flags) => probe.push(flags) });
    await collectUntil(probe, 1);
    const live = v8.getHeapStatistics().used_heap_size;
    if (live < 32 * 1024 * 1024) expect(calls).toEqual([]); // past 32 MiB the bound holds at once, whatever the pages
    stats.fetched = 5000;
    await collectUntil(calls, 1);
    stop();
    seen();
    expect(held.length).toBe(200_000);
    expect(calls[0]).toBe('--heap-growing-percent=35');
  });
});

/**
 * A fresh Node process that keeps a share of what it allocates alive for a
 * while (as a crawl keeps page data), then prints its young generation's size.
 * @param {boolean} bound whether it calls boundYoungGeneration first
 */
function youngAfterChurn(bound) {
  const script = `
    import { boundYoungGeneration, youngGenerationSize } from ${JSON.stringify(new URL('../../lib/runtime/heap.js', import.meta.url).href)};
    if (${bound}) boundYoungGeneration();
    const keep = [];
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 50_000; i++) {
        const o = { i, s: 'page ' + i, links: [i, i + 1] };
        if (i % 10 === 0) keep.push(o);
        if (keep.length > 50_000) keep.splice(0, 25_000);
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    console.log(youngGenerationSize());
  `;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
}

describe('boundYoungGeneration', () => {
  it('stops the growth at the cap, lets it grow again below, and gives V8 its growth back', async () => {
    /** @type {string[]} */
    const calls = [];
    let size = 4 * 1024 * 1024;
    const stop = boundYoungGeneration({ capBytes: 8 * 1024 * 1024, size: () => size, setFlags: (flags) => calls.push(flags) });
    expect(calls).toEqual([]);
    size = 8 * 1024 * 1024;
    /** @type {string[]} */
    const probe = [];
    const seen = boundHeapGrowth({ liveBytes: 1, setFlags: (flags) => probe.push(flags) });
    await collectUntil(probe, 1);
    await collectUntil(calls, 1);
    expect(calls).toEqual(['--semi-space-growth-factor=1']);
    size = 2 * 1024 * 1024; // V8 shrank it
    await collectUntil(calls, 2);
    expect(calls).toEqual(['--semi-space-growth-factor=1', '--semi-space-growth-factor=2']);
    size = 9 * 1024 * 1024;
    await collectUntil(calls, 3);
    stop();
    seen();
    expect(calls).toEqual(['--semi-space-growth-factor=1', '--semi-space-growth-factor=2', '--semi-space-growth-factor=1', '--semi-space-growth-factor=2']);
  });

  it('releaseYoungGeneration gives the growth back (a shared crawl), once', () => {
    /** @type {string[]} */
    const calls = [];
    const stop = boundYoungGeneration({ capBytes: 8, size: () => 16, setFlags: (flags) => calls.push(flags) });
    expect(calls).toEqual(['--semi-space-growth-factor=1']);
    releaseYoungGeneration();
    releaseYoungGeneration();
    stop();
    expect(calls).toEqual(['--semi-space-growth-factor=1', '--semi-space-growth-factor=2']);
  });

  it('holds V8 for real: a process that keeps page-like data alive stays at the cap, where it grows past it without the bound', () => {
    const free = youngAfterChurn(false);
    const held = youngAfterChurn(true);
    expect(free).toBeGreaterThan(16 * 1024 * 1024);
    expect(held).toBeLessThanOrEqual(8.5 * 1024 * 1024);
  });
});
