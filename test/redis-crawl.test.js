// @ts-check
/**
 * Crawls shared through a real redis-server (started here, nothing saved),
 * with real processes: `prerender crawl --frontier … --crawl-id …` as the
 * coordinator and `prerender worker` processes. What the user gets: the same
 * tree and manifest as one process, whatever the number of workers and
 * whoever dies. What each process does (buckets of the writing phase, a 429,
 * re-crawls, config files) is in redis-processes.test.js. Skipped outside CI
 * without redis-server; in CI it must run.
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAVE_REDIS, freePort, startRedis } from './helpers/redis.js';
import { manifestOf, startCli, treeDigest, until } from './helpers/processes.js';
import { useTestDir } from './helpers/fixtures.js';
import { startSite } from '../fixtures/site.js';
import { startOrigin } from '../bench/origin.js';
import { connectRedis, keyPrefix } from '../lib/distributed/connection.js';
import { openSharedCrawl } from '../lib/distributed/shared.js';
import { resolveCrawlOptions } from '../lib/options/crawl-options.js';

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis;
/** @type {Awaited<ReturnType<typeof startSite>>} */
let site;
/** @type {import('node:http').Server} */
let shopServer;
let shop = '';
/** @type {{ target: string, at: number }[]} */
const shopLog = [];
let dir = '';
let ids = 0;

/** @param {string[]} args */
const start = (args) => startCli(args);
/** @param {string[]} args */
const run = (args) => start(args).done;

const siteArgs = () => [
  site.url('/names/index.asp'), site.url('/redir/a301.asp'), site.url('/errors/500.asp'),
  '-i', '/names/', '/redir/', '/errors/500.asp', '-x', '/redir/index.asp', '--retries', '0',
];
const shopArgs = () => [`${shop}/st/dir.asp?Start=1&Count=20`, '-i', '/st/dir.asp', '/st/product.asp', '-c', '2'];
/** @param {string} id @param {string} out */
const shared = (id, out) => ['--frontier', redis.url, '--crawl-id', id, '-o', out, '--lease-timeout', '2000'];
const worker = (/** @type {string} */ id, /** @type {string[]} */ more = []) => ['worker', '--frontier', redis.url, '--crawl-id', id, '-q', ...more];
const nextId = () => `crawl-${++ids}`;

