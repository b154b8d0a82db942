// @ts-check
/**
 * A crawl started with --render, shared through a real redis-server: the
 * `prerender worker` processes render the pages they take in their own
 * Chromium, with their own number of tabs, and the tree is the one a single
 * rendering process writes. Real processes, a real browser and a real Redis;
 * the processes render in one running browser (--browser-endpoint), but a worker whose own browser is the subject;
 * skipped outside CI when one is missing, in CI they must run.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAVE_REDIS, IN_CI, startRedis } from './helpers/redis.js';
import { manifestOf, startCli, treeDigest, until } from './helpers/processes.js';
import { useTestDir } from './helpers/fixtures.js';
import { findBrowser } from '../lib/render/browser.js';
import { useSharedBrowser } from './helpers/render.js';
import { startSpaShop } from '../fixtures/spa-shop.js';
import { connectRedis, keyPrefix } from '../lib/distributed/connection.js';

/** @returns {string | null} */
function installedBrowser() {
  try {
    return findBrowser({});
  } catch {
    return null;
  }
}
const HAVE_BROWSER = installedBrowser() !== null || IN_CI;

/** A prerender process, given longer than usual: it starts a browser. @param {string[]} args */
const cli = (args) => startCli(args, { limitMs: 80_000 });

/**
 * The processes whose parent is `pid` (from /proc).
 * @param {number} pid
 */
