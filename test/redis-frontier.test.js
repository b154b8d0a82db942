// @ts-check
/**
 * The shared frontier's rules, against a real redis-server started here:
 * exact dedup with the enqueue, leases with tokens (a late result is
 * ignored), reclaim of expired leases and of dead workers, --max-deliveries,
 * --origin-concurrency and the per-origin interval, --max-pages with slots
 * given back. Skipped outside CI without redis-server; in CI it must run.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HAVE_REDIS, startRedis } from './helpers/redis.js';
import { connectRedis, keyPrefix } from '../lib/distributed/connection.js';
import { RedisFrontier } from '../lib/distributed/redis-frontier.js';
import { SharedCrawl } from '../lib/distributed/shared.js';
import { decodeStored } from '../lib/distributed/packed.js';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { helpFinish, nameTableBytes } from '../lib/distributed/finish.js';
import { encodeNameTable } from '../lib/naming/name-table.js';
import { PageThreads } from '../lib/engine/threads/page-threads.js';

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let server;
/** @type {import('../lib/distributed/connection.js').CrawlRedis} */
let redis;
let id = 0;
let prefix = '';

/** Leases long enough not to expire under load, but in the tests about expiry (SHORT). */
const SETTINGS = { maxPages: 1000, leaseMs: 30_000, originConcurrency: 64, intervalMs: 0, maxDeliveries: 3 };
const SHORT = 800;
/** @param {string} key @param {string | null} [referrer] */
const item = (key, referrer = null) => ({ key, kind: /** @type {const} */ ('navigation'), referrer });
/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/** @param {Partial<typeof SETTINGS>} [settings] @param {boolean} [seeder] */
const open = (settings = {}, seeder = false) => new RedisFrontier(redis, prefix, { ...SETTINGS, ...settings }, { seeder });
/** The record of a URL as Redis holds it. @param {string} key */
const stored = async (key) => decodeStored(/** @type {Buffer} */ (await redis.hgetBuffer(`${prefix}rec`, key)), key);

/** The record a process holds for a URL. @param {RedisFrontier} frontier @param {string} key */
const recordOf = async (frontier, key) => /** @type {import('../lib/store/records.js').PageRecord} */ (await frontier.records.get(key));
/** A visit's result: its record done (200) and put. @param {RedisFrontier} frontier @param {import('../lib/store/records.js').PageRecord} record */
const putDone = async (frontier, record) => {
  record.state = 'done';
  record.status = 200;
  await frontier.records.put(record);
};

