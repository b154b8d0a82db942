// @ts-check
import { describe, expect, it } from 'vitest';
import { createByteCache, releasesEvicted } from '../../lib/serve/byte-cache.js';

describe('the byte budget', () => {
  it('after enough bytes evicted, starts a release (a GC) so that they are freed, at most once per interval', () => {
    let now = 0;
    let released = 0;
    const cache = createByteCache(1000, { releaseBytes: 300, releaseEveryMs: 1000, now: () => now, release: () => released++ });
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, { bytes: 100 }); // fills the budget: nothing evicted
    expect(released).toBe(0);
    for (let i = 10; i < 13; i++) cache.set(`k${i}`, { bytes: 100 }); // 300 bytes evicted
    expect(released).toBe(1);
    for (let i = 13; i < 20; i++) cache.set(`k${i}`, { bytes: 100 }); // more, within the same second
    expect(released).toBe(1);
    now = 1500;
    cache.set('k20', { bytes: 100 });
    expect(released).toBe(2);
    cache.delete('k20'); // deleted on purpose (a changed file): not an eviction
    cache.clear();
    expect(released).toBe(2);
    expect(cache.calculatedSize).toBe(0);
  });

  it('can start a GC in this runtime (Node 20)', () => {
    expect(releasesEvicted).toBe(true);
  });

  describe('with an RSS bound', () => {
    /**
     * A cache of 10 entries of 100 bytes at most, looking at a fake RSS at every entry.
     * @param {{ rss: () => number, maxRss?: number, onFloor?: (m: string) => void }} o
     */
    const bounded = (o) => {
      let released = 0;
      const cache = /** @type {any} */ (createByteCache(1000, { release: () => released++, bound: { maxRss: o.maxRss ?? 10_000, rss: o.rss, checkEveryBytes: 100, onFloor: o.onFloor } }));
      return { cache, released: () => released };
    };

    it('under the bound, is an LRU of maxSize bytes', () => {
      const { cache, released } = bounded({ rss: () => 5_000 });
      for (let i = 0; i < 15; i++) cache.set(`k${i}`, { bytes: 100 });
      expect(cache.calculatedSize).toBe(1000);
      expect(cache.limit).toBe(1000);
      expect(cache.has('k4')).toBe(false);
      expect(cache.has('k5')).toBe(true);
      expect(released()).toBe(0);
    });

    it('takes a growth of the RSS past the bound off what it holds, once, and evicts the least recently used', () => {
      let rss = 9_000;
      const { cache, released } = bounded({ rss: () => rss });
      for (let i = 0; i < 10; i++) cache.set(`k${i}`, { bytes: 100 });
      cache.get('k0'); // recently used: kept
      rss = 10_300; // 300 over
      cache.set('k10', { bytes: 100 });
      expect(cache.limit).toBe(700);
      expect(cache.calculatedSize).toBe(700);
      expect(cache.has('k0')).toBe(true);
      expect(cache.has('k10')).toBe(true);
      expect(cache.has('k1')).toBe(false);
      expect(released()).toBeGreaterThan(0);
      // The RSS stays where it is (the allocator keeps what was freed): the same excess is not taken off again.
      for (let i = 11; i < 30; i++) cache.set(`k${i}`, { bytes: 100 });
      expect(cache.limit).toBe(700);
      expect(cache.calculatedSize).toBe(700);
      // A further growth is.
      rss = 10_400;
      cache.set('k30', { bytes: 100 });
      expect(cache.limit).toBe(600);
      expect(cache.calculatedSize).toBe(600);
    });

    it('grows back once the process is well under the bound again', () => {
      let rss = 10_500;
      const { cache } = bounded({ rss: () => rss });
      for (let i = 0; i < 10; i++) cache.set(`k${i}`, { bytes: 100 });
      expect(cache.limit).toBeLessThan(1000);
      rss = 5_000; // a burst of requests over
      for (let i = 10; i < 20; i++) cache.set(`k${i}`, { bytes: 100 });
      expect(cache.limit).toBe(1000);
      expect(cache.calculatedSize).toBe(1000);
    });

    it('never goes below 1/16 of its size, and says once that the process is over the bound anyway', () => {
      let rss = 10_000;
      /** @type {string[]} */
      const said = [];
      const { cache } = bounded({ rss: () => rss, onFloor: (m) => said.push(m) });
      for (let i = 0; i < 40; i++) {
        rss += 500;
        cache.set(`k${i}`, { bytes: 50 });
      }
      expect(cache.limit).toBe(1000 / 16);
      expect(cache.calculatedSize).toBe(50); // one entry still fits
      expect(cache.has('k39')).toBe(true);
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/over the 0 MB bound with the page cache down to 0 MB/);
    });

    it('does not keep an entry larger than its present limit, and keeps the others', () => {
      let rss = 9_000;
      const { cache } = bounded({ rss: () => rss });
      for (let i = 0; i < 10; i++) cache.set(`k${i}`, { bytes: 100 });
      rss = 9_600; // the limit goes down to 400
      for (let i = 10; i < 12; i++) cache.set(`k${i}`, { bytes: 100 });
      rss = 10_600;
      cache.set('k12', { bytes: 100 });
      expect(cache.limit).toBe(400);
      cache.set('big', { bytes: 500 });
      expect(cache.has('big')).toBe(false);
      expect(cache.calculatedSize).toBe(400);
      expect(cache.has('k12')).toBe(true);
    });

    it('rebase(): after the cache was emptied on purpose, starts over from the RSS of now', () => {
      let rss = 10_500;
      const { cache } = bounded({ rss: () => rss });
      for (let i = 0; i < 10; i++) cache.set(`k${i}`, { bytes: 100 });
      expect(cache.limit).toBeLessThan(1000);
      cache.clear(); // a new manifest: its pages dropped
      rss = 11_000; // and the new one parsed
      cache.rebase();
      expect(cache.limit).toBe(1000);
      for (let i = 0; i < 10; i++) cache.set(`n${i}`, { bytes: 100 });
      expect(cache.limit).toBe(1000); // no growth since: nothing taken off
      rss = 11_200;
      cache.set('n10', { bytes: 100 });
      expect(cache.limit).toBe(800);
    });
  });
});
