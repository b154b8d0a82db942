// @ts-check
/**
 * How a shared crawl's processes meet a Redis that refuses them or stops
 * answering, against real redis-servers started here (on 127.0.0.1, nothing
 * saved): a database number Redis refuses, credentials it refuses, a Redis
 * stopped (SIGSTOP) without closing its connections, and which processes
 * `prerender status` counts as alive. Every case is exit 2 with one line,
 * never a password. Skipped outside CI without redis-server; in CI it must run.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAVE_REDIS, REDIS_SERVER, freePort, startRedis } from './helpers/redis.js';
import { startCli, until } from './helpers/processes.js';
import { useTestDir } from './helpers/fixtures.js';
import { startOrigin } from '../bench/origin.js';
import { startSite } from '../fixtures/site.js';
import { connectRedis, keyPrefix } from '../lib/distributed/connection.js';
import { formatStatus, readStatus } from '../lib/distributed/status.js';

let dir = '';
/** @type {Awaited<ReturnType<typeof startRedis>>} */
let plain;
/** @type {Awaited<ReturnType<typeof ownRedis>>} */
let locked;
/** @type {import('node:http').Server} */
let shopServer;
let shop = '';

const PASSWORD = 'RightPW-1';
/** @param {string} url the URL of a server started here, without its password */
const base = (url) => url.replace(/^redis:\/\/(?:[^@/]*@)?/, '').replace(/\/\d+$/, ''); // 127.0.0.1:port
const shopArgs = () => [`${shop}/st/dir.asp?Start=1&Count=20`, '-i', '/st/dir.asp', '/st/product.asp', '-c', '2'];
/** @param {string[]} args */
const run = (args) => startCli(args, { limitMs: 60_000, cwd: dir }).done;
/** @param {string} text */
const lines = (text) => text.trim().split('\n');

/** @param {number} port @returns {Promise<boolean>} */
function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(500, () => { socket.destroy(); resolve(false); });
    socket.on('error', () => resolve(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      socket.destroy();
      resolve(/^(\+PONG|-NOAUTH)/.test(data.toString())); // answering, with or without a password set
    });
  });
}

/**
 * A redis-server of this file's own (the helper's waits for a PONG, which a
 * server with a password does not give), whose process a test may stop
 * (SIGSTOP); `stop()` wakes and kills it.
 * @param {string[]} [more] more arguments (--requirepass)
 */
async function ownRedis(more = []) {
  const port = await freePort();
  const child = spawn(/** @type {string} */ (REDIS_SERVER), ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', ...more], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await exited;
  };
  try {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      return ping(port);
    }, 10_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { child, url: `redis://127.0.0.1:${port}/0`, stop };
}