describe.skipIf(!HAVE_REDIS)('a crawl shared through Redis', () => {
  useTestDir('prerender-redis-', (made) => { dir = made; });
  /** @typedef {{ digest: Record<string, string>, manifest: string }} Baseline */
  /** @type {Promise<Baseline> | undefined} */
  let siteOnce;
  /** @type {Promise<Baseline> | undefined} */
  let shopOnce;
  /**
   * What one process writes, crawled once by whichever test needs it first
   * (so that any test also runs alone, with -t).
   */
  const siteBase = () => (siteOnce ??= (async () => {
    const one = path.join(dir, 'one');
    expect((await run(['crawl', ...siteArgs(), '-o', one, '-q'])).code).toBe(1); // the 500 is a failure
    return { digest: await treeDigest(one), manifest: await manifestOf(one) };
  })());
  const shopBase = () => (shopOnce ??= (async () => {
    const one = path.join(dir, 'shop-one');
    expect((await run(['crawl', ...shopArgs(), '-o', one, '-q'])).code).toBe(0);
    return { digest: await treeDigest(one), manifest: await manifestOf(one) };
  })());

  beforeAll(async () => {
    redis = await startRedis();
    site = await startSite();
    shopServer = await startOrigin({ products: 60, count: 20, port: 0, host: '127.0.0.1', latencyMs: 40, onRequest: (target) => shopLog.push({ target, at: Date.now() }) });
    shop = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (shopServer.address()).port}`;
  });
  afterAll(async () => {
    await redis?.stop();
    await site?.close();
    shopServer?.closeAllConnections();
    await new Promise((resolve) => shopServer ? shopServer.close(resolve) : resolve(undefined));
  });

  it('one process, and a coordinator with 0, 1 and 3 workers, write the same tree and manifest (colliding and unsafe names, a redirect, a 500)', async () => {
    const siteBaseline = await siteBase(); // first, before this test's own requests reach the origin
    const manifest = JSON.parse(siteBaseline.manifest);
    expect(manifest.errors.map((/** @type {{ status?: number }} */ e) => e.status)).toContain(500);
    expect(manifest.redirects).toHaveLength(1);
    expect(manifest.warnings.map((/** @type {{ code: string }} */ w) => w.code)).toEqual(expect.arrayContaining(['NAME_COLLISION', 'UNSAFE_NAME']));
    for (const workers of [0, 1, 3]) {
      const id = nextId();
      const out = path.join(dir, `w${workers}`);
      const results = await Promise.all([
        run(['crawl', ...siteArgs(), ...shared(id, out), '-q', '-c', '2']),
        ...Array.from({ length: workers }, () => run(worker(id, ['-c', '2']))),
      ]);
      expect(results.map((result) => result.code)).toEqual([1, ...Array.from({ length: workers }, () => 0)]);
      expect(await treeDigest(out)).toEqual(siteBaseline.digest);
      expect(await manifestOf(out)).toBe(siteBaseline.manifest);
    }
  });

  it('a worker killed (SIGKILL) mid-fetch: the same tree, no URL fetched more than twice', async () => {
    const shopBaseline = await shopBase(); // first, before this test's own requests reach the origin
    const id = nextId();
    const out = path.join(dir, 'shop-kill-worker');
    shopLog.length = 0;
    const coordinator = start(['crawl', ...shopArgs(), ...shared(id, out), '-q']);
    const victim = start(worker(id, ['-c', '4']));
    await until(() => shopLog.length >= 15);
    victim.child.kill('SIGKILL');
    expect((await victim.done).signal).toBe('SIGKILL');
    expect((await coordinator.done).code).toBe(0);
    expect(await treeDigest(out)).toEqual(shopBaseline.digest);
    expect(await manifestOf(out)).toBe(shopBaseline.manifest);
    /** @type {Map<string, number>} */
    const fetches = new Map();
    for (const { target } of shopLog) fetches.set(target, (fetches.get(target) ?? 0) + 1);
    expect([...fetches].filter(([, count]) => count > 2)).toEqual([]);
  });

  it('the coordinator killed (SIGKILL), then the same command again: the same tree', async () => {
    const shopBaseline = await shopBase(); // first, before this test's own requests reach the origin
    const id = nextId();
    const out = path.join(dir, 'shop-kill-coordinator');
    shopLog.length = 0;
    const command = ['crawl', ...shopArgs(), ...shared(id, out), '-q'];
    const coordinator = start(command);
    const helper = start(worker(id, ['-c', '2']));
    await until(() => shopLog.length >= 15);
    coordinator.child.kill('SIGKILL');
    await coordinator.done;
    expect((await helper.done).code).toBe(0); // the worker finishes the fetching alone
    const again = await run(command);
    expect(again.code).toBe(0);
    expect(await treeDigest(out)).toEqual(shopBaseline.digest);
    expect(await manifestOf(out)).toBe(shopBaseline.manifest);
  });

  /** The options of a coordinator of shopArgs() at --rate 20 (about 4 s), in this process. @param {string} id @param {string} out */
  const shopCoordinatorOptions = (id, out) => resolveCrawlOptions({
    roots: [`${shop}/st/dir.asp?Start=1&Count=20`], include: ['/st/dir.asp', '/st/product.asp'], out, frontier: redis.url, crawlId: id, leaseTimeout: 2000, rate: 20,
  });
  /**
   * A coordinator of shopArgs() at --rate 20 under a new crawl id, once it has made its first requests.
   * @param {string} name its OUT under the test directory
   */
  const liveCoordinator = async (name) => {
    const id = nextId();
    const out = path.join(dir, name);
    shopLog.length = 0;
    const first = start(['crawl', ...shopArgs(), ...shared(id, out), '-q', '--rate', '20']);
    await until(() => shopLog.length >= 3);
    return { id, out, first };
  };

  it('a second coordinator on a crawl id whose coordinator is alive is refused, and the first one\'s tree is untouched', async () => {
    const shopBaseline = await shopBase(); // first, before this test's own requests reach the origin
    const { id, out, first } = await liveCoordinator('shop-two-coordinators');
    // Another machine's coordinator (the lock on OUT would stop one on this machine first), even with
    // --fresh-start: it must neither clear nor join the live crawl.
    await expect(openSharedCrawl({ ...shopCoordinatorOptions(id, out), freshStart: true }, [], null)).rejects.toMatchObject({ code: 'COORDINATOR_ALIVE', message: expect.stringMatching(/has a live coordinator .*one coordinator per crawl id/) });
    expect(first.child.exitCode, 'the first coordinator still runs').toBeNull();
    expect((await first.done).code).toBe(0);
    expect(await treeDigest(out)).toEqual(shopBaseline.digest);
    expect(await manifestOf(out)).toBe(shopBaseline.manifest);
  });

  it('a coordinator with another configuration changes nothing under a live crawl id, even with a shorter --lease-timeout; with --fresh-start it is refused too', async () => {
    const shopBaseline = await shopBase(); // first, before this test's own requests reach the origin
    const { id, out, first } = await liveCoordinator('shop-mismatch-live');
    // Claimed with its own 200 ms lease, it would take the id over between the live one's heartbeats (2 s / 6).
    const other = { ...shopCoordinatorOptions(id, out), leaseTimeout: 200 };
    await expect(openSharedCrawl(other, [], null)).rejects.toMatchObject({ code: 'CONFIG_MISMATCH' });
    await expect(openSharedCrawl({ ...other, freshStart: true }, [], null)).rejects.toMatchObject({ code: 'COORDINATOR_ALIVE' });
    expect(first.child.exitCode, 'the first coordinator still runs').toBeNull();
    expect((await first.done).code).toBe(0);
    expect(await treeDigest(out)).toEqual(shopBaseline.digest);
  });

  it('a coordinator that stalled (SIGSTOP) while another took the crawl over stops when it wakes (exit 2)', async () => {
    const { id, out, first } = await liveCoordinator('shop-replaced');
    first.child.kill('SIGSTOP');
    let second;
    try {
      second = await openSharedCrawl(shopCoordinatorOptions(id, out), [], null); // once the stalled one's heartbeat lapsed
    } finally {
      first.child.kill('SIGCONT');
    }
    try {
      const result = await first.done;
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/another one took the crawl over/);
    } finally {
      await second.close();
    }
  });

  it('a stuck worker (SIGSTOP) loses its leases; after SIGCONT its late results are ignored', async () => {
    const shopBaseline = await shopBase(); // first, before this test's own requests reach the origin
    const id = nextId();
    const out = path.join(dir, 'shop-stop');
    shopLog.length = 0;
    const coordinator = start(['crawl', ...shopArgs(), ...shared(id, out), '-q']);
    const stuck = start(worker(id, ['-c', '4']).filter((arg) => arg !== '-q'));
    // Stopped while it holds leases (a worker slow to start may have none yet).
    const client = await connectRedis(redis.url, { timeoutSeconds: 5 });
    const prefix = keyPrefix(id);
    const holds = async () => {
      const coord = await client.hget(`${prefix}meta`, 'coord');
      return Object.values(await client.hgetall(`${prefix}lease`)).some((lease) => lease.split('|')[1] !== coord);
    };
    try {
      for (let tries = 0; ; tries++) {
        await until(holds, 30_000);
        stuck.child.kill('SIGSTOP');
        if (await holds()) break;
        stuck.child.kill('SIGCONT');
        if (tries >= 50) throw new Error('the worker never held a lease when stopped');
      }
    } finally {
      await client.quit();
    }
    try {
      expect((await coordinator.done).code).toBe(0);
    } finally {
      stuck.child.kill('SIGCONT');
    }
    const late = await stuck.done;
    expect(late.code).toBe(0);
    expect(late.stdout).toMatch(/[1-9]\d* late results? ignored/);
    expect(await treeDigest(out)).toEqual(shopBaseline.digest);
    expect(await manifestOf(out)).toBe(shopBaseline.manifest);
  });

  it('--rate holds across two workers, measured at the origin', async () => {
    const shopBaseline = await shopBase(); // first, before this test's own requests reach the origin
    const id = nextId();
    const out = path.join(dir, 'shop-rate');
    shopLog.length = 0;
    const rate = 25;
    const results = await Promise.all([
      run(['crawl', ...shopArgs(), ...shared(id, out), '-q', '--rate', String(rate), '-c', '8']),
      run(worker(id, ['-c', '8'])),
      run(worker(id, ['-c', '8'])),
    ]);
    expect(results.map((result) => result.code)).toEqual([0, 0, 0]);
    expect(await treeDigest(out)).toEqual(shopBaseline.digest);
    const times = shopLog.map((entry) => entry.at).sort((a, b) => a - b);
    expect(times.length).toBeGreaterThanOrEqual(60);
    // In any one second, at most the rate (and one for the window's edge, and one for timer jitter).
    let most = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[i] - times[j] >= 1000) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBeLessThanOrEqual(rate + 2);
  });

  it('a second crawl with the same id at 0% churn writes nothing; status --json tells the phase and counts', async () => {
    const siteBaseline = await siteBase(); // first, before this test's own requests reach the origin
    const id = nextId();
    const out = path.join(dir, 'site-twice');
    const first = await run(['crawl', ...siteArgs(), ...shared(id, out), '--json']);
    expect(first.code).toBe(1);
    expect(JSON.parse(first.stdout).churn.filesWritten).toBeGreaterThan(0);
    const status = await run(['status', '--frontier', redis.url, '--crawl-id', id, '--json']);
    expect(status.code).toBe(0);
    const s = JSON.parse(status.stdout);
    expect(s).toMatchObject({ phase: 'finished', queued: 0, leased: 0, failed: 2 });
    expect(s.done).toBeGreaterThan(20);
    expect(Array.isArray(s.workers)).toBe(true);
    expect(s.topErrors.map((/** @type {{ code: string }} */ e) => e.code)).toContain('HTTP_STATUS');
    const second = await run(['crawl', ...siteArgs(), ...shared(id, out), '--json']);
    expect(second.code).toBe(1);
    expect(JSON.parse(second.stdout).churn).toMatchObject({ filesWritten: 0, bytesWritten: 0 });
    expect(await manifestOf(out)).toBe(siteBaseline.manifest);
  });

  it('another configuration under an existing crawl id is refused with what differs; --fresh-start starts over', async () => {
    const id = nextId();
    const out = path.join(dir, 'mismatch');
    expect((await run(['crawl', ...siteArgs(), ...shared(id, out), '-q'])).code).toBe(1);
    const refused = await run(['crawl', ...siteArgs(), ...shared(id, out), '-q', '--max-depth', '3']);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/crawl id "crawl-\d+" holds another configuration: --max-depth \(stored 64, given 3\)/);
    const fresh = await run(['crawl', ...siteArgs(), ...shared(id, out), '-q', '--max-depth', '3', '--fresh-start']);
    expect(fresh.code).toBe(1);
  });

  it('a worker of another version refuses to join; a worker waits (bounded) for a crawl id that does not exist; a bad PRERENDER_HOST is refused', async () => {
    const id = nextId();
    const client = await connectRedis(redis.url, { timeoutSeconds: 5 });
    try {
      await client.set(`${keyPrefix(id)}config`, JSON.stringify({ format: 'prerender-crawl', version: '0.0.0-other', roots: [], listed: [], options: {} }));
    } finally {
      await client.quit();
    }
    const refused = await run(worker(id));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/started by prerender 0\.0\.0-other; this worker is prerender \d/);
    const missing = await run(worker(nextId(), ['--wait', '1']));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no crawl "crawl-\d+" in Redis after waiting 1 s/);
    // Ctrl-C while it waits: exit 130 at once, not the --wait error (an hour: one that waited on would be killed at startCli's bound).
    const waiting = startCli(worker(nextId(), ['--wait', '3600']));
    const watcher = await connectRedis(redis.url, { timeoutSeconds: 5 });
    try {
      await until(async () => /cmd=get/.test(String(await watcher.client('LIST'))), 20_000); // it asks for its crawl's configuration
    } finally {
      await watcher.quit();
    }
    waiting.child.kill('SIGINT');
    const stopped = await waiting.done;
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).not.toMatch(/no crawl/);
    // A machine name that could not sit in a lease entry: refused before anything is taken, by a worker and a coordinator alike.
    const env = { ...process.env, PRERENDER_HOST: 'rack|7' };
    const badWorker = await startCli(worker(id), { env }).done;
    expect(badWorker.code).toBe(2);
    expect(badWorker.stderr).toMatch(/PRERENDER_HOST must be a machine name .*"rack\|7"/);
    const badCoordinator = await startCli(['crawl', ...shopArgs(), ...shared(nextId(), path.join(dir, 'bad-host'))], { env }).done;
    expect(badCoordinator.code).toBe(2);
    expect(badCoordinator.stderr).toMatch(/PRERENDER_HOST must be a machine name/);
  });

  it('Redis lost: restarted empty mid-crawl, every process exits 2 with one line and OUT holds no page; unreachable, the wait is bounded by --frontier-timeout and the password is never printed', async () => {
    const shopBaseline = await shopBase(); // first, before this test's own requests reach the origin
    const id = nextId();
    const out = path.join(dir, 'lost');
    shopLog.length = 0;
    // --rate 20: about 3 s of crawling, time for the worker to join even on a loaded machine.
    const coordinator = start(['crawl', ...shopArgs(), ...shared(id, out), '-q', '--rate', '20']);
    const helper = start(worker(id));
    // The worker must have joined (under load it can start after the crawl is well under way):
    // one still waiting for the crawl id would go on waiting for it after the restart (--wait).
    const client = await connectRedis(redis.url, { timeoutSeconds: 5 });
    try {
      await until(async () => shopLog.length >= 10 && (await client.zcard(`${keyPrefix(id)}workers`)) >= 2, 30_000);
    } finally {
      client.disconnect();
    }
    await redis.restart(); // no persistence: the crawl's state is gone
    const [c, w] = await Promise.all([coordinator.done, helper.done]);
    expect([c.code, w.code]).toEqual([2, 2]);
    for (const result of [c, w]) {
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(/state in Redis at redis:\/\/127\.0\.0\.1:\d+\/0 is gone/);
    }
    expect((await readdir(out)).filter((name) => name !== '.prerender')).toEqual([]);
    // The next run starts over and ends with the same tree.
    expect((await run(['crawl', ...shopArgs(), ...shared(id, out), '-q'])).code).toBe(0);
    expect(await treeDigest(out)).toEqual(shopBaseline.digest);

    const port = await freePort();
    // Killed at 30 s: one that waited for the default --frontier-timeout (60 s) would have no exit code.
    const unreachable = await startCli(['crawl', ...shopArgs(), '--frontier', `redis://user:s3cret@127.0.0.1:${port}/0`, '--crawl-id', 'x', '-o', path.join(dir, 'never'), '--frontier-timeout', '1', '-q'], { limitMs: 30_000 }).done;
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toMatch(/cannot reach the frontier redis:\/\/user:\*\*\*@127\.0\.0\.1:\d+\/0/);
    expect(unreachable.stderr).not.toContain('s3cret');
    await rm(path.join(dir, 'never'), { recursive: true, force: true });
  });
});