describe.skipIf(!HAVE_REDIS)('the Redis frontier', () => {
  beforeAll(async () => {
    server = await startRedis();
    redis = await connectRedis(server.url, { timeoutSeconds: 5 });
  });
  afterAll(async () => {
    await redis?.quit();
    await server?.stop();
  });
  beforeEach(async () => {
    prefix = keyPrefix(`t${++id}`);
    await redis.set(`${prefix}config`, '{}');
    await redis.hset(`${prefix}meta`, 'phase', 'seeding');
  });

  it('adds each URL once, whatever the number of processes adding it at once', async () => {
    const seeder = open({}, true);
    await seeder.add([item('http://h/')]);
    await seeder.take(1); // the roots are in: the crawl phase begins
    const keys = Array.from({ length: 200 }, (_, i) => `http://h/p${i}`);
    const outcomes = await Promise.all([open(), open(), open(), open()].map((frontier) => frontier.add(keys.map((key) => item(key)))));
    const added = outcomes.flat().filter((outcome) => outcome === 'added').length;
    expect(added).toBe(200);
    expect(Number(await redis.hget(`${prefix}cnt`, 'queued'))).toBe(200);
    expect(await redis.hlen(`${prefix}rec`)).toBe(201);
  });

  it('keeps one small hash entry per URL once it is done: the seen-set and the record together, nothing else', async () => {
    const seeder = open({}, true);
    await seeder.add([item('http://h/')]);
    await seeder.take(1);
    await seeder.add(Array.from({ length: 20 }, (_, i) => item(`http://h/p${i}`, 'http://h/')));
    const record = /** @type {import('../lib/store/records.js').PageRecord} */ (await seeder.records.get('http://h/'));
    Object.assign(record, { state: 'done', status: 200, contentType: 'text/html; charset=utf-8', type: 'html', charset: 'utf-8', wanted: 'index.html', body: 'a'.repeat(64), scan: 'b'.repeat(64), change: 'new' });
    await seeder.done('http://h/', { page: true });
    expect(await redis.hlen(`${prefix}rec`)).toBe(21);
    expect(await redis.exists(`${prefix}seen`)).toBe(0);
    for (const perUrl of ['deliv', 'lease', 'refs']) expect(await redis.hexists(`${prefix}${perUrl}`, 'http://h/')).toBe(0);
    expect(await redis.zscore(`${prefix}leases`, 'http://h/')).toBe(null);
    const value = /** @type {Buffer} */ (await redis.hgetBuffer(`${prefix}rec`, 'http://h/'));
    expect(value.length).toBeLessThan(130); // 119: blob ids as 32 bytes each; the JSON record was 290
    expect(await stored('http://h/')).toMatchObject({ state: 'done', wanted: 'index.html', body: 'a'.repeat(64) });
    expect((await redis.hgetBuffer(`${prefix}rec`, 'http://h/p0'))?.toString()).toBe('q');
  });

  it('takes the next URL with a result (two round trips a page); one never handed out goes back when the process leaves', async () => {
    const a = open({}, true);
    await a.add([item('http://h/')]);
    expect(await a.take(1)).toEqual(['http://h/']);
    await a.add([item('http://h/1', 'http://h/'), item('http://h/2', 'http://h/')]);
    const record = /** @type {import('../lib/store/records.js').PageRecord} */ (await a.records.get('http://h/'));
    record.state = 'done';
    await a.done('http://h/', { page: true });
    expect(await redis.hgetall(`${prefix}cnt`)).toMatchObject({ queued: '1', leased: '1' });
    expect(await a.take(5)).toEqual(['http://h/1']); // no round trip: taken with the result
    const h1 = /** @type {import('../lib/store/records.js').PageRecord} */ (await a.records.get('http://h/1'));
    h1.state = 'done';
    await a.done('http://h/1', { page: true }); // takes http://h/2, which this process never visits
    await a.leave();
    expect(await redis.hgetall(`${prefix}cnt`)).toMatchObject({ queued: '1', leased: '0' });
    expect(await redis.hget(`${prefix}deliv`, 'http://h/2')).toBe('0');
    expect(await open().take(5)).toEqual(['http://h/2']);
  });

  it('does not send a settled URL again (done, or queued with 5 referrers), and still notes what can change', async () => {
    const a = open({}, true);
    await a.add([item('http://h/')]);
    await a.take(1);
    const pages = Array.from({ length: 6 }, (_, i) => `http://h/from${i}`);
    await a.add(pages.map((key) => item(key, 'http://h/')));
    // Script calls Redis ran (each ADD, TAKE, DONE is one EVALSHA).
    const scripts = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
    {
      const record = /** @type {import('../lib/store/records.js').PageRecord} */ (await a.records.get('http://h/'));
      record.state = 'done';
      await a.done('http://h/', { page: true }); // takes http://h/from0
      const before = await scripts();
      const calls = async () => (await scripts()) - before;
      // Five pages link to http://h/x: its referrers are full after the fifth, and http://h/ is done.
      for (const from of pages.slice(0, 5)) {
        await a.add([item('http://h/x', from), item('http://h/', from), { key: 'http://h/css', kind: 'requisite', referrer: from }]);
      }
      expect(await calls()).toBe(5);
      expect(await a.add([item('http://h/x', pages[5]), item('http://h/', pages[5])])).toEqual(['known', 'known']);
      expect(await calls()).toBe(5); // both settled: nothing sent
      expect((await redis.hget(`${prefix}refs`, 'http://h/x'))?.split('\n')).toEqual(pages.slice(0, 5));
      // A requisite with 5 referrers is settled for requisite links only: a link to it makes it a page.
      expect(await a.add([{ key: 'http://h/css', kind: 'requisite', referrer: pages[5] }])).toEqual(['known']);
      expect(await calls()).toBe(5);
      expect(await a.add([item('http://h/css', pages[5])])).toEqual(['known']);
      expect(await calls()).toBe(6);
      expect((await stored('http://h/css')).kind).toBe('navigation');
    }
  });

  it('a queued record written by one process (a redirect target\'s via) does not undo a result another recorded meanwhile', async () => {
    const a = open({}, true);
    await a.add([item('http://h/')]);
    await a.take(1);
    const b = open();
    const stale = /** @type {import('../lib/store/records.js').PageRecord} */ (await b.records.get('http://h/'));
    expect(stale.state).toBe('queued');
    const record = /** @type {import('../lib/store/records.js').PageRecord} */ (await a.records.get('http://h/'));
    Object.assign(record, { state: 'done', status: 200, wanted: 'index.html' });
    await a.done('http://h/', { page: true });
    stale.via = 'http://h/old';
    stale.hops = 1;
    await b.records.put(stale); // b read it while it was queued
    expect(await stored('http://h/')).toMatchObject({ state: 'done', wanted: 'index.html', hops: 0 });
    expect((await b.records.list('done')).map((r) => r.key)).toEqual(['http://h/']);
    expect((await b.records.list(['queued', 'done'])).map((r) => r.key)).toEqual(['http://h/']);
    expect(await b.records.list(['failed', 'gone'])).toEqual([]);
  });

  it('does not start the crawl before the coordinator has added the roots', async () => {
    const worker = open();
    expect(await worker.take(4)).toEqual([]);
    expect(worker.counts().queued).toBeGreaterThan(0); // the worker waits, it does not stop
    const seeder = open({}, true);
    await seeder.add([item('http://h/')]);
    expect(await worker.take(4)).toEqual([]);
    expect(await seeder.take(4)).toEqual(['http://h/']);
  });

  it('fences a late result: the lease passed to another worker, whose result stands', async () => {
    const a = open({ leaseMs: SHORT }, true);
    await a.add([item('http://h/')]);
    expect(await a.take(1)).toEqual(['http://h/']);
    const b = open({ leaseMs: SHORT });
    expect(await b.take(1)).toEqual([]); // leased to a
    await sleep(SHORT + 100); // a sends no heartbeat: its lease expires
    expect(await b.take(1)).toEqual(['http://h/']);
    const late = /** @type {import('../lib/store/records.js').PageRecord} */ (await a.records.get('http://h/'));
    late.state = 'done';
    late.status = 200;
    late.wanted = 'late.html';
    await a.records.put(late);
    await a.done('http://h/', { page: true });
    expect(a.lateResults).toBe(1);
    const fresh = /** @type {import('../lib/store/records.js').PageRecord} */ (await b.records.get('http://h/'));
    fresh.state = 'done';
    fresh.status = 200;
    fresh.wanted = 'fresh.html';
    await b.records.put(fresh);
    await b.done('http://h/', { page: true });
    expect(b.lateResults).toBe(0);
    expect((await stored('http://h/')).wanted).toBe('fresh.html');
    expect(await redis.hgetall(`${prefix}cnt`)).toMatchObject({ done: '1', leased: '0', queued: '0' });
  });

  it('the feed: while the coordinator reads it, each accepted result with the links its process collected (a late one never), until it stops', async () => {
    const coordinator = open();
    await redis.hset(`${prefix}meta`, 'coord', coordinator.worker);
    const feed = new SharedCrawl(redis, prefix, coordinator, /** @type {any} */ (null), '', SHORT).feed();
    const a = open({ leaseMs: SHORT }, true);
    await a.add([item('http://h/')]);
    expect(await a.take(1)).toEqual(['http://h/']);
    await a.add(['http://h/1', 'http://h/2', 'http://h/3'].map((key) => item(key, 'http://h/')));
    await putDone(a, Object.assign(await recordOf(a, 'http://h/'), { wanted: 'index.html' }));
    await a.done('http://h/', { page: true, linksTo: { keys: ['http://h/1'], never: new Set() } });
    expect(await feed.read(60_000, 100)).toEqual([]); // not fed before the coordinator wanted it; from now on, it is
    expect(a.wantsLinks()).toBe(false); // its last result said nothing of a feed
    expect(await a.take(1)).toEqual(['http://h/1']);
    await putDone(a, Object.assign(await recordOf(a, 'http://h/1'), { wanted: 'one.html' }));
    await a.done('http://h/1', { page: true, linksTo: { keys: ['http://h/2'], never: new Set() } }); // its links were not collected: a's last reply said no feed
    expect(a.wantsLinks()).toBe(true);
    expect(await a.take(1)).toEqual(['http://h/2']);
    await putDone(a, Object.assign(await recordOf(a, 'http://h/2'), { wanted: 'two.html', type: 'html', body: 'b'.repeat(64), scan: 'c'.repeat(64), change: 'new' }));
    const linksTo = { keys: ['http://h/1', 'http://x/out', 'http://h/3', 'http://h/1', 'http://h/ü'], never: new Set(['http://x/out']), sure: new Set(['http://h/1', 'http://h/3']) };
    await a.done('http://h/2', { page: true, linksTo });
    const fed = await feed.read(60_000, 100);
    expect(fed.map(({ key, record, linksTo: links }) => ({ key, wanted: record.wanted, state: record.state, links: links?.keys, sure: links && [...links.sure ?? []] }))).toEqual([
      { key: 'http://h/1', wanted: 'one.html', state: 'done', links: undefined, sure: undefined },
      // once each, never-pages left out; those not sure to be fetched said so
      { key: 'http://h/2', wanted: 'two.html', state: 'done', links: ['http://h/1', 'http://h/3', 'http://h/ü'], sure: ['http://h/1', 'http://h/3'] },
    ]);
    expect(fed[1].record).toMatchObject({ body: 'b'.repeat(64), scan: 'c'.repeat(64), change: 'new', type: 'html' });
    // A late result is not fed; the result that stands is.
    expect(await a.take(1)).toEqual(['http://h/3']);
    const b = open({ leaseMs: SHORT });
    await sleep(SHORT + 100);
    expect(await feed.read(60_000, 100)).toEqual([]);
    expect(await b.take(1)).toEqual(['http://h/3']);
    await putDone(a, Object.assign(await recordOf(a, 'http://h/3'), { wanted: 'late.html' }));
    await a.done('http://h/3', { page: true });
    expect(a.lateResults).toBe(1);
    await putDone(b, Object.assign(await recordOf(b, 'http://h/3'), { wanted: 'fresh.html' }));
    await b.done('http://h/3', { page: true });
    expect((await feed.read(60_000, 100)).map(({ key, record }) => [key, record.wanted])).toEqual([['http://h/3', 'fresh.html']]);
    // A process that is no longer the coordinator (another took over) reads nothing of the new one's feed, nor stops it.
    await a.add([item('http://h/4'), item('http://h/5')]);
    expect(await b.take(1)).toEqual(['http://h/4']);
    const successor = open();
    await redis.hset(`${prefix}meta`, 'coord', successor.worker);
    const newFeed = new SharedCrawl(redis, prefix, successor, /** @type {any} */ (null), '', SHORT).feed();
    expect(await newFeed.read(60_000, 100)).toEqual([]);
    expect(await feed.read(60_000, 100)).toEqual([]); // the old one wakes up and reads
    await putDone(b, await recordOf(b, 'http://h/4'));
    await b.done('http://h/4', { page: true });
    expect(await feed.read(60_000, 100)).toEqual([]);
    await feed.stop();
    expect((await newFeed.read(60_000, 100)).map(({ key }) => key)).toEqual(['http://h/4']);
    // Stopped: what it holds goes, and results are no longer fed.
    expect(await b.take(1)).toEqual(['http://h/5']);
    await newFeed.stop();
    await putDone(b, await recordOf(b, 'http://h/5'));
    await b.done('http://h/5', { page: true });
    expect(b.wantsLinks()).toBe(false);
    expect(await redis.keys(`${prefix}feed*`)).toEqual([]);
    expect(await redis.hexists(`${prefix}meta`, 'feed')).toBe(0);
  });

  it('a page whose lease expired and came back to the same process while its visit was in flight is visited again under the new lease (the first visit\'s links may have been refused)', async () => {
    const a = open({ leaseMs: SHORT }, true);
    await a.add([item('http://h/')]);
    expect(await a.take(4)).toEqual(['http://h/']);
    const record = await recordOf(a, 'http://h/');
    await sleep(SHORT + 100); // a stall: the lease expires
    expect(await a.take(4)).toEqual([]); // reclaimed and leased to a again, while the visit is in flight: not a second visit yet
    // The visit's links, sent under the old lease, are refused (they read as known).
    expect(await a.add([item('http://h/child', 'http://h/')])).toEqual(['known']);
    await putDone(a, record);
    await a.done('http://h/', { page: true });
    expect(a.lateResults).toBe(1); // under the old lease: refused
    expect(a.counts().queued).toBeGreaterThan(0); // the URL waits here: the crawl is not over
    expect(await a.take(4)).toEqual(['http://h/']); // visited again under the new lease
    expect(await a.add([item('http://h/child', 'http://h/')])).toEqual(['added']);
    const again = await recordOf(a, 'http://h/');
    await putDone(a, again);
    await a.done('http://h/', { page: true });
    expect(a.lateResults).toBe(1);
    expect((await stored('http://h/')).state).toBe('done');
    const counts = await redis.hgetall(`${prefix}cnt`);
    expect([counts.done, counts.failed]).toEqual(['1', undefined]); // one result, no failure
    expect(await a.take(1)).toEqual(['http://h/child']); // the child it added the second time (taken with that result)
  });

  it('a URL taken with a result and not started yet counts as work left: the process does not stop with it in hand', async () => {
    const a = open({}, true);
    await a.add([item('http://h/')]);
    expect(await a.take(1)).toEqual(['http://h/']);
    await a.add([item('http://h/next', 'http://h/')]);
    const record = await recordOf(a, 'http://h/');
    await putDone(a, record);
    await a.done('http://h/', { page: true }); // takes http://h/next with the result
    expect(await redis.hgetall(`${prefix}cnt`)).toMatchObject({ queued: '0', leased: '1' }); // leased to a: Redis alone says nothing is left
    expect(a.counts().queued).toBe(1);
    expect(await a.take(1)).toEqual(['http://h/next']);
  });

  it('a late result whose URL comes back with it (reclaimed, then taken in the same call) is visited again, never lost', async () => {
    const a = open({ leaseMs: SHORT }, true);
    await a.add([item('http://h/')]);
    expect(await a.take(4)).toEqual(['http://h/']);
    const record = await recordOf(a, 'http://h/');
    await sleep(SHORT + 100); // a stall: the lease expires
    expect(await open({ leaseMs: SHORT }).take(0)).toEqual([]); // another process's call reclaims it (and takes nothing)
    await putDone(a, record);
    // The result is late; taking the next URL in the same call hands the same one back to a.
    expect(await a.done('http://h/', { page: true })).toEqual([]);
    expect(a.lateResults).toBe(1);
    expect(await a.take(4)).toEqual(['http://h/']); // a new lease: visited again (before the fix, forgotten here)
    const again = await recordOf(a, 'http://h/');
    await putDone(a, again);
    await a.done('http://h/', { page: true });
    expect((await stored('http://h/')).state).toBe('done');
    expect(await redis.hgetall(`${prefix}cnt`)).toMatchObject({ done: '1', leased: '0', queued: '0' });
  });

  it('a late worker adds no links: its lease on the page is gone', async () => {
    const a = open({ leaseMs: SHORT }, true);
    await a.add([item('http://h/')]);
    await a.take(1);
    await sleep(SHORT + 100);
    const b = open({ leaseMs: SHORT });
    await b.take(1); // reclaims and takes it
    expect(await a.add([item('http://h/late', 'http://h/')])).toEqual(['known']);
    expect(await redis.hexists(`${prefix}rec`, 'http://h/late')).toBe(0);
  });

  it('heartbeats keep a slow page leased; once they stop, the lease goes to another worker', async () => {
    // A lease of 3 s: a heartbeat every 500 ms, dead after 1.5 s; a busy machine stalls this process less.
    const a = open({ leaseMs: 3000 }, true);
    await a.add([item('http://h/')]);
    a.start();
    await a.take(1);
    const b = open({ leaseMs: 3000 });
    await sleep(3300); // past the first deadline: the heartbeats moved it
    expect(await b.take(1)).toEqual([]);
    await a.stop(); // a hangs (or dies): no more heartbeats
    const stoppedAt = Date.now();
    let taken = /** @type {string[]} */ ([]);
    while (taken.length === 0 && Date.now() - stoppedAt < 20_000) {
      taken = await b.take(1);
      if (taken.length === 0) await sleep(20);
    }
    expect(taken).toEqual(['http://h/']);
  });

  it('the coordinator claim: one live coordinator per crawl id; a killed one\'s pass kept in reach until dropped; only the claimant may clear the crawl; a failed start lets it go', async () => {
    const info = JSON.stringify({ role: 'coordinator', host: 'h', pid: 1 });
    await redis.hset(`${prefix}meta`, 'phase', 'finish', 'fin', 'pass1');
    expect(await redis.prCoordClaim(prefix, 'a', 500, info)).toEqual([1, 'pass1']); // nobody held it: a's, with the left pass
    expect(await redis.hmget(`${prefix}meta`, 'coord', 'fin', 'finleft')).toEqual(['a', null, 'pass1']);
    expect(await redis.hget(`${prefix}winfo`, 'a')).toBe(info); // status names it while it starts
    const [refused, holder] = await redis.prCoordClaim(prefix, 'b', 500, info);
    expect([refused, holder]).toEqual([0, 'a']); // a's heartbeat is fresh
    expect(await redis.prCoordKeep(prefix, 'b', 'reset', info)).toBe(0); // b may not clear: meta and workers stay a's
    expect(await redis.hget(`${prefix}meta`, 'phase')).toBe('finish');
    await redis.zadd(`${prefix}workers`, Date.now(), 'w1');
    expect(await redis.prCoordKeep(prefix, 'a', 'reset', info)).toBe(1); // a clears: its claim alone is left
    expect(await redis.hgetall(`${prefix}meta`)).toEqual({ coord: 'a' });
    expect(await redis.zrange(`${prefix}workers`, 0, -1)).toEqual(['a']);
    expect(await redis.prCoordKeep(prefix, 'a', 'release', info)).toBe(1); // a's start failed: no wait for the next one
    expect((await redis.prCoordClaim(prefix, 'b', 500, info))[0]).toBe(1);
    expect(await redis.prCoordKeep(prefix, 'a', 'keep', info)).toBe(0); // a, if it goes on, learns it was replaced
  });

  it('finishing buckets: a stalled holder loses its bucket, its late answer is refused, a bucket taken back --max-deliveries times is answered with errors, and collect says when the pass is gone', async () => {
    // Two processes with heartbeats, the coordinator (c) and a worker (w); a pass of two buckets.
    const leaseMs = 1000;
    for (const worker of ['c', 'w']) await redis.zadd(`${prefix}workers`, Date.now() + 60_000, worker);
    await redis.hset(`${prefix}meta`, 'phase', 'finish', 'fin', 'pass1', 'coord', 'c');
    const F = `${prefix}f:pass1:`;
    const requests = (/** @type {string} */ n) => JSON.stringify([{ url: `http://h/${n}a` }, { url: `http://h/${n}b` }]);
    await redis.multi().hset(`${F}b`, '1', requests('1')).rpush(`${F}q`, '1').exec();
    const taken = await redis.prFinTake(prefix, 'w', leaseMs, 2);
    expect(taken.slice(0, 4)).toEqual(['finish', 'pass1', 1, '1']);
    const lease = taken[4];
    // Renewed while w works on it: still w's after the first deadline.
    await sleep(leaseMs / 2);
    expect(await redis.prFinRenew(prefix, 'pass1', '1', lease, leaseMs)).toBe(1);
    await sleep(leaseMs / 2 + 100);
    expect(await redis.prFinTake(prefix, 'c', leaseMs, 2)).toHaveLength(3); // nothing to take: bucket 1 stays w's
    // w stalls: no renewal, its deadline passes; c takes bucket 1 back and answers it; w's late answer is refused.
    await sleep(leaseMs + 100);
    const again = await redis.prFinTake(prefix, 'c', leaseMs, 2);
    expect(again[3]).toBe('1');
    expect(await redis.prFinDone(prefix, 'pass1', '1', lease, '[{"result":"late"}]')).toBe(0);
    expect(await redis.prFinRenew(prefix, 'pass1', '1', lease, leaseMs)).toBe(0);
    expect(await redis.prFinDone(prefix, 'pass1', '1', again[4], '[{"result":"c"},{"result":"c"}]')).toBe(1);
    // Bucket 2 is never answered: taken back twice (--max-deliveries 2), it is answered with an error per page.
    await redis.multi().hset(`${F}b`, '2', requests('2')).rpush(`${F}q`, '2').exec();
    expect((await redis.prFinTake(prefix, 'c', leaseMs, 2))[3]).toBe('2');
    await sleep(leaseMs + 100);
    expect((await redis.prFinTake(prefix, 'w', leaseMs, 2))[3]).toBe('2');
    await sleep(leaseMs + 100);
    expect(await redis.prFinTake(prefix, 'w', leaseMs, 2)).toHaveLength(3); // answered, nothing left to take
    const collected = await redis.prFinCollect(prefix, 'pass1', 64);
    expect(collected[0]).toBe('1');
    expect(JSON.parse(collected[1])).toEqual([{ result: 'c' }, { result: 'c' }]);
    expect(collected[2]).toBe('2');
    expect(JSON.parse(collected[3]).map((/** @type {any} */ a) => a.error.code)).toEqual(['MAX_DELIVERIES', 'MAX_DELIVERIES']);
    expect(Number(await redis.hget(`${prefix}cnt`, 'finReclaimed'))).toBe(3);
    // Nothing is handed out once the coordinator is gone; collect says LOST once the pass is not the crawl's.
    await redis.multi().hset(`${F}b`, '3', requests('3')).rpush(`${F}q`, '3').zadd(`${prefix}workers`, 0, 'c').exec();
    expect(await redis.prFinTake(prefix, 'w', leaseMs, 2)).toEqual(['finish', '', 0]);
    expect(await redis.prFinCurrent(prefix, 'pass1', leaseMs)).toBe(0);
    await redis.hdel(`${prefix}meta`, 'fin');
    expect(await redis.prFinCollect(prefix, 'pass1', 64)).toEqual(['LOST']);
  });

  it('a worker whose OUT is not the coordinator\'s stops helping with one clear error; its bucket is not answered (it goes back once the worker is gone)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-finish-'));
    try {
      const blobsDir = path.join(dir, 'blobs');
      await mkdir(path.join(blobsDir, 'finish'), { recursive: true });
      await writeFile(path.join(blobsDir, 'finish', 'pass1.names'), nameTableBytes(encodeNameTable([], [], 10)));
      const context = { placeholders: 'ssi', pricePath: '/price', staticRoot: 'http://h/', dynamicBase: null, origins: ['http://h'], relativeLinks: true, siteUrl: null };
      const id = 'a'.repeat(64);
      const bucket = JSON.stringify([{ bodyId: id, scanId: id, url: 'http://h/p', file: 'p.html', type: 'html', charset: 'utf-8', temp: '.prerender/tmp-gone/1.tmp' }]);
      await redis.zadd(`${prefix}workers`, Date.now() + 60_000, 'c');
      await redis.multi().hset(`${prefix}meta`, 'phase', 'finish', 'fin', 'pass1', 'coord', 'c', 'finctx', JSON.stringify(context))
        .hset(`${prefix}f:pass1:b`, '1', bucket).rpush(`${prefix}f:pass1:q`, '1').exec();
      const threads = new PageThreads(0);
      const help = () => helpFinish({
        redis, prefix, worker: 'w', leaseMs: 5000, maxDeliveries: 3, out: path.join(dir, 'out'), blobsDir, threads,
        readBlobs: async () => [], locate: (blob) => ({ path: path.join(blobsDir, blob), at: 0, length: -1 }), signal: null,
      });
      await expect(help()).rejects.toMatchObject({ code: 'NOT_SHARED', message: expect.stringMatching(/is not the coordinator's output directory.*same shared mount/) });
      // Nothing was answered for the page: the bucket is still leased (to go back once w is gone), not done.
      expect(await redis.hlen(`${prefix}f:pass1:lease`)).toBe(1);
      expect(await redis.llen(`${prefix}f:pass1:d`)).toBe(0);
      await threads.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('after --max-deliveries, a URL is a failed record saying why', async () => {
    const a = open({ maxDeliveries: 2, leaseMs: SHORT }, true);
    await a.add([item('http://h/')]);
    for (let delivery = 1; delivery <= 2; delivery++) {
      const frontier = open({ maxDeliveries: 2, leaseMs: SHORT });
      let taken = /** @type {string[]} */ ([]);
      for (let tries = 0; taken.length === 0 && tries < 100; tries++) {
        taken = await (delivery === 1 ? a : frontier).take(1);
        if (taken.length === 0) await sleep(20);
      }
      expect(taken).toEqual(['http://h/']);
      await sleep(SHORT + 50);
    }
    await a.take(1); // reclaims it for the last time
    const failed = await stored('http://h/');
    expect(failed.state).toBe('failed');
    expect(failed.error?.code).toBe('MAX_DELIVERIES');
    expect(failed.error?.message).toMatch(/taken 2 times/);
    expect(a.counts().queued).toBe(0);
  });

  it('hands out at most --origin-concurrency URLs of one origin at once, across processes', async () => {
    const a = open({ originConcurrency: 3 }, true);
    await a.add(['http://h/', 'http://h/1', 'http://h/2', 'http://h/3', 'http://other/'].map((key) => item(key)));
    const b = open({ originConcurrency: 3 });
    const first = await a.take(2);
    const second = await b.take(10);
    const fromH = [...first, ...second].filter((key) => key.startsWith('http://h/'));
    expect(fromH).toHaveLength(3);
    expect([...first, ...second]).toContain('http://other/');
    // One done: one more URL of h may go.
    const record = /** @type {import('../lib/store/records.js').PageRecord} */ (await a.records.get(first[0]));
    record.state = 'done';
    await a.done(first[0], { page: true }); // takes the next URL with the result
    expect(await b.take(10)).toEqual([]);
    expect((await a.take(10)).filter((key) => key.startsWith('http://h/'))).toHaveLength(1);
  });

  it('keeps the interval of --rate/--delay between two URLs of one origin, across processes', async () => {
    const a = open({ intervalMs: 300 }, true);
    await a.add(['http://h/', 'http://h/1', 'http://h/2'].map((key) => item(key)));
    const b = open({ intervalMs: 300 });
    const times = [];
    const started = Date.now();
    while (times.length < 3 && Date.now() - started < 3000) {
      for (const frontier of [a, b]) {
        const taken = await frontier.take(5);
        expect(taken.length).toBeLessThanOrEqual(1);
        if (taken.length === 1) times.push(Date.now());
      }
      await sleep(10);
    }
    expect(times).toHaveLength(3);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(290);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(290);
  });

  it('--max-pages: a URL that did not become a page gives its slot to the first one refused', async () => {
    const a = open({ maxPages: 2 }, true);
    expect(await a.add(['http://h/', 'http://h/1', 'http://h/2'].map((key) => item(key)))).toEqual(['added', 'added', 'limit']);
    await a.take(2);
    const record = /** @type {import('../lib/store/records.js').PageRecord} */ (await a.records.get('http://h/1'));
    record.state = 'redirect';
    expect(await a.done('http://h/1', { page: false })).toEqual([{ key: 'http://h/2', kind: 'navigation', referrer: null }]);
    expect(await a.take(2)).toEqual(['http://h/2']);
  });
});
