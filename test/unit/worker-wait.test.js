// @ts-check
import { describe, expect, it } from 'vitest';
import { AbortError, FrontierError } from '../../lib/errors.js';
import { waitForConfig } from '../../lib/crawler/worker.js';

/**
 * A worker waiting for its crawl (--wait): an interruption is one, whenever it comes; the wait's end is a clear error.
 * Redis is a fake whose answers the test decides.
 */

/** @param {() => Promise<string | null>} get */
const fakeRedis = (get) => /** @type {any} */ ({ get, toFrontierError: (/** @type {Error} */ error) => error });

describe('a worker waiting for its crawl', () => {
  it('interrupted while it asks: an interruption, not "no crawl"', async () => {
    const controller = new AbortController();
    const redis = fakeRedis(async () => {
      controller.abort(); // Ctrl-C while the GET is in flight
      return null;
    });
    const error = await waitForConfig(redis, 'p:', { crawlId: 'x', wait: 3600, signal: controller.signal }).catch((e) => e);
    expect(error).toBeInstanceOf(AbortError);
  });

  it('interrupted while it pauses between asks: ends at once', async () => {
    const controller = new AbortController();
    let asked = 0;
    const redis = fakeRedis(async () => {
      asked++;
      if (asked === 1) setImmediate(() => controller.abort()); // during the pause after the first answer
      return null;
    });
    const begun = Date.now();
    const error = await waitForConfig(redis, 'p:', { crawlId: 'x', wait: 3600, signal: controller.signal }).catch((e) => e);
    expect(error).toBeInstanceOf(AbortError);
    expect(asked).toBe(1);
    expect(Date.now() - begun).toBeLessThan(60_000); // not the hour of --wait
  });

  it('past --wait: NO_CRAWL; a configuration found is returned', async () => {
    const missing = await waitForConfig(fakeRedis(async () => null), 'p:', { crawlId: 'x', wait: 0 }).catch((e) => e);
    expect(missing).toBeInstanceOf(FrontierError);
    expect(missing.code).toBe('NO_CRAWL');
    expect(await waitForConfig(fakeRedis(async () => '{"version":1}'), 'p:', { crawlId: 'x', wait: 0 })).toEqual({ version: 1 });
  });
});
