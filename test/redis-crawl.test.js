// @ts-check
/**
 * Crawls shared through a real redis-server (started here, nothing saved),
 * with real processes: `prerender crawl --frontier … --crawl-id …` as the
 * coordinator and `prerender worker` processes. What the user gets: the same
 * tree and manifest as one process, whatever the number of workers and
 * whoever dies. Skipped outside CI without redis-server; in CI it must run.
 */
import http from 'node:http';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAVE_REDIS, freePort, startRedis } from './helpers/redis.js';
import { manifestOf, startCli, treeDigest, until } from './helpers/processes.js';
import { useTestDir } from './helpers/fixtures.js';
import { startSite } from '../fixtures/site.js';
import { startChangingSite } from '../fixtures/changing-site.js';
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
/** @param {string} out */
const readManifestFile = async (out) => JSON.parse(await readFile(path.join(out, 'prerender-manifest.json'), 'utf8'));

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
  }, 60_000);

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
  }, 60_000);

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
  }, 60_000);

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
  }, 60_000);

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
  }, 60_000);

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
  }, 60_000);

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
  }, 60_000);

  it('workers on other machines help write the tree, not those sharing the coordinator\'s cores; one stopped (SIGSTOP) and one killed (SIGKILL) holding a bucket of pages lose it to another process; the same tree, late answers ignored', async () => {
    const big = await startOrigin({ products: 400, count: 50, port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (big.address()).port}`;
    const client = await connectRedis(redis.url, { timeoutSeconds: 5 });
    /** A worker that says it runs on another machine (PRERENDER_HOST), so that it brings cores of its own. */
    const elsewhere = (/** @type {string[]} */ args) => startCli(args, { env: { ...process.env, PRERENDER_HOST: 'helper.test' } });
    try {
      const args = [`${origin}/st/dir.asp?Start=1&Count=50`, '-i', '/st/dir.asp', '/st/product.asp', '-c', '4'];
      const one = path.join(dir, 'big-one');
      expect((await run(['crawl', ...args, '-o', one, '-q'])).code).toBe(0);
      const baseline = await treeDigest(one);
      expect(Object.keys(baseline).length).toBeGreaterThan(400);

      // A worker on the coordinator's machine, whose threads use every core already (the default): it fetches,
      // and the coordinator writes alone, no pass of buckets begun. --rate keeps the crawl going until the worker is in.
      const sameId = nextId();
      const [alone, beside] = await Promise.all([
        run(['crawl', ...args, ...shared(sameId, path.join(dir, 'big-same')), '-q', '--rate', '150']),
        run(worker(sameId, ['-c', '4']).filter((arg) => arg !== '-q')),
      ]);
      expect(alone.code, alone.stderr).toBe(0);
      expect(beside.code, beside.stderr).toBe(0);
      expect(beside.stdout).toMatch(/worker: [1-9]\d* pages fetched, 0 failed, 0 rewritten and written/);
      expect(existsSync(path.join(dir, 'big-same', '.prerender', 'blobs', 'finish'))).toBe(false);
      expect(await treeDigest(path.join(dir, 'big-same'))).toEqual(baseline);

      /**
       * Start a coordinator and one worker; once the worker holds a bucket
       * of the finishing phase, stop it there (SIGSTOP), checked in Redis.
       * @param {string} id
       * @param {string} out
       */
      const catchHolding = async (id, out) => {
        const prefix = keyPrefix(id);
        const coordinator = start(['crawl', ...args, ...shared(id, out), '-q']);
        const victim = elsewhere(worker(id, ['-c', '4']).filter((arg) => arg !== '-q'));
        /** Whether a process other than the coordinator holds a bucket now. */
        const held = async () => {
          const [token, coord] = await client.hmget(`${prefix}meta`, 'fin', 'coord');
          if (!token) return false;
          const leases = Object.values(await client.hgetall(`${prefix}f:${token}:lease`));
          return leases.some((lease) => lease.split('|')[1] !== coord);
        };
        for (let tries = 0; ; tries++) {
          await until(held, 30_000);
          victim.child.kill('SIGSTOP');
          // Stopped with the bucket in hand: still held once an answer already on its way would have arrived.
          if (await held() && await new Promise((resolve) => { setTimeout(resolve, 200); }).then(held)) break;
          victim.child.kill('SIGCONT');
          if (tries >= 50) throw new Error('the worker never held a bucket when stopped');
        }
        return { coordinator, victim, prefix };
      };

      const stopped = await catchHolding(nextId(), path.join(dir, 'big-stop'));
      try {
        expect((await stopped.coordinator.done).code).toBe(0);
        expect(Number(await client.hget(`${stopped.prefix}cnt`, 'finReclaimed'))).toBeGreaterThanOrEqual(1);
      } finally {
        stopped.victim.child.kill('SIGCONT');
      }
      const late = await stopped.victim.done;
      expect(late.code, late.stderr).toBe(0);
      expect(late.stdout).toMatch(/[1-9]\d* late results? ignored/);
      expect(await treeDigest(path.join(dir, 'big-stop'))).toEqual(baseline);

      const killed = await catchHolding(nextId(), path.join(dir, 'big-kill'));
      killed.victim.child.kill('SIGKILL');
      expect((await killed.victim.done).signal).toBe('SIGKILL');
      expect((await killed.coordinator.done).code).toBe(0);
      expect(Number(await client.hget(`${killed.prefix}cnt`, 'finReclaimed'))).toBeGreaterThanOrEqual(1);
      expect(await treeDigest(path.join(dir, 'big-kill'))).toEqual(baseline);
      expect(await manifestOf(path.join(dir, 'big-kill'))).toBe(await manifestOf(one));

      // The coordinator killed in the finishing phase: its worker leaves; the same command again ends with the same tree, and nothing of the killed pass is left.
      const id = nextId();
      const out = path.join(dir, 'big-kill-coordinator');
      const prefix = keyPrefix(id);
      const command = ['crawl', ...args, ...shared(id, out), '-q'];
      const coordinator = start(command);
      const helper = elsewhere(worker(id, ['-c', '4']));
      await until(async () => (await client.hget(`${prefix}meta`, 'fin')) !== null, 30_000);
      const left = /** @type {string} */ (await client.hget(`${prefix}meta`, 'fin'));
      coordinator.child.kill('SIGKILL');
      await coordinator.done;
      expect((await helper.done).code).toBe(0);
      expect((await run(command)).code).toBe(0);
      expect(await treeDigest(out)).toEqual(baseline);
      expect(await manifestOf(out)).toBe(await manifestOf(one));
      expect(await client.keys(`${prefix}f:*`)).toEqual([]);
      expect(await readdir(path.join(out, '.prerender', 'blobs', 'finish'))).not.toContain(`${left}.names`);
    } finally {
      await client.quit();
      big.closeAllConnections();
      await new Promise((resolve) => big.close(resolve));
    }
  }, 120_000);

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
  }, 60_000);

  it('a 429 with Retry-After holds its origin back in every process, not only in the one that got it', async () => {
    /** @type {{ path: string, at: number, status: number }[]} */
    const log = [];
    let refused = false;
    const PAGES = 80;
    const server = http.createServer((request, response) => {
      const at = Date.now();
      const target = request.url ?? '/';
      if (target === '/p3' && !refused) {
        refused = true;
        log.push({ path: target, at, status: 429 });
        response.writeHead(429, { 'retry-after': '2', 'content-type': 'text/plain' }).end('slow down');
        return;
      }
      log.push({ path: target, at, status: 200 });
      const body = target === '/'
        ? `<html><body>${Array.from({ length: PAGES }, (_, i) => `<a href="/p${i}">${i}</a>`).join('')}</body></html>`
        : `<html><body><a href="/">home</a> ${target}</body></html>`;
      // Slow enough that no request in flight at the 429 ends (and takes the
      // next URL) before the backoff reaches Redis, even on a loaded machine.
      setTimeout(() => response.writeHead(200, { 'content-type': 'text/html' }).end(body), 500);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    const origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
    try {
      const id = nextId();
      const out = path.join(dir, 'backoff');
      const results = await Promise.all([
        run(['crawl', `${origin}/`, ...shared(id, out), '-q', '-c', '2', '--json']),
        run(worker(id, ['-c', '2'])),
      ]);
      expect(results.map((result) => result.code)).toEqual([0, 0]);
      expect(JSON.parse(results[0].stdout).pages).toBe(PAGES + 1);
      const refusal = /** @type {{ at: number }} */ (log.find((entry) => entry.status === 429));
      // Requests taken before the 429 was shared may still arrive (a URL each
      // process took ahead with its last result); then none for 2 s.
      const during = log.filter((entry) => entry.at > refusal.at + 50 && entry.at < refusal.at + 1800);
      expect(during.length).toBeLessThanOrEqual(4);
      const retried = /** @type {{ at: number }} */ (log.find((entry) => entry.path === '/p3' && entry.status === 200));
      expect(retried.at - refusal.at).toBeGreaterThanOrEqual(1900);
      const status = JSON.parse((await run(['status', '--frontier', redis.url, '--crawl-id', id, '--json'])).stdout);
      expect(status.backoffs).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);

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
  }, 60_000);

  it('links past --max-url-length found by any process reach the coordinator: the run is not complete, and says how many', async () => {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      if (req.url === '/') return res.end(Array.from({ length: 20 }, (_, i) => `<a href="/p${i}">${i}</a>`).join(''));
      return res.end(`<a href="${req.url}/${'x'.repeat(300)}">longer</a>`);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    try {
      const root = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}/`;
      const id = nextId();
      const out = path.join(dir, 'too-long');
      const [crawled, helped] = await Promise.all([
        run(['crawl', root, ...shared(id, out), '--max-url-length', '200', '-c', '1', '--json']),
        run(worker(id, ['-c', '4'])),
      ]);
      expect([crawled.code, helped.code]).toEqual([0, 0]);
      const summary = JSON.parse(crawled.stdout);
      expect(summary).toMatchObject({ pages: 21, tooLong: 20, complete: false });
      expect((await readManifestFile(out)).warnings.map((/** @type {{ code: string }} */ w) => w.code)).toContain('MAX_URL_LENGTH');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);

  it('worker and status take --frontier and --crawl-id from a config file, as crawl does (the one in their directory, or --config)', async () => {
    const changing = await startChangingSite({ products: 10 });
    try {
      const id = nextId();
      const out = path.join(dir, 'from-config');
      const here = path.join(dir, 'config-here');
      await mkdir(here, { recursive: true });
      const config = path.join(here, 'prerender.config.json');
      await writeFile(config, JSON.stringify({ frontier: redis.url, crawlId: id }));
      const coordinator = start(['crawl', changing.root, '-x', '/cart.asp', ...shared(id, out), '-c', '1']);
      const helper = startCli(['worker', '-q', '-c', '1'], { cwd: here });
      const [crawled, helped] = await Promise.all([coordinator.done, helper.done]);
      expect([crawled.code, helped.code, helped.stderr]).toEqual([0, 0, '']);
      const status = await run(['status', '--config', config, '--json']);
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ crawlId: id, phase: 'finished' });
      const missing = await run(['status', '--config', path.join(here, 'nope.json')]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/config file not found: .*nope\.json/);
    } finally {
      await changing.close();
    }
  }, 60_000);

  it('a re-crawl with the same id is incremental on every process: conditional requests from the stored validators, 304s, nothing written', async () => {
    const changing = await startChangingSite({ products: 30 });
    try {
      const id = nextId();
      const out = path.join(dir, 'changing');
      const args = ['crawl', changing.root, '-x', '/cart.asp', ...shared(id, out), '--json', '-c', '2'];
      const first = await Promise.all([run(args), run(worker(id, ['-c', '2']))]);
      expect(first.map((result) => result.code)).toEqual([0, 0]);
      changing.resetCounters();
      changing.change(7);
      const second = await Promise.all([run(args), run(worker(id, ['-c', '2']))]);
      expect(second.map((result) => result.code)).toEqual([0, 0]);
      expect(changing.counters.conditional).toBe(changing.counters.requests); // every page, whoever fetched it
      expect(changing.counters.notModified).toBe(changing.counters.requests - 1);
      const churn = JSON.parse(second[0].stdout).churn;
      expect(churn).toMatchObject({ changed: 1, notModified: 30, filesWritten: 1 });
    } finally {
      await changing.close();
    }
  }, 60_000);

  it('a --name rule added since the last crawl into OUT names the pages that answer 304 too, on every process', async () => {
    const changing = await startChangingSite({ products: 200 });
    try {
      const out = path.join(dir, 'renamed');
      const base = ['crawl', changing.root, '-x', '/cart.asp', '-q', '-c', '2'];
      const id = nextId();
      const first = await Promise.all([run([...base, ...shared(id, out)]), run(worker(id, ['-c', '2']))]);
      expect(first.map((result) => result.code)).toEqual([0, 0]);
      changing.resetCounters();
      const renamed = nextId();
      // The worker first, waiting for the crawl id, and the coordinator at one request at a time: the worker takes pages too.
      const helper = start(worker(renamed, ['-c', '4']));
      const second = await Promise.all([run([...base.slice(0, -1), '1', '--name', '/', 'home.html', ...shared(renamed, out), '--json']), helper.done]);
      expect(second.map((result) => result.code)).toEqual([0, 0]);
      expect(JSON.parse(second[0].stdout).pages).toBe(201);
      // Every page fetched in full, whoever fetched it: a 304 would have kept the file the old rules gave.
      expect(changing.counters.conditional).toBe(0);
      const fresh = path.join(dir, 'renamed-fresh');
      expect((await run([...base, '--name', '/', 'home.html', '-o', fresh])).code).toBe(0);
      expect(await treeDigest(out)).toEqual(await treeDigest(fresh));
    } finally {
      await changing.close();
    }
  }, 60_000);

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
  }, 60_000);

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
    // Ctrl-C while it waits: exit 130 at once, not the --wait error.
    const waiting = startCli(worker(nextId(), ['--wait', '60']));
    const watcher = await connectRedis(redis.url, { timeoutSeconds: 5 });
    try {
      await until(async () => /cmd=get/.test(String(await watcher.client('LIST'))), 20_000); // it asks for its crawl's configuration
    } finally {
      await watcher.quit();
    }
    const stoppedAt = Date.now();
    waiting.child.kill('SIGINT');
    const stopped = await waiting.done;
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).not.toMatch(/no crawl/);
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    // A machine name that could not sit in a lease entry: refused before anything is taken, by a worker and a coordinator alike.
    const env = { ...process.env, PRERENDER_HOST: 'rack|7' };
    const badWorker = await startCli(worker(id), { env }).done;
    expect(badWorker.code).toBe(2);
    expect(badWorker.stderr).toMatch(/PRERENDER_HOST must be a machine name .*"rack\|7"/);
    const badCoordinator = await startCli(['crawl', ...shopArgs(), ...shared(nextId(), path.join(dir, 'bad-host'))], { env }).done;
    expect(badCoordinator.code).toBe(2);
    expect(badCoordinator.stderr).toMatch(/PRERENDER_HOST must be a machine name/);
  }, 30_000);

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
    const started = Date.now();
    const unreachable = await run(['crawl', ...shopArgs(), '--frontier', `redis://user:s3cret@127.0.0.1:${port}/0`, '--crawl-id', 'x', '-o', path.join(dir, 'never'), '--frontier-timeout', '1', '-q']);
    expect(unreachable.code).toBe(2);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(unreachable.stderr).toMatch(/cannot reach the frontier redis:\/\/user:\*\*\*@127\.0\.0\.1:\d+\/0/);
    expect(unreachable.stderr).not.toContain('s3cret');
    await rm(path.join(dir, 'never'), { recursive: true, force: true });
  }, 60_000);
});
