// @ts-check
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LogBlobStore } from '../../lib/store/blobs.js';
import { DirBlobStore } from '../../lib/distributed/dir-blobs.js';
import { tempDirs } from '../crawl-helpers.js';

/** A blob of `size` bytes that says which it is throughout. @param {number} n @param {number} size */
const blob = (n, size) => Buffer.from(`<${n}>`.repeat(Math.ceil(size / 6)).slice(0, size));

describe('LogBlobStore', () => {
  const dirs = tempDirs();
  /** @type {string} */
  let dir;
  beforeEach(async () => {
    dir = await dirs.make('prerender-blobs-');
  });
  afterEach(() => dirs.cleanup());

  it('forget(): a blob found damaged is gone, and the same bytes put again are stored anew (log and directory stores)', async () => {
    for (const store of [new LogBlobStore(dir), new DirBlobStore(`${dir}/shared`)]) {
      await store.init();
      const [id] = await store.put([blob(1, 5000)]);
      store.forget(id);
      expect(store.has(id)).toBe(false);
      expect(await store.put([blob(1, 5000)])).toEqual([id]);
      expect(store.has(id)).toBe(true);
      expect((await store.get([id]))[0].equals(blob(1, 5000))).toBe(true);
      if (store instanceof LogBlobStore) {
        // Stored twice now: the second copy is the one read.
        const length = blob(1, 5000).length;
        expect(store.size).toBe(2 * (length + 38));
        expect(store.locate(id).at).toBe(length + 38 + 38);
        await store.destroy();
      }
    }
  });

  it('gives back every blob, read forward (read ahead), backward and out of order', async () => {
    const store = new LogBlobStore(dir);
    await store.init();
    const sizes = Array.from({ length: 300 }, (_, n) => [100, 4000, 17_000, 70_000, 300_000][n % 5]);
    const ids = [];
    for (const [n, size] of sizes.entries()) ids.push(...(await store.put([blob(n, size)])));
    const check = async (/** @type {number[]} */ order) => {
      for (const n of order) {
        const [got] = await store.get([ids[n]]);
        expect(got.equals(blob(n, sizes[n])), `blob ${n}`).toBe(true);
      }
    };
    const forward = sizes.map((_, n) => n);
    await check(forward);
    await check([...forward].reverse());
    // Forward with the small reorderings of pages done out of order, and skips.
    await check(forward.filter((n) => n % 3 !== 1).map((n, i, all) => (i % 2 === 0 ? all[i + 1] ?? n : all[i - 1])));
    await check(forward.map((n) => (n * 7919) % sizes.length));
    await store.destroy();
  });

  it('peek() lends each blob in one reused buffer, grown as needed; past 1 MiB, in its own', async () => {
    const store = new LogBlobStore(dir);
    await store.init();
    const sizes = [100, 20_000, 50, 300_000, 2_000_000, 10];
    const ids = [];
    const bytesOf = (/** @type {number} */ n) => Buffer.alloc(sizes[n], n + 1);
    for (const n of sizes.keys()) ids.push(...(await store.put([bytesOf(n)])));
    /** @type {Buffer[]} */
    const lent = [];
    for (const [n, id] of ids.entries()) {
      const same = await store.peek(id, (bytes) => {
        lent.push(bytes);
        return bytes.equals(bytesOf(n));
      });
      expect(same, `blob ${n}`).toBe(true);
    }
    // One buffer, reused until a larger blob grows it (16 KiB, then 32 KiB, then 300 KB); the 2 MB one has its own.
    const shared = (/** @type {number} */ a, /** @type {number} */ b) => lent[a].buffer === lent[b].buffer;
    expect([shared(1, 2), shared(3, 5), shared(0, 1), shared(4, 5)]).toEqual([true, true, false, false]);
    await expect(store.peek('0'.repeat(64), () => 1)).rejects.toThrow(/no staged blob/);
    await store.destroy();
  });

  it('never serves a blob stored after a read ahead from it, and reads after compacting and reopening', async () => {
    const store = new LogBlobStore(dir);
    await store.init();
    const first = await store.put([blob(1, 2000), blob(2, 2000)]);
    expect((await store.get([first[0]]))[0].equals(blob(1, 2000))).toBe(true); // a window up to the end of the log
    const later = await store.put([blob(3, 3000)]);
    expect((await store.get([first[1]]))[0].equals(blob(2, 2000))).toBe(true);
    expect((await store.get([later[0]]))[0].equals(blob(3, 3000))).toBe(true);
    const both = await store.get([first[1], later[0]]);
    expect(both[0].equals(blob(2, 2000)) && both[1].equals(blob(3, 3000))).toBe(true);
    // Compacting replaces the log: the blobs kept lie elsewhere now.
    const filler = await store.put([blob(4, 3_000_000)]);
    await store.compact([later[0], first[0]]);
    expect((await store.get([later[0]]))[0].equals(blob(3, 3000))).toBe(true);
    expect((await store.get([first[0]]))[0].equals(blob(1, 2000))).toBe(true);
    expect(store.has(filler[0])).toBe(false);
    await store.close();
    const again = new LogBlobStore(dir);
    await again.init({ keep: true });
    expect((await again.get([first[0]]))[0].equals(blob(1, 2000))).toBe(true);
    const added = await again.put([blob(5, 1000)]);
    expect((await again.get([later[0]]))[0].equals(blob(3, 3000))).toBe(true);
    expect((await again.get([added[0]]))[0].equals(blob(5, 1000))).toBe(true);
    await again.destroy();
  });
});