function childrenOf(pid) {
  /** @type {number[]} */
  const children = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/** Whether a process still runs (a zombie waiting for its reaper does not). @param {number} pid */
function running(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * The manifest without the times a render took, nor the requests it cut off (the page is read
 * once the app says it is ready: whether its image request had begun by then varies from run to run).
 * @param {string} out
 */
async function manifestWithoutTimes(out) {
  return (await manifestOf(out)).replace(/"renderMs":\d+/g, '"renderMs":0').replace(/"aborted":\{[^}]*\}/g, '"aborted":{}');
}

describe.skipIf(!HAVE_REDIS || !HAVE_BROWSER)('a rendered crawl shared through Redis', () => {
  /** @type {Awaited<ReturnType<typeof startRedis>>} */
  let redis;
  /** @type {Awaited<ReturnType<typeof startSpaShop>>} */
  let shop;
  // A Chromium start costs more than these crawls' pages.
  const browser = useSharedBrowser();
  let dir = '';
  useTestDir('prerender-redis-render-', (made) => { dir = made; });
  beforeAll(async () => {
    redis = await startRedis();
    shop = await startSpaShop({ products: 30, count: 5 });
  });
  afterAll(async () => {
    await redis?.stop();
    await shop?.close();
  });
  const inShared = () => ['--browser-endpoint', browser().endpoint];

  // Read once the app says so (data-ready, set when it has built the page), not after a quiet
  // network: a machine under load can leave the network quiet longer than a short window while
  // the page's script has yet to run, and every process must read the same page.
  const crawlArgs = () => [`${shop.origin}/st/dir.asp`, '-i', '/st/dir.asp', '/st/product.asp', '--render', '--render-wait', 'selector:[data-ready]', '--retries', '0'];
  /** @param {string} id @param {string} out */
  const sharedArgs = (id, out) => ['--frontier', redis.url, '--crawl-id', id, '-o', out, '--lease-timeout', '10000'];

  it('workers render the pages they take, with their own tabs: the same tree and manifest as one rendering process, each page fetched once', async () => {
    await renderedAlike(inShared());
  });

  /** @param {string[]} own each process's browser options */
  async function renderedAlike(own) {
    const one = path.join(dir, 'one');
    const alone = await cli(['crawl', ...crawlArgs(), '-o', one, '--render-concurrency', '2', ...own]).done;
    expect(alone.code).toBe(0);
    shop.hits.clear();
    const out = path.join(dir, 'shared');
    const [coordinator, worker] = await Promise.all([
      cli(['crawl', ...crawlArgs(), ...sharedArgs('render-1', out), '--render-concurrency', '1', ...own]).done,
      cli(['worker', '--frontier', redis.url, '--crawl-id', 'render-1', '--render-concurrency', '2', ...own]).done,
    ]);
    expect(coordinator.code, coordinator.stderr).toBe(0);
    expect(worker.code, worker.stderr).toBe(0);
    // The worker took a share and rendered every page it took (the shells have no product links before their script runs).
    const [, fetched, rendered] = /** @type {RegExpMatchArray} */ (worker.stdout.match(/^worker: (\d+) pages fetched \((\d+) rendered\)/m) ?? [0, 0, 0]);
    expect(Number(fetched)).toBeGreaterThan(0);
    expect(Number(rendered)).toBe(Number(fetched));
    expect(await treeDigest(out)).toEqual(await treeDigest(one));
    // What every process's pages referred to, not only the coordinator's.
    const requisites = (/** @type {string} */ text) => text.match(/^\d+ stylesheet\/script\/image references/m)?.[0];
    expect(requisites(alone.stdout)).toBeDefined();
    expect(requisites(coordinator.stdout)).toBe(requisites(alone.stdout));
    expect(await manifestWithoutTimes(out)).toBe(await manifestWithoutTimes(one));
    const manifest = JSON.parse(await manifestOf(out));
    expect(manifest.pages).toHaveLength(36); // 6 directory pages, 30 products
    expect(manifest.pages.every((/** @type {{ rendered?: boolean }} */ page) => page.rendered === true)).toBe(true);
    for (let n = 1; n <= 30; n++) expect(shop.hits.get(`GET /st/product.asp?SKUSetID=${n}`), `product ${n}`).toBe(1);
  }

  it('Ctrl-C in a rendering worker while it holds pages: it exits 130 at once, its browser with it, its pages go back; the coordinator writes the whole tree', async () => {
    const id = 'render-int';
    const out = path.join(dir, 'interrupted');
    const client = await connectRedis(redis.url, { timeoutSeconds: 5 });
    try {
      const coordinator = cli(['crawl', ...crawlArgs(), ...sharedArgs(id, out), '--render-concurrency', '1', '-q', ...inShared()]);
      // Its own browser: the one that must go with it.
      const worker = cli(['worker', '--frontier', redis.url, '--crawl-id', id, '--render-concurrency', '2']);
      const pid = /** @type {number} */ (worker.child.pid);
      // The worker holds leased pages (it renders them): its set of leases in Redis is not empty.
      const prefix = keyPrefix(id);
      /** @type {string | undefined} */
      let me;
      await until(async () => {
        me ??= (await client.zrange(`${prefix}workers`, 0, -1)).find((member) => member.includes(`:${pid}:`));
        return me !== undefined && (await client.scard(`${prefix}wl:${me}`)) > 0;
      }, 60_000);
      const browsers = childrenOf(pid);
      expect(browsers.length).toBeGreaterThan(0); // its Chromium
      const stoppedAt = Date.now();
      worker.child.kill('SIGINT');
      const stopped = await worker.done;
      expect(stopped.code, stopped.stderr).toBe(130);
      expect(Date.now() - stoppedAt).toBeLessThan(15_000);
      for (const browser of browsers) expect(running(browser), `browser process ${browser}`).toBe(false);
      // Its leases were handed back, not left to lapse: nothing of it is left leased.
      expect(await client.scard(`${prefix}wl:${me}`)).toBe(0);
      const finished = await coordinator.done;
      expect(finished.code, finished.stderr).toBe(0);
      const manifest = JSON.parse(await manifestOf(out));
      expect(manifest.pages).toHaveLength(36);
      expect(manifest.pages.every((/** @type {{ rendered?: boolean }} */ page) => page.rendered === true)).toBe(true);
      expect(manifest.errors).toEqual([]);
    } finally {
      await client.quit();
    }
  });

  it('a worker that cannot find its browser exits 2 before it takes anything; the crawl is finished without it', async () => {
    const out = path.join(dir, 'no-browser');
    const coordinator = cli(['crawl', ...crawlArgs(), ...sharedArgs('render-2', out), '--render-concurrency', '2', '-q', ...inShared()]);
    const worker = await cli(['worker', '--frontier', redis.url, '--crawl-id', 'render-2', '--browser', path.join(dir, 'no-such-chromium')]).done;
    expect(worker.code).toBe(2);
    expect(worker.stderr).toMatch(/no-such-chromium/);
    expect(worker.stdout).toBe('');
    expect((await coordinator.done).code).toBe(0);
    expect(JSON.parse(await manifestOf(out)).pages).toHaveLength(36);
  });

  it('another render configuration under the same crawl id is refused with what differs', async () => {
    const out = path.join(dir, 'mismatch');
    // One page is crawl enough to store a configuration.
    const page = `${shop.origin}/st/product.asp?SKUSetID=1`;
    const args = [page, '-i', page, '--render', '--render-wait', 'selector:[data-ready]', '--retries', '0', ...sharedArgs('render-3', out), ...inShared()];
    expect((await cli(['crawl', ...args, '-q']).done).code).toBe(0);
    const again = await cli(['crawl', ...args, '--render-wait', 'selector:#app a']).done;
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('--render-wait');
  });
});
