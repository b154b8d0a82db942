// @ts-check
/**
 * What each process of a crawl shared through a real redis-server does
 * (started here, nothing saved), with real processes: workers on other
 * machines take buckets of the writing phase; a 429 holds every process
 * back; links too long, re-crawls and --name rules are the same on every
 * process; worker and status read config files. redis-crawl.test.js holds
 * the trees, kills and refusals. Skipped outside CI without redis-server;
 * in CI it must run.
 */
import http from 'node:http';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAVE_REDIS, startRedis } from './helpers/redis.js';
import { manifestOf, startCli, treeDigest, until } from './helpers/processes.js';
import { useTestDir } from './helpers/fixtures.js';
import { startChangingSite } from '../fixtures/changing-site.js';
import { startOrigin } from '../bench/origin.js';
import { connectRedis, keyPrefix } from '../lib/distributed/connection.js';

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis;
let dir = '';
let ids = 0;

/** @param {string[]} args */
const start = (args) => startCli(args);
/** @param {string[]} args */
const run = (args) => start(args).done;
/** @param {string} id @param {string} out */
const shared = (id, out) => ['--frontier', redis.url, '--crawl-id', id, '-o', out, '--lease-timeout', '2000'];
const worker = (/** @type {string} */ id, /** @type {string[]} */ more = []) => ['worker', '--frontier', redis.url, '--crawl-id', id, '-q', ...more];
const nextId = () => `crawl-${++ids}`;
/** @param {string} out */
const readManifestFile = async (out) => JSON.parse(await readFile(path.join(out, 'prerender-manifest.json'), 'utf8'));

