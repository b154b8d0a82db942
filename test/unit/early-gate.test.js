// @ts-check
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { EarlyWrites } from '../../lib/crawl/early.js';

/**
 * When early writes (lib/crawl/early.js) are wanted: only in time the crawl
 * does not need, and not past the URLs they can remember.
 */

/** @param {{ backlog?: number, early?: boolean | 'always' }} [how] */
function earlyWrites({ backlog = 0, early = true } = {}) {
  const run = /** @type {any} */ ({ options: { early }, threads: { backlog, ready: true } });
  return { run, early: new EarlyWrites(run, /** @type {any} */ ({})) };
}

/** A visit that ended in a failure: remembered, nothing rendered. @param {string} key */
const failedVisit = (key) => /** @type {any} */ ({ key, record: { state: 'failed' } });

describe('early writes: when they are wanted', () => {
  it('not while requests wait for the worker threads; again once they do not', () => {
    const { run, early } = earlyWrites({ backlog: 3 });
    expect(early.wanted()).toBe(false);
    run.threads.backlog = 0;
    expect(early.wanted()).toBe(true);
  });

  it('not after a window in which the main thread was busy; again after an idle one', async () => {
    const { early } = earlyWrites();
    const until = performance.now() + 300;
    while (performance.now() < until) { /* the main thread busy for more than a window */ }
    expect(early.wanted()).toBe(false);
    await delay(300);
    expect(early.wanted()).toBe(true);
  });

  it("'always' (tests, the bench) whatever the load", () => {
    const { early } = earlyWrites({ backlog: 3, early: 'always' });
    expect(early.wanted()).toBe(true);
  });

  it('stop for good once 500,000 URLs are remembered (a page could not have all its links)', () => {
    const { early } = earlyWrites({ early: 'always' });
    for (let i = 0; i < 500_000; i++) early.known.set(`http://h.test/${i}`, 'x.html');
    early.visited(failedVisit('http://h.test/last'));
    expect(early.wanted()).toBe(false);
    expect(early.known.has('http://h.test/last')).toBe(false);
  });
});