describe.skipIf(!HAVE_REDIS)('a Redis that refuses or stops answering', () => {
  useTestDir('prerender-redis-conn-', (made) => { dir = made; });

  beforeAll(async () => {
    plain = await startRedis();
    locked = await ownRedis(['--requirepass', PASSWORD]);
    shopServer = await startOrigin({ products: 60, count: 20, port: 0, host: '127.0.0.1', latencyMs: 40 });
    shop = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (shopServer.address()).port}`;
  });
  afterAll(async () => {
    await plain?.stop();
    await locked?.stop();
    shopServer?.closeAllConnections();
    await new Promise((resolve) => (shopServer ? shopServer.close(resolve) : resolve(undefined)));
  });

  it('a database number Redis refuses (/16, /99 of 16) is exit 2 with "Redis refused database N", never database 0 in its place', async () => {
    const at = base(plain.url);
    const [status, coordinator, worker] = await Promise.all([
      run(['status', '--frontier', `redis://${at}/16`, '--crawl-id', 'db16']),
      run(['crawl', ...shopArgs(), '-o', path.join(dir, 'out'), '--frontier', `redis://${at}/99`, '--crawl-id', 'db99', '-q']),
      run(['worker', '--frontier', `redis://:${'x'}@${at}/16`, '--crawl-id', 'db16', '-q', '--wait', '1']),
    ]);
    for (const [result, db] of /** @type {const} */ ([[status, 16], [coordinator, 99], [worker, 16]])) {
      expect(result.code, result.stderr).toBe(2);
      expect(lines(result.stderr).filter((line) => !line.startsWith('[WARN]'))).toHaveLength(1);
      expect(result.stderr).toMatch(new RegExp(`Redis refused database ${db} of redis://(:\\*\\*\\*@)?127\\.0\\.0\\.1:\\d+/${db}: ERR DB index is out of range`));
    }
    const client = await connectRedis(plain.url, { timeoutSeconds: 5 });
    try {
      expect(await client.exists(`${keyPrefix('db99')}config`, `${keyPrefix('db99')}meta`)).toBe(0); // nothing stored in database 0
    } finally {
      await client.quit();
    }
  });

  it('credentials Redis refuses are said so at once (exit 2, never the password); status never names --frontier-timeout', async () => {
    const at = base(locked.url);
    const [wrong, none, query, user, worker] = await Promise.all([
      run(['status', '--frontier', `redis://:WrongPW@${at}/0`, '--crawl-id', 'pw']),
      run(['status', '--frontier', `redis://${at}/0`, '--crawl-id', 'pw']),
      run(['status', '--frontier', `redis://${at}/0?password=WrongPW`, '--crawl-id', 'pw']),
      run(['crawl', ...shopArgs(), '-o', path.join(dir, 'out'), '--frontier', `redis://alice:WrongPW@${at}/0`, '--crawl-id', 'pw', '-q', '--frontier-timeout', '30']),
      run(['worker', '--frontier', `redis://:WrongPW@${at}/3`, '--crawl-id', 'pw', '-q', '--frontier-timeout', '30']),
    ]);
    // Nothing listens there: status waits its own bound (10 s; 1 s here, through the same call), and names no option it does not have.
    const unreachable = await connectRedis(`redis://:WrongPW@127.0.0.1:${await freePort()}/0`, { timeoutSeconds: 1, timeoutFlag: '' }).then(() => null, (error) => error);
    for (const [result, shown] of /** @type {const} */ ([[wrong, ':***@'], [none, ''], [query, ''], [user, 'alice:***@'], [worker, ':***@']])) {
      expect(result.code, result.stderr).toBe(2);
      expect(lines(result.stderr)).toHaveLength(1);
      expect(result.stderr).toContain(`Redis refused the credentials for redis://${shown}${at}/`);
      expect(result.stderr).toMatch(/WRONGPASS|NOAUTH/);
      expect(result.stderr).not.toContain('WrongPW');
      expect(result.stderr).not.toMatch(/cannot reach|frontier-timeout/);
    }
    expect(query.stderr).toContain('?password=***');
    expect(unreachable?.message).toMatch(/cannot reach the frontier redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\/0 \(ECONNREFUSED\) within 1 s/);
    expect(unreachable?.message).not.toContain('--frontier-timeout');
    expect(unreachable?.message).not.toContain('WrongPW');
  });

  it('wrong credentials do not wait for --frontier-timeout', async () => {
    // An hour of --frontier-timeout: a process that waited for it would be killed at run()'s 60 s (no exit code).
    const result = await run(['worker', '--frontier', `redis://:WrongPW@${base(locked.url)}/0`, '--crawl-id', 'pw', '-q', '--frontier-timeout', '3600']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('Redis refused the credentials');
  });

  it('Redis stopped (SIGSTOP) without closing the connection: the coordinator and a worker exit 2 past --frontier-timeout; then status lists neither as alive', async () => {
    const redis = await ownRedis();
    try {
      const shared = ['--frontier', redis.url, '--crawl-id', 'stopped', '--frontier-timeout', '2'];
      const coordinator = startCli(['crawl', ...shopArgs(), '-o', path.join(dir, 'stopped'), ...shared, '-q', '--rate', '20', '--lease-timeout', '2000'], { limitMs: 60_000 });
      const worker = startCli(['worker', ...shared, '-q'], { limitMs: 60_000 });
      const client = await connectRedis(redis.url, { timeoutSeconds: 5 });
      try {
        await until(async () => (await client.zcard(`${keyPrefix('stopped')}workers`)) >= 2, 20_000); // both are crawling
        expect((await readStatus(client, 'stopped'))?.workers).toHaveLength(2);
        // A command that runs long, but less than the bound, is not cut off.
        const slow = await connectRedis(redis.url, { timeoutSeconds: 3 });
        try {
          const busy = "local t = redis.call('TIME'); local s = t[1] * 1000 + math.floor(t[2] / 1000); local n = 0; repeat n = n + 1; t = redis.call('TIME') until t[1] * 1000 + math.floor(t[2] / 1000) - s >= 1000; return n";
          expect(await slow.eval(busy, 0)).toBeGreaterThan(0);
        } finally {
          await slow.quit();
        }
      } finally {
        client.disconnect();
      }
      redis.child.kill('SIGSTOP');
      const stoppedAt = Date.now();
      const results = await Promise.all([coordinator.done, worker.done]);
      const waited = Date.now() - stoppedAt;
      for (const result of results) {
        expect(result.code, result.stderr).toBe(2);
        expect(lines(result.stderr)).toHaveLength(1);
        expect(result.stderr).toMatch(/the frontier redis:\/\/127\.0\.0\.1:\d+\/0 did not answer for more than --frontier-timeout 2 s/);
      }
      expect(waited).toBeLessThan(10_000); // 2 s, and the way out does not wait a bound per command
      redis.child.kill('SIGCONT');
      // Both died when Redis was lost. Redis, woken, still runs the heartbeats they sent while it was
      // stopped; those lapse after half the --lease-timeout (1 s), as the crawl itself counts them.
      const client2 = await connectRedis(redis.url, { timeoutSeconds: 5 });
      try {
        await until(async () => (await readStatus(client2, 'stopped'))?.workers.length === 0, 30_000);
      } finally {
        await client2.quit();
      }
      const status = await run(['status', '--frontier', redis.url, '--crawl-id', 'stopped', '--json']);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout).workers).toEqual([]);
    } finally {
      await redis.stop();
    }
  });

  it('status counts a process alive as the crawl does: a heartbeat within half of the stored --lease-timeout', async () => {
    const client = await connectRedis(plain.url, { timeoutSeconds: 5 });
    try {
      const [seconds, micros] = await client.time();
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      const info = JSON.stringify({ role: 'worker', host: 'h', pid: 1, pages: 3 });
      for (const [id, leaseTimeout] of /** @type {const} */ ([['live-2000', 2000], ['live-default', undefined]])) {
        const prefix = keyPrefix(id);
        await client.set(`${prefix}config`, JSON.stringify({ format: 'prerender-crawl', version: 'x', roots: [], listed: [], options: leaseTimeout ? { leaseTimeout } : {} }));
        await client.hset(`${prefix}meta`, 'phase', 'crawl');
        await client.zadd(`${prefix}workers`, now - 100, 'fresh', now - 1_500, 'lapsed-2s', now - 20_000, 'lapsed-30s', 0, 'left');
        await client.hset(`${prefix}winfo`, 'fresh', info, 'lapsed-2s', info, 'lapsed-30s', info);
      }
      const short = /** @type {import('../lib/distributed/status.js').CrawlStatus} */ (await readStatus(client, 'live-2000'));
      expect(short.workers.map((worker) => worker.id)).toEqual(['fresh']);
      expect(short.workers[0]).toMatchObject({ role: 'worker', pages: 3 });
      expect(short.workers[0].heartbeatAgeMs).toBeGreaterThanOrEqual(100);
      expect(formatStatus(short)).toContain('workers alive: 1\n');
      // No --lease-timeout stored: its default, 30 s (dead after 15 s).
      const byDefault = /** @type {import('../lib/distributed/status.js').CrawlStatus} */ (await readStatus(client, 'live-default'));
      expect(byDefault.workers.map((worker) => worker.id).sort()).toEqual(['fresh', 'lapsed-2s']);
    } finally {
      await client.quit();
    }
  });

  it('status of a finished crawl gives the crawl\'s own counts: failures and redirects, the redirect loops found at the completion barrier too', async () => {
    const site = await startSite();
    try {
      const id = 'final-counts';
      const crawl = await run(['crawl', site.url('/redir/index.asp'), site.url('/errors/index.asp'), '-i', '/redir/', '/errors/', '--retries', '0', '-o', path.join(dir, 'final'),
        '--frontier', plain.url, '--crawl-id', id, '--json', '-q']);
      expect(crawl.code, crawl.stderr).toBe(1);
      const summary = JSON.parse(crawl.stdout);
      const loops = summary.failures.filter((/** @type {{ code?: string }} */ failure) => failure.code === 'REDIRECT_LOOP').length;
      expect(loops).toBe(2);
      const status = await run(['status', '--frontier', plain.url, '--crawl-id', id, '--json']);
      expect(status.code, status.stderr).toBe(0);
      const shown = JSON.parse(status.stdout);
      expect(shown).toMatchObject({ phase: 'finished', failed: summary.failed, redirects: summary.redirects });
      expect(shown.topErrors).toContainEqual({ code: 'REDIRECT_LOOP', count: loops });
    } finally {
      await site.close();
    }
  });
});
