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
});
