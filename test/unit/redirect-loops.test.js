// @ts-check
import { describe, expect, it } from 'vitest';
import { failRedirectLoops } from '../../lib/distributed/loops.js';
import { loopMessage } from '../../lib/engine/outcomes.js';

/**
 * A shared crawl's barrier fails the redirect loops that two processes
 * closed at once (each saw the other's hop still in flight), as one process
 * would have: the same message, from the member reached last.
 */

/** @param {Record<string, any>[]} records */
function runOf(records) {
  const store = new Map(records.map((record) => [record.key, { ...record }]));
  const run = /** @type {any} */ ({
    options: { maxRedirects: 5 },
    redirects: records.filter((record) => record.state === 'redirect').map((record) => ({ url: record.key, location: record.location, status: 302 })),
    records: {
      get: async (/** @type {string} */ key) => store.get(key),
      put: async (/** @type {any} */ record) => { store.set(record.key, record); },
    },
    stats: { failed: 0 },
    emit() {},
  });
  return { run, store };
}

describe('redirect loops found at the barrier', () => {
  it('a loop left as redirects fails with the message one process gives (from its first member in URL order); its referrer is the hop before', async () => {
    const { run, store } = runOf([
      { key: 'http://h/a', state: 'redirect', location: 'http://h/b', hops: 0 },
      { key: 'http://h/b', state: 'redirect', location: 'http://h/a', hops: 1, via: 'http://h/a' },
      { key: 'http://h/c', state: 'redirect', location: 'http://h/d', hops: 0 },
      { key: 'http://h/d', state: 'done', hops: 1, via: 'http://h/c' },
    ]);
    /** @type {string[][]} */
    const noted = [];
    expect(await failRedirectLoops(run, async (key, referrer) => { noted.push([key, referrer]); })).toBe(1);
    const message = 'redirect loop: http://h/a → http://h/b → http://h/a';
    expect(store.get('http://h/a')).toMatchObject({ state: 'failed', error: { message, code: 'REDIRECT_LOOP' } });
    expect(store.get('http://h/b')).toMatchObject({ state: 'failed', error: { message, code: 'REDIRECT_LOOP' } });
    expect(store.get('http://h/c')?.state).toBe('redirect'); // a chain that ends in a page is no loop
    expect(noted).toEqual([['http://h/b', 'http://h/a']]);
    expect(run.stats.failed).toBe(2);
  });

  it('a loop reads the same whichever member it is told from', () => {
    const message = 'redirect loop: http://h/a → http://h/c → http://h/b → http://h/a';
    expect(loopMessage(['http://h/a', 'http://h/c', 'http://h/b'])).toBe(message);
    expect(loopMessage(['http://h/c', 'http://h/b', 'http://h/a'])).toBe(message);
    expect(loopMessage(['http://h/b', 'http://h/a', 'http://h/c'])).toBe(message);
  });

  it('a loop one process found already (its members failed) is left alone', async () => {
    const { run } = runOf([
      { key: 'http://h/a', state: 'redirect', location: 'http://h/b', hops: 0 },
      { key: 'http://h/b', state: 'failed', location: 'http://h/a', hops: 1 },
    ]);
    run.redirects.push({ url: 'http://h/b', location: 'http://h/a', status: 302 });
    expect(await failRedirectLoops(run, async () => {})).toBe(0);
    expect(run.stats.failed).toBe(0);
  });
});
