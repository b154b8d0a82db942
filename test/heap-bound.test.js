// @ts-check
/**
 * A crawling command's young generation stays at 8 MiB (lib/start.js,
 * heap.js): measured in a real crawl through bin/, worker threads and all,
 * against the same crawl run without the bound; a crawl shared through
 * Redis gives it back (its coordinator spent more CPU a page with it).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startShop } from '../fixtures/shop.js';
import { BIN } from './helpers/cli.js';
import { HAVE_REDIS, startRedis } from './helpers/redis.js';

const CAP = 8.5 * 1024 * 1024;
// A growth can slip in before the bound is set again (a worker thread's start resets it; heap.js): one doubling at most.
const SLIP = 2 * CAP;

describe("a crawl's young generation", () => {
  let dir = '';
  /** @type {Awaited<ReturnType<typeof startShop>>} */
  let shop;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-young-'));
    // Samples the main thread's young generation every 20 ms and prints the largest at exit (worker threads load it too).
    await writeFile(path.join(dir, 'young.mjs'), `import v8 from 'node:v8';
import { isMainThread } from 'node:worker_threads';
let largest = 0;
if (isMainThread) {
const sample = () => { largest = Math.max(largest, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size); };
setInterval(sample, 20).unref();
process.on('exit', () => { sample(); process.stderr.write('YOUNG ' + largest + '\\n'); });
}
`);
    // 1,000 products: the unbounded crawl's young generation reaches 32 MiB (400 left it at 16).
    shop = await startShop({ products: 1000, count: 100 });
  });
  afterAll(async () => {
    await shop?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * @param {string[]} args after node's --import of the sampler
   * @returns {Promise<{ code: number | null, young: number }>}
   */
  const crawl = (args) => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', path.join(dir, 'young.mjs'), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000); // a bound on a hang
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, young: Number(/^YOUNG (\d+)$/m.exec(stderr)?.[1]) });
    });
  });
  const crawlArgs = (/** @type {string} */ out) => ['crawl', shop.url, '-i', '/st/dir.asp', '/st/product.asp', '-o', path.join(dir, out), '-q', '--threads', '2'];

  it('stays at 8 MiB (16 at worst) through a crawl of 1,000 products with worker threads; the same crawl without the bound grows to 32', async () => {
    const cli = new URL('../lib/cli/index.js', import.meta.url).href;
    const free = await crawl(['--input-type=module', '-e', `const { run } = await import(${JSON.stringify(cli)});
process.exitCode = await run(${JSON.stringify(crawlArgs('free'))}, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env });`]);
    const held = await crawl([BIN, ...crawlArgs('held')]);
    expect(free.code).toBe(0);
    expect(held.code).toBe(0);
    expect(free.young).toBeGreaterThan(SLIP);
    expect(held.young).toBeLessThanOrEqual(SLIP);
  });

  it.skipIf(!HAVE_REDIS)('a crawl shared through Redis (--frontier) gives the growth back to V8', async () => {
    const redis = await startRedis();
    try {
      const shared = await crawl([BIN, ...crawlArgs('shared'), '--frontier', redis.url, '--crawl-id', 'young']);
      expect(shared.code).toBe(0);
      expect(shared.young).toBeGreaterThan(SLIP);
    } finally {
      await redis.stop();
    }
  });
});
