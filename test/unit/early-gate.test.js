// @ts-check
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { EarlyWrites } from '../../lib/engine/early.js';

/**
 * When early writes (lib/engine/early.js) are wanted: only in time the crawl
 * does not need, and not past the URLs they can remember.
 */

/** @param {{ backlog?: number, early?: boolean | 'always' }} [how] */
function earlyWrites({ backlog = 0, early = true } = {}) {
  const run = /** @type {any} */ ({ options: { early }, threads: { backlog, ready: true } });
  return { run, early: new EarlyWrites(run, /** @type {any} */ ({})) };
}

/**
 * The clock and the event loop's measure as a test sets them, so no verdict depends on how busy the machine is.
 * pass() moves both on: time the loop spent running, then waiting.
 */
function fakeLoop() {
  const at = { now: 0, active: 0, idle: 0 };
  const now = vi.spyOn(performance, 'now').mockImplementation(() => at.now);
  /** @param {any} [current] @param {any} [before] */
  const measure = (current, before) => {
    if (!current) return { active: at.active, idle: at.idle, utilization: at.active / (at.active + at.idle || 1) };
    const active = current.active - before.active;
    const idle = current.idle - before.idle;
    return { active, idle, utilization: active / (active + idle || 1) };
  };
  const utilization = vi.spyOn(performance, 'eventLoopUtilization').mockImplementation(/** @type {any} */ (measure));
  return {
    /** @param {{ activeMs: number, idleMs: number }} spent */
    pass({ activeMs, idleMs }) {
      at.now += activeMs + idleMs;
      at.active += activeMs;
      at.idle += idleMs;
    },
    restore() {
      now.mockRestore();
      utilization.mockRestore();
    },
  };
}

/** A visit that ended in a failure: remembered, nothing rendered. @param {string} key */
const failedVisit = (key) => /** @type {any} */ ({ key, record: { state: 'failed' } });