describe.skipIf(!HAVE_REDIS)('each process of a crawl shared through Redis', () => {
  useTestDir('prerender-redis-', (made) => { dir = made; });

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  describe('writing buckets, against an origin of 400 products', { timeout: 300_000 }, () => {
    /** @type {import('node:http').Server} */
    let big;
    /** @type {import('ioredis').Redis} */
    let client;
    let group = '';
    let one = '';
    /** @type {string[]} */
    let args = [];
    /** @type {Record<string, string>} */
    let baseline = {};
    /** A worker that says it runs on another machine (PRERENDER_HOST), so that it brings cores of its own. */
    const elsewhere = (/** @type {string[]} */ more) => startCli(more, { env: { ...process.env, PRERENDER_HOST: 'helper.test' } });

    // One origin and one process's tree for the four cases (each its own crawl id and OUT).
    beforeAll(async () => {
      group = await mkdtemp(path.join(os.tmpdir(), 'prerender-redis-buckets-'));
      big = await startOrigin({ products: 400, count: 50, port: 0, host: '127.0.0.1' });
      const origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (big.address()).port}`;
      args = [`${origin}/st/dir.asp?Start=1&Count=50`, '-i', '/st/dir.asp', '/st/product.asp', '-c', '4'];
      one = path.join(group, 'one');
      expect((await run(['crawl', ...args, '-o', one, '-q'])).code).toBe(0);
      baseline = await treeDigest(one);
      expect(Object.keys(baseline).length).toBeGreaterThan(400);
      client = await connectRedis(redis.url, { timeoutSeconds: 5 });
    });
    afterAll(async () => {
      await client?.quit();
      big?.closeAllConnections();
      await new Promise((resolve) => (big ? big.close(resolve) : resolve(undefined)));
      if (group) await rm(group, { recursive: true, force: true });
    });

    /**
     * Start a coordinator and one worker; once the worker holds a bucket
     * of the writing phase, stop it there (SIGSTOP), checked in Redis.
     * @param {string} id
     * @param {string} out
     */
    const catchHolding = async (id, out) => {
      const prefix = keyPrefix(id);
      // The worker first, waiting for the crawl id: started and connected before the crawl, so that a slow
      // start on a busy machine does not leave every bucket to the coordinator.
      const victim = elsewhere(worker(id, ['-c', '4']).filter((arg) => arg !== '-q'));
      await until(async () => /cmd=get/.test(String(await client.client('LIST'))), 60_000);
      const coordinator = start(['crawl', ...args, ...shared(id, out), '-q']);
      /** Whether a process other than the coordinator holds a bucket now. */
      const held = async () => {
        const [token, coord] = await client.hmget(`${prefix}meta`, 'fin', 'coord');
        if (!token) return false;
        const leases = Object.values(await client.hgetall(`${prefix}f:${token}:lease`));
        return leases.some((lease) => lease.split('|')[1] !== coord);
      };
      for (let tries = 0; ; tries++) {
        await until(held, 180_000); // a bound on a hang: with the whole suite beside it, four crawls share two cores
        victim.child.kill('SIGSTOP');
        // Stopped with the bucket in hand: still held once an answer already on its way would have arrived.
        if (await held() && await new Promise((resolve) => { setTimeout(resolve, 500); }).then(held)) break;
        victim.child.kill('SIGCONT');
        if (tries >= 50) throw new Error('the worker never held a bucket when stopped');
      }
      return { coordinator, victim, prefix };
    };

    it('a worker on the coordinator\'s machine, whose threads use every core already, fetches; the coordinator writes alone', async () => {
      // No pass of buckets begun. --rate keeps the crawl going until the worker is in.
      const id = nextId();
      const out = path.join(group, 'same');
      const [alone, beside] = await Promise.all([
        run(['crawl', ...args, ...shared(id, out), '-q', '--rate', '150']),
        run(worker(id, ['-c', '4']).filter((arg) => arg !== '-q')),
      ]);
      expect(alone.code, alone.stderr).toBe(0);
      expect(beside.code, beside.stderr).toBe(0);
      expect(beside.stdout).toMatch(/worker: [1-9]\d* pages fetched, 0 failed, 0 rewritten and written/);
      expect(existsSync(path.join(out, '.prerender', 'blobs', 'finish'))).toBe(false);
      expect(await treeDigest(out)).toEqual(baseline);
    });

    it('a worker on another machine stopped (SIGSTOP) holding a bucket loses it to another process; its late answers are ignored; the same tree', async () => {
      const out = path.join(group, 'stop');
      const stopped = await catchHolding(nextId(), out);
      try {
        expect((await stopped.coordinator.done).code).toBe(0);
        expect(Number(await client.hget(`${stopped.prefix}cnt`, 'finReclaimed'))).toBeGreaterThanOrEqual(1);
      } finally {
        stopped.victim.child.kill('SIGCONT');
      }
      const late = await stopped.victim.done;
      expect(late.code, late.stderr).toBe(0);
      expect(late.stdout).toMatch(/[1-9]\d* late results? ignored/);
      expect(await treeDigest(out)).toEqual(baseline);
    });

    it('a worker on another machine killed (SIGKILL) holding a bucket loses it to another process; the same tree and manifest', async () => {
      const out = path.join(group, 'kill');
      const killed = await catchHolding(nextId(), out);
      killed.victim.child.kill('SIGKILL');
      expect((await killed.victim.done).signal).toBe('SIGKILL');
      expect((await killed.coordinator.done).code).toBe(0);
      expect(Number(await client.hget(`${killed.prefix}cnt`, 'finReclaimed'))).toBeGreaterThanOrEqual(1);
      expect(await treeDigest(out)).toEqual(baseline);
      expect(await manifestOf(out)).toBe(await manifestOf(one));
    });

    it('the coordinator killed in the writing phase: its worker leaves; the same command again ends with the same tree, and nothing of the killed pass is left', async () => {
      const id = nextId();
      const out = path.join(group, 'kill-coordinator');
      const prefix = keyPrefix(id);
      const command = ['crawl', ...args, ...shared(id, out), '-q'];
      const coordinator = start(command);
      const helper = elsewhere(worker(id, ['-c', '4']));
      await until(async () => (await client.hget(`${prefix}meta`, 'fin')) !== null, 180_000); // a bound on a hang, as above
      const left = /** @type {string} */ (await client.hget(`${prefix}meta`, 'fin'));
      coordinator.child.kill('SIGKILL');
      await coordinator.done;
      expect((await helper.done).code).toBe(0);
      expect((await run(command)).code).toBe(0);
      expect(await treeDigest(out)).toEqual(baseline);
      expect(await manifestOf(out)).toBe(await manifestOf(one));
      expect(await client.keys(`${prefix}f:*`)).toEqual([]);
      expect(await readdir(path.join(out, '.prerender', 'blobs', 'finish'))).not.toContain(`${left}.names`);
    });
  });

  it('a 429 with Retry-After holds its origin back in every process, not only in the one that got it', async () => {
    /** @type {{ path: string, at: number, status: number }[]} */
    const log = [];
    let refused = false;
    /** @type {(() => void)[] | null} the answers held from the 429 until the test has seen the backoff in Redis */
    let held = null;
    const PAGES = 40;
    const server = http.createServer((request, response) => {
      const at = Date.now();
      const target = request.url ?? '/';
      if (target === '/p3' && !refused) {
        refused = true;
        held = [];
        log.push({ path: target, at, status: 429 });
        response.writeHead(429, { 'retry-after': '2', 'content-type': 'text/plain' }).end('slow down');
        return;
      }
      log.push({ path: target, at, status: 200 });
      const body = target === '/'
        ? `<html><body>${Array.from({ length: PAGES }, (_, i) => `<a href="/p${i}">${i}</a>`).join('')}</body></html>`
        : `<html><body><a href="/">home</a> ${target}</body></html>`;
      const answer = () => { setTimeout(() => response.writeHead(200, { 'content-type': 'text/html' }).end(body), 50); };
      if (held) held.push(answer);
      else answer();
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    const origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
    const client = await connectRedis(redis.url, { timeoutSeconds: 5 });
    try {
      const id = nextId();
      const prefix = keyPrefix(id);
      const out = path.join(dir, 'backoff');
      const crawling = Promise.all([
        run(['crawl', `${origin}/`, ...shared(id, out), '-q', '-c', '2', '--json']),
        run(worker(id, ['-c', '2'])),
      ]);
      // Nothing is answered from the 429 until the backoff is in Redis. Then the URLs already taken (asked for,
      // or leased and not yet asked for) may still be asked for; no other until the backoff ends, whichever
      // process takes it, however slow the machine.
      await until(async () => Number(await client.hget(`${prefix}cnt`, 'backoffs')) >= 1, 120_000);
      const endsAt = Math.max(...Object.values(await client.hgetall(`${prefix}onext`)).map(Number));
      const taken = new Set([...log.map((entry) => entry.path), ...Object.keys(await client.hgetall(`${prefix}lease`)).map((key) => new URL(key).pathname)]);
      const answers = held ?? [];
      held = null;
      for (const answer of answers) answer();
      const results = await crawling;
      expect(results.map((result) => result.code)).toEqual([0, 0]);
      expect(JSON.parse(results[0].stdout).pages).toBe(PAGES + 1);
      const refusal = /** @type {{ at: number }} */ (log.find((entry) => entry.status === 429));
      expect(endsAt - refusal.at).toBeGreaterThanOrEqual(1900);
      expect(log.filter((entry) => entry.at < endsAt && !taken.has(entry.path))).toEqual([]);
      expect(log.filter((entry) => entry.at >= endsAt).length).toBeGreaterThan(0); // the crawl went on past it
      const retried = /** @type {{ at: number }} */ (log.find((entry) => entry.path === '/p3' && entry.status === 200));
      expect(retried.at - refusal.at).toBeGreaterThanOrEqual(1900);
      const status = JSON.parse((await run(['status', '--frontier', redis.url, '--crawl-id', id, '--json'])).stdout);
      expect(status.backoffs).toBe(1);
    } finally {
      await client.quit();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

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
  });

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
  });

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
  });

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
  });
});
