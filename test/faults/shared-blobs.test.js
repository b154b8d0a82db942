// @ts-check
/**
 * A crawl shared through a real redis-server whose worker does not see the crawl's blob directory: it would stage
 * bodies where the coordinator never finds them. The worker proves it sees the directory (the coordinator's probe)
 * before it takes a page, or exits 2 with one line naming the directory to share; the coordinator's crawl is whole.
 * Skipped outside CI without redis-server; in CI it must run.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAVE_REDIS, startRedis } from '../helpers/redis.js';
import { manifestOf, startCli, treeDigest } from '../helpers/processes.js';
import { useTestDir } from '../helpers/fixtures.js';
import { startOrigin } from '../../bench/origin.js';

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis;
/** @type {import('node:http').Server} */
let shopServer;
let shop = '';
let requests = 0;
let dir = '';
let ids = 0;

const LIMIT = { limitMs: 100_000 };
const shopArgs = () => [`${shop}/st/dir.asp?Start=1&Count=20`, '-i', '/st/dir.asp', '/st/product.asp', '-c', '2', '-q'];
/** @param {string} id @param {string} out */
const coordinator = (id, out) => startCli(['crawl', ...shopArgs(), '--frontier', redis.url, '--crawl-id', id, '-o', out, '--lease-timeout', '2000'], LIMIT);
/** @param {string} id @param {string} blobs */
const worker = (id, blobs) => startCli(['worker', '--frontier', redis.url, '--crawl-id', id, '-q', '-c', '4', '--blobs', blobs], LIMIT);
const escape = (/** @type {string} */ text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe.skipIf(!HAVE_REDIS)('a shared crawl\'s blob directory', () => {
  useTestDir('prerender-blobs-', (made) => { dir = made; });
  /** @type {Promise<{ digest: Record<string, string>, manifest: string }> | undefined} */
  let baseOnce;
  /** What one process writes, crawled once by whichever test needs it first. */
  const base = () => (baseOnce ??= (async () => {
    const one = path.join(dir, 'one');
    expect((await startCli(['crawl', ...shopArgs(), '-o', one], LIMIT).done).code).toBe(0);
    return { digest: await treeDigest(one), manifest: await manifestOf(one) };
  })());

  beforeAll(async () => {
    redis = await startRedis();
    shopServer = await startOrigin({ products: 60, count: 20, port: 0, host: '127.0.0.1', latencyMs: 40, onRequest: () => { requests++; } });
    shop = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (shopServer.address()).port}`;
  });
  afterAll(async () => {
    await redis?.stop();
    shopServer?.closeAllConnections();
    await new Promise((resolve) => shopServer ? shopServer.close(resolve) : resolve(undefined));
  });

  it('a worker whose --blobs is not the coordinator\'s exits 2 before taking a page, naming the directory to share; the coordinator\'s crawl is whole', async () => {
    const baseline = await base();
    const id = `blobs-${++ids}`;
    const out = path.join(dir, 'out');
    const shared = path.join(out, '.prerender', 'blobs');
    const elsewhere = path.join(dir, 'elsewhere');
    // A directory holding a probe of this crawl id that is not its coordinator's (another crawl's leftover).
    const stale = path.join(dir, 'stale');
    await mkdir(stale);
    await writeFile(path.join(stale, `probe-${id}`), 'another crawl\'s token\n');
    // The workers start first: they join as soon as the crawl exists.
    const wrong = [worker(id, elsewhere), worker(id, stale)];
    const crawl = coordinator(id, out);
    for (const [i, { done }] of wrong.entries()) {
      const result = await done;
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(new RegExp(`^prerender: this worker does not see the blob directory of crawl "${id}": ${escape([elsewhere, stale][i])} holds no probe of it; share the coordinator's ${escape(shared)} with this machine and give its path here with --blobs\\n$`));
    }
    // Nothing staged by them: a worker makes its blob directory as it joins.
    expect(existsSync(elsewhere)).toBe(false);
    expect(await readdir(stale)).toEqual([`probe-${id}`]);
    const result = await crawl.done;
    expect(result.code, result.stderr).toBe(0);
    expect(await treeDigest(out)).toEqual(baseline.digest);
    expect(await manifestOf(out)).toBe(baseline.manifest);
  });

  it('a worker given the coordinator\'s blob directory by another path (a link) joins: the same tree as one process', async () => {
    const baseline = await base();
    const id = `blobs-${++ids}`;
    const out = path.join(dir, 'linked');
    const link = path.join(dir, 'mount');
    await mkdir(path.join(out, '.prerender', 'blobs'), { recursive: true });
    await symlink(path.join(out, '.prerender', 'blobs'), link);
    const helper = worker(id, link);
    const crawl = coordinator(id, out);
    const [joined, result] = await Promise.all([helper.done, crawl.done]);
    expect(joined.code, joined.stderr).toBe(0);
    expect(result.code, result.stderr).toBe(0);
    expect(await treeDigest(out)).toEqual(baseline.digest);
    expect(await manifestOf(out)).toBe(baseline.manifest);
  });

  it('a coordinator whose OUT/.prerender/blobs is a file names it, exit 2, before any request', async () => {
    const out = path.join(dir, 'blocked');
    await mkdir(path.join(out, '.prerender'), { recursive: true });
    await writeFile(path.join(out, '.prerender', 'blobs'), 'not a directory');
    const before = requests;
    const result = await coordinator(`blobs-${++ids}`, out).done;
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`prerender: cannot use ${path.join(out, '.prerender', 'blobs')}: it is a regular file, where prerender keeps a shared crawl's blob directory (a directory); remove it, or crawl with --full to start over\n`);
    expect(requests).toBe(before);
  });
});
