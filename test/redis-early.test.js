// @ts-check
/**
 * Pages written while a shared crawl runs (lib/engine/early.js with the feed
 * of distributed/scripts.js): the coordinator renders every process's pages
 * early, from what the feed in Redis brings and the shared blob directory,
 * and the tree and the manifest are those of one process that writes
 * everything at the end, byte for byte. A real redis-server and a real
 * `prerender worker` process; skipped outside CI without redis-server, in
 * CI they must run.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crawl } from '../lib/index.js';
import { startOrigin } from '../bench/origin.js';
import { startSite } from '../fixtures/site.js';
import { HAVE_REDIS, startRedis } from './helpers/redis.js';
import { startCli, until } from './helpers/processes.js';
import { connectRedis } from '../lib/distributed/connection.js';
import { edgeCaseOptions, snapshotTree, tempDirs } from './crawl-helpers.js';

const dirs = tempDirs();
let crawlIds = 0;

describe.skipIf(!HAVE_REDIS)('a shared crawl writes pages while it runs', () => {
  /** @type {Awaited<ReturnType<typeof startRedis>>} */
  let redis;
  beforeAll(async () => { redis = await startRedis(); });
  afterAll(async () => {
    await redis?.stop();
    await dirs.cleanup();
  });

  /**
   * One process writing at the end, then a coordinator (one request at a
   * time, early writes whatever its load) with a worker process (8 at a
   * time), which fetches most pages.
   * @param {Parameters<typeof crawl>[0]} options
   */
  async function both(options) {
    const common = { ...options, threads: 2, threadsFrom: 0, retryDelay: 0 };
    const alone = path.join(await dirs.make(), 'out');
    const late = await crawl({ ...common, out: alone, early: false });
    const out = path.join(await dirs.make(), 'out');
    const id = `early-${++crawlIds}`;
    const worker = startCli(['worker', '--frontier', redis.url, '--crawl-id', id, '-c', '8', '--wait', '30']);
    // The worker is up (connected, asking for the crawl every 25 ms) before the crawl starts: it takes most pages.
    const client = await connectRedis(redis.url, { timeoutSeconds: 5 });
    try {
      await until(async () => String(await client.client('LIST')).trim().split('\n').length >= 2, 30_000);
    } finally {
      await client.quit();
    }
    const result = await crawl({ ...common, out, early: 'always', frontier: redis.url, crawlId: id, concurrency: 1 });
    const helped = await worker.done;
    expect(helped.code, helped.stderr).toBe(0);
    const fetched = Number(/^worker: (\d+) pages fetched/m.exec(helped.stdout)?.[1]);
    return { late: { result: late, files: await snapshotTree(alone) }, early: { result, files: await snapshotTree(out) }, workerFetched: fetched };
  }

  it('the shop: the worker\'s pages too are written early, and the tree and manifest are one process\'s', async () => {
    const origin = await startOrigin({ products: 150, count: 50, port: 0, host: '127.0.0.1', latencyMs: 20 });
    try {
      const base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (origin.address()).port}`;
      const { late, early, workerFetched } = await both({ roots: [`${base}/st/dir.asp`], include: ['/st/dir.asp', '/st/product.asp'], placeholders: 'ssi' });
      expect(late.result.pages).toBe(153);
      expect(early.result.pages).toBe(153);
      // More pages taken from early writes than the coordinator fetched itself: the worker's came through the feed.
      expect(workerFetched).toBeGreaterThan(0);
      expect(early.result.threads.early).toBeGreaterThan(153 - workerFetched);
      expect(early.files).toEqual(late.files);
    } finally {
      await new Promise((resolve) => origin.close(resolve));
    }
  });

  it('name headers, collisions, unsafe names, redirects, <base>, windows-1252, price slots, CSS: the same tree', async () => {
    const site = await startSite();
    try {
      const { late, early } = await both(edgeCaseOptions(site));
      expect(Object.keys(late.files).length).toBeGreaterThan(20);
      expect(late.files['prerender-manifest.json']).toContain('NAME_COLLISION');
      expect(early.result.threads.early).toBeGreaterThan(0);
      // The site's redirect loop: failed in both, with the same message; which pages a shared
      // crawl lists as linking to its hops depends on which process fetched which hop when.
      const manifest = (/** @type {Record<string, string>} */ files) => files['prerender-manifest.json'].split('\n')
        .map((line) => (line.includes('"REDIRECT_LOOP"') ? line.replace(/"referrers":\[[^\]]*\]/, '"referrers":[]') : line)).join('\n');
      expect(manifest(late.files).match(/REDIRECT_LOOP/g)).toHaveLength(2);
      expect(manifest(early.files)).toBe(manifest(late.files));
      expect({ ...early.files, 'prerender-manifest.json': '' }).toEqual({ ...late.files, 'prerender-manifest.json': '' });
    } finally {
      await site.close();
    }
  });
});
