// @ts-check
/**
 * `prerender capacity` when the origin breaks mid-step (it starts failing,
 * or slowing), when the user presses Ctrl-C, and when the origin is not
 * this machine: the step is over capacity, the run stops, and no load goes
 * on once the command has returned. The origin is the benchmark shop's
 * handler in this process, with a switch; the profile has dynamic
 * operations only (no static tier to wait for), so each run takes seconds.
 */
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHandler } from '../bench/origin.js';
import { run } from '../lib/cli/index.js';
import { sink } from './helpers/cli.js';
import { startCli, until } from './helpers/processes.js';

/** @typedef {'ok' | 'fail' | 'slow'} Mode */

/**
 * The shop, whose answers turn to 500s or to slow ones at the test's word.
 * @returns {Promise<{ url: string, requests: () => number, connections: () => Promise<number>, set: (mode: Mode) => void, close: () => Promise<void> }>}
 */
async function startSwitchableShop() {
  const handler = createHandler({ products: 20, count: 10 });
  /** @type {Mode} */
  let mode = 'ok';
  let requests = 0;
  /** @type {Set<NodeJS.Timeout>} */
  const timers = new Set();
  const server = http.createServer((req, res) => {
    requests++;
    if (mode === 'fail') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('down');
    } else if (mode === 'slow') {
      const timer = setTimeout(() => { timers.delete(timer); handler(req, res); }, 2000);
      timers.add(timer);
    } else {
      handler(req, res);
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    connections: () => new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count)))),
    set: (next) => { mode = next; },
    close: () => new Promise((resolve) => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * No load after the command returned: the origin's connections all close,
 * and no request arrives in the next 300 ms.
 * @param {Awaited<ReturnType<typeof startSwitchableShop>>} shop
 */
async function expectNoMoreLoad(shop) {
  await until(async () => (await shop.connections()) === 0, 30_000);
  const seen = shop.requests();
  await new Promise((resolve) => { setTimeout(resolve, 300); });
  expect(shop.requests()).toBe(seen);
  expect(await shop.connections()).toBe(0);
}

describe('prerender capacity: faults and safety', () => {
  let dir = '';
  /** @type {Awaited<ReturnType<typeof startSwitchableShop>>} */
  let shop;
  /** @type {string[]} */
  let common = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-capacity-fault-'));
    // A tree with no page: the profile's operations are all dynamic.
    await writeFile(path.join(dir, 'prerender-manifest.json'), JSON.stringify({ version: 1, generatedAt: new Date().toISOString(), roots: [], scope: {}, placeholderMode: 'filter', pages: [] }));
    await writeFile(path.join(dir, 'profile.json'), JSON.stringify({
      name: 'cart and checkout', thinkTime: '1s',
      operations: [{ name: 'add to cart', weight: 3, dynamic: '/st/cart.asp?add=1' }, { name: 'checkout', weight: 1, dynamic: ['/st/checkout.asp'] }],
    }));
    common = ['--profile', 'profile.json', '--operation-duration', '300ms', '--max-rps', '50', '--steps', '2,4'];
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    shop = await startSwitchableShop();
  });
  afterEach(async () => {
    await shop.close();
  });

  /**
   * The command in this process, at the shop (a later --origin in `args` wins);
   * `onLine` hears each progress line as it is written.
   * @param {string[]} args
   * @param {(line: string) => void} [onLine]
   */
  async function capacity(args, onLine) {
    const stdout = sink();
    /** @type {string[]} */
    const lines = [];
    const stderr = { write: (/** @type {unknown} */ chunk) => { lines.push(String(chunk)); onLine?.(String(chunk)); return true; } };
    const code = await run(['capacity', '.', '--origin', shop.url, ...args], {
      stdout: /** @type {any} */ (stdout), stderr: /** @type {any} */ (stderr), env: {}, cwd: dir,
    });
    return { code, stdout: stdout.text, stderr: lines.join('') };
  }

  it('an origin that starts failing mid-step: the step is over capacity, the run stops at once, exit 1', async () => {
    /** @type {NodeJS.Timeout | undefined} */
    let timer;
    const started = performance.now();
    const result = await capacity([...common, '--step-duration', '10m', '--latency-target', 'p95=5s', '--json'], (line) => {
      if (line.startsWith('dynamic tier: 2 shoppers (')) timer = setTimeout(() => shop.set('fail'), 300);
    });
    clearTimeout(timer);
    expect(result.code, result.stderr).toBe(1);
    const report = JSON.parse(result.stdout);
    const steps = report.tiers.dynamic.steps;
    expect(steps).toHaveLength(1); // the run stopped: 4 shoppers never came
    expect(steps[0].errors).toBeGreaterThan(0);
    expect(steps[0].over.join()).toMatch(/error/);
    expect(report.tiers.dynamic.capacityShoppers).toBe(0);
    expect(report.stoppedBecause).toMatch(/dynamic tier, 2 shoppers: \d+ × HTTP 500/);
    // The first error stopped the step: far sooner than its 10 min.
    expect(performance.now() - started).toBeLessThan(60_000);
    // No --origin-pid: the CPU is unknown, not guessed.
    expect(report.tiers.dynamic.cpuMsPerRequest).toBeNull();
    expect(steps[0].cpuPercent).toBeNull();
    expect(report.summary.shoppersPerServer).toEqual({ before: null, after: null });
    await expectNoMoreLoad(shop);
  });

  it('an origin that slows down: the step is over the latency target, exit 1, and its requests end with the command', async () => {
    const result = await capacity([...common, '--step-duration', '3s', '--latency-target', 'p95=1s'], (line) => {
      if (line.startsWith('dynamic tier: 2 shoppers (')) shop.set('slow');
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^ {2}2 .* over$/m);
    expect(result.stdout).toMatch(/capacity: 0 shoppers \(2: .*(p95 \d[\d,]* ms > 1000 ms|answered of 2 offered)/);
    expect(result.stdout).not.toMatch(/^ {2}4 /m);
    await expectNoMoreLoad(shop);
  });

  it('Ctrl-C stops the load at once: exit 130, nothing sent after', async () => {
    const cli = startCli(['capacity', '.', '--origin', shop.url, ...common, '--step-duration', '10m'], { cwd: dir, limitMs: 90_000 });
    let stderr = '';
    cli.child.stderr?.on('data', (chunk) => { stderr += chunk; });
    await until(() => stderr.includes('dynamic tier: 2 shoppers ('), 20_000);
    const sent = performance.now();
    cli.child.kill('SIGINT');
    const done = await cli.done;
    expect(done.code, done.stderr).toBe(130);
    expect(performance.now() - sent).toBeLessThan(60_000); // not the step's 10 min
    expect(done.stdout).toMatch(/Interrupted/);
    await expectNoMoreLoad(shop);
  });

  it('refuses an origin that is not this machine without --i-own-this-site, before any request', async () => {
    const result = await capacity(['--origin', 'http://192.0.2.10:8080', ...common]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--origin http:\/\/192\.0\.2\.10:8080 is not this machine.*--i-own-this-site/);
    expect(shop.requests()).toBe(0);
  });
});