describe('early writes: when they are wanted', () => {
  it('not while requests wait for the worker threads; again once they do not', () => {
    const loop = fakeLoop();
    try {
      const { run, early } = earlyWrites({ backlog: 3 });
      expect(early.wanted()).toBe(false);
      run.threads.backlog = 0;
      loop.pass({ activeMs: 10, idleMs: 290 });
      expect(early.wanted()).toBe(true);
    } finally {
      loop.restore();
    }
  });

  it('not after a window in which the main thread was busy; again after an idle one; a window is measured whole', () => {
    const loop = fakeLoop();
    try {
      const { early } = earlyWrites();
      loop.pass({ activeMs: 280, idleMs: 20 });
      expect(early.wanted()).toBe(false);
      loop.pass({ activeMs: 100, idleMs: 100 }); // within the window: the last verdict stands
      expect(early.wanted()).toBe(false);
      loop.pass({ activeMs: 10, idleMs: 290 }); // the window ends: 110 of 500 ms busy
      expect(early.wanted()).toBe(true);
    } finally {
      loop.restore();
    }
  });

  it('measures its own main thread: a loop that never yields for a window is busy', () => {
    const { early } = earlyWrites();
    const until = performance.now() + 300;
    while (performance.now() < until) { /* the main thread busy for more than a window */ }
    expect(early.wanted()).toBe(false);
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

/**
 * A fed page (a shared crawl's feed), new HTML with its staged blobs.
 * @param {string} key @param {string} wanted @param {string[]} [links] not given: its links were not collected
 * @param {string[]} [notSure] those of its links not sure to be fetched (its process did not add them)
 */
const fed = (key, wanted, links, notSure = []) => ({
  key,
  record: /** @type {any} */ ({ key, state: 'done', wanted, change: 'new', type: 'html', charset: 'utf-8', body: `${key}#body`, scan: `${key}#scan` }),
  linksTo: links ? { keys: links, never: new Set(), sure: new Set(links.filter((link) => !notSure.includes(link))) } : undefined,
});

/**
 * Early writes fed by a script: each read hands out the next batch.
 * @param {ReturnType<typeof fed>[][]} batches
 */
function fedEarlyWrites(batches) {
  /** @type {{ url: string, names: Map<string, string> }[]} */
  const rendered = [];
  let temps = 0;
  const run = /** @type {any} */ ({
    options: { early: 'always' },
    threads: {
      backlog: 0, ready: true, setContext() {}, warm() {},
      async renderEarly(/** @type {any} */ input) {
        rendered.push({ url: input.url, names: input.names });
        return { bytes: 1, sha256: '0'.repeat(64), written: true, placeholders: [], warnings: [] };
      },
    },
    target: { scratch: () => ({ n: temps, path: `/tmp/never-written-${temps++}` }), adoptScratch: async () => {} },
    blobs: { locate: (/** @type {string} */ id) => ({ path: id, at: 0, length: -1 }) },
  });
  let reads = 0;
  const feed = {
    stopped: 0,
    async read() {
      reads++;
      return batches.shift() ?? [];
    },
    async stop() { this.stopped++; },
  };
  const early = new EarlyWrites(run, /** @type {any} */ ({}), feed);
  return { early, rendered, feed, reads: () => reads };
}

/** Bounded wait for a condition (the feed is read every 50 ms). @param {() => boolean} condition */
async function until(condition) {
  const end = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > end) throw new Error('not in 10 s');
    await delay(5);
  }
}

describe('early writes of a shared crawl: fed by every process', () => {
  it('a page is rendered once every URL it links to was fed, with their wanted files; not one whose links were not collected', async () => {
    const { early, rendered, reads } = fedEarlyWrites([
      [fed('http://h.test/p', 'p.htm', ['http://h.test/q', 'http://h.test/r'])], // q, r not heard of yet: p waits
      [fed('http://h.test/q', 'q.htm', []), fed('http://h.test/r', 'r.htm'), fed('http://h.test/s', 's.htm', ['http://h.test/q'])],
    ]);
    await until(() => reads() > 2); // both batches read
    expect(rendered.map((r) => r.url).sort()).toEqual(['http://h.test/p', 'http://h.test/q', 'http://h.test/s']);
    const p = /** @type {{ names: Map<string, string> }} */ (rendered.find((r) => r.url === 'http://h.test/p'));
    expect([...p.names].sort()).toEqual([['http://h.test/q', 'q.htm'], ['http://h.test/r', 'r.htm']]);
    expect(early.has('http://h.test/r')).toBe(false);
    early.close({ renamed: [] });
    expect(early.has('http://h.test/p')).toBe(true);
  });

  it('a URL fed twice (a second visit\'s result stood): its early output and those of the pages that link to it are not taken, and it is not rendered again', async () => {
    const { early, rendered, reads } = fedEarlyWrites([
      [fed('http://h.test/q', 'q.htm', []), fed('http://h.test/p', 'p.htm', ['http://h.test/q']), fed('http://h.test/o', 'o.htm', [])],
      [fed('http://h.test/q', 'q2.htm', [])],
    ]);
    await until(() => reads() > 2);
    expect(rendered.map((r) => r.url).sort()).toEqual(['http://h.test/o', 'http://h.test/p', 'http://h.test/q']);
    expect(early.has('http://h.test/q')).toBe(false);
    expect(early.has('http://h.test/p')).toBe(false);
    expect(early.has('http://h.test/o')).toBe(true);
  });

  it('a page is not held for a link its process did not add to the frontier (it may never be fetched): no waiting place is taken', async () => {
    // 10,001 pages link to a form's URL that no process follows; a page that waits for a URL still queued comes after them.
    const many = Array.from({ length: 10_001 }, (_, i) => fed(`http://h.test/m${i}`, `m${i}.htm`, ['http://h.test/cart'], ['http://h.test/cart']));
    const { early, rendered, reads } = fedEarlyWrites([many, [fed('http://h.test/p', 'p.htm', ['http://h.test/q'])], [fed('http://h.test/q', 'q.htm', [])]]);
    await until(() => reads() > 3);
    expect(early.waiting).toBe(0);
    expect(rendered.map((r) => r.url).sort()).toEqual(['http://h.test/p', 'http://h.test/q']);
  });

  it('clears what a killed coordinator left before reading, reads until the crawl phase ends, then stops the feed', async () => {
    const { early, feed, reads } = fedEarlyWrites([]);
    await until(() => reads() > 1);
    expect(feed.stopped).toBe(1);
    early.close({ renamed: [] });
    const after = reads();
    await delay(120);
    expect(reads()).toBeLessThanOrEqual(after + 1); // a read under way when it closed, at most
    expect(feed.stopped).toBe(2);
  });
});
