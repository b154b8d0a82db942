// @ts-check
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crawl } from '../lib/index.js';
import { PageThreads } from '../lib/engine/threads/page-threads.js';
import { encodeNameTable } from '../lib/naming/name-table.js';
import { createNameTable } from '../lib/naming/assign.js';
import { startOrigin } from '../bench/origin.js';
import { startSite } from '../fixtures/site.js';
import { snapshotTree, tempDirs } from './crawl-helpers.js';

/**
 * The worker threads of the per-page work (--threads): the same tree, byte
 * for byte, as the main thread alone makes; and the pool itself.
 */

const dirs = tempDirs();
/** @type {import('node:http').Server} */
let origin;
let base = '';

beforeAll(async () => {
  // The bench's shop: 150 products with price slots, menus, related products, forms.
  origin = await startOrigin({ products: 150, count: 50, port: 0, host: '127.0.0.1' });
  const address = /** @type {import('node:net').AddressInfo} */ (origin.address());
  base = `http://127.0.0.1:${address.port}`;
});
afterAll(async () => {
  await new Promise((resolve) => origin.close(resolve));
  await dirs.cleanup();
});

const snapshot = snapshotTree;

/** @param {number} threads */
async function crawlShop(threads) {
  const out = path.join(await dirs.make(), 'out');
  const result = await crawl({ roots: [`${base}/st/dir.asp`], include: ['/st/dir.asp', '/st/product.asp'], out, threads, placeholders: 'ssi' });
  return { out, result };
}

describe('--threads', () => {
  it('worker threads tokenise and rewrite, and the tree is the one the main thread alone writes', async () => {
    const alone = await crawlShop(0);
    const threaded = await crawlShop(2);
    expect(alone.result.pages).toBe(153);
    expect(alone.result.threads).toEqual({ workers: 0, inWorkers: 0, inMain: 2 * 153, early: 0, revalidated: 0 });
    expect(threaded.result.pages).toBe(153);
    // The first starts after 64 pages, the second once the first is kept busy (the rewrite pass does).
    expect(threaded.result.threads.workers).toBeGreaterThanOrEqual(1);
    expect(threaded.result.threads.workers).toBeLessThanOrEqual(2);
    // Phase one starts them after 64 pages; until they are ready the main thread works alone
    // (how many they take depends on how fast they start; the next test has them from the first page).
    expect(threaded.result.threads.inWorkers + threaded.result.threads.inMain).toBe(2 * 153);
    const files = await snapshot(threaded.out);
    expect(Object.keys(files).filter((file) => file.startsWith('st/')).length).toBe(153);
    expect(files).toEqual(await snapshot(alone.out));
  });

  it('a re-crawl whose pages answer 304 starts none: it has next to no work for them', async () => {
    const shop = await startOrigin({ products: 150, count: 50, port: 0, host: '127.0.0.1', etag: true });
    try {
      const url = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (shop.address()).port}/st/dir.asp`;
      const out = path.join(await dirs.make(), 'out');
      const options = { roots: [url], include: ['/st/dir.asp', '/st/product.asp'], out, threads: 2 };
      const first = await crawl(options);
      expect(first.threads.workers).toBeGreaterThanOrEqual(1);
      const again = await crawl(options);
      expect(again.churn.notModified).toBe(150);
      // The three directory pages (no validators, the same bytes) take their stored scans: nothing is
      // tokenised, and no file is rewritten. Every request went through the re-crawl's HTTP thread.
      expect(again.threads).toEqual({ workers: 0, inWorkers: 0, inMain: 0, early: 0, revalidated: 153 });
      expect(again.churn.filesWritten).toBe(0);
      // Pages that answer 304 but must be written again (another placeholder mode): phase two starts them.
      const rewritten = await crawl({ ...options, placeholders: 'ssi' });
      expect(rewritten.churn.notModified).toBe(150);
      expect(rewritten.churn.filesWritten).toBe(153);
      // (started after 64 pages; 150 small pages may all be done before it is ready)
      expect(rewritten.threads.workers).toBeGreaterThanOrEqual(1);
      // A --name rule added since: nothing is asked with validators, so the HTTP thread started while the state was read is let go.
      const renamed = await crawl({ ...options, placeholders: 'ssi', name: [['/st/dir.asp', 'catalogue.html']] });
      expect(renamed.churn.notModified).toBe(0);
      expect(renamed.threads.revalidated).toBe(0);
    } finally {
      await new Promise((resolve) => shop.close(resolve));
    }
  });
});

describe('--threads on the edge cases of the fixture site', () => {
  /** @type {Awaited<ReturnType<typeof startSite>>} */
  let site;
  beforeAll(async () => { site = await startSite(); });
  afterAll(async () => { await site.close(); });

  it('links of every form, <base>, name headers, redirects, windows-1252, price slots, CSS, precompressed siblings: the same tree', async () => {
    /** @type {Record<string, string>[]} */
    const trees = [];
    for (const threads of [0, 2]) {
      const out = path.join(await dirs.make(), 'out');
      const result = await crawl({
        roots: ['/links/index.asp', '/base/index.asp', '/names/index.asp', '/redir/index.asp', '/enc/index.asp', '/prices/index.asp', '/assets/index.asp'].map((p) => site.url(p)),
        include: ['/links/', '/base/', '/names/', '/redir/', '/enc/', '/prices/', '/assets/', '/infodir/'],
        out, threads, threadsFrom: 0, assets: true, precompress: 'gzip,br', siteUrl: 'https://static.example/', writeSitemap: true, retryDelay: 0,
      });
      expect(result.threads.workers).toBe(threads);
      if (threads > 0) expect(result.threads.inWorkers).toBeGreaterThan(0);
      trees.push(await snapshot(out));
    }
    expect(Object.keys(trees[0]).length).toBeGreaterThan(20);
    expect(Object.keys(trees[0]).some((file) => file.endsWith('.css'))).toBe(true);
    expect(trees[1]).toEqual(trees[0]);
  });
});

describe('PageThreads', () => {
  const page = Buffer.from('<!DOCTYPE html><html><head><base href="/shop/"></head><body>'
    + '<a href="a.html">a</a><a href="/b.asp?x=1#top">b</a><a href="mailto:x@y">m</a>'
    + '<span data-price-sku="S1">$1</span></body></html>');
  const context = {
    placeholders: /** @type {const} */ ('ssi'), pricePath: '/price', staticRoot: 'http://h.test/', dynamicBase: null,
    origins: ['http://h.test'], relativeLinks: true, siteUrl: null,
  };
  const pages = [{ key: 'http://h.test/shop/a.html', file: 'shop/a.html' }, { key: 'http://h.test/b.asp?x=1', file: 'b.asp-x=1.html' }];

  /** @param {PageThreads} pool */
  async function workOn(pool) {
    const scanned = await pool.scan({ body: page, type: 'html', contentType: 'text/html', url: 'http://h.test/p/index.asp' });
    pool.setContext(context);
    const table = createNameTable(new Map(pages.map((page) => [page.key, page.file])), new Set(), [], 10);
    pool.setNames(table, () => encodeNameTable(pages, [], 10));
    const rendered = await pool.render({
      raw: page, scan: scanned.scanBytes, bodyId: scanned.bodyId, url: 'http://h.test/p/index.asp', file: 'p/index.asp.html', type: 'html', charset: scanned.charset,
    });
    return { scanned, rendered: { ...rendered, output: rendered.output?.toString() } };
  }

  /** @param {PageThreads} pool */
  async function ready(pool) {
    pool.warm();
    for (let i = 0; i < 3000 && !pool.slots.every((slot) => slot.ready); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(pool.slots.every((slot) => slot.ready)).toBe(true);
  }

  it('a worker answers as the main thread does', async () => {
    const local = new PageThreads(0);
    const inMain = await workOn(local);
    await local.close();
    expect(local.counts).toEqual({ worker: 0, local: 2 });
    expect(inMain.scanned.links).toBe('0http://h.test/shop/a.html\n0http://h.test/b.asp?x=1\n0\n');
    expect(inMain.rendered.output).toContain('<!--# include virtual="/price?sku=S1" -->');
    expect(inMain.rendered.output).toContain('href="../shop/a.html"');

    const pool = new PageThreads(1);
    await ready(pool);
    try {
      const inWorker = await workOn(pool);
      expect(pool.counts).toEqual({ worker: 2, local: 0 });
      expect(inWorker.scanned.scanBytes.equals(inMain.scanned.scanBytes)).toBe(true);
      expect(inWorker).toEqual(inMain);
    } finally {
      await pool.close();
    }
  });

  it('one thread while the work comes sparsely; the next once the running one is kept busy', async () => {
    // The growth alone, at the main thread's priority: a thread below it on a machine busy with
    // other work (the rest of the suite) waits for the CPU, and that counts as busy.
    const pool = new PageThreads(2, { niceness: 0 });
    await ready(pool);
    try {
      expect(pool.slots).toHaveLength(1);
      // A small page, then four times as long idle (20 ms at least), for 30 pages and 600 ms (more than two windows):
      // the thread is busy a fifth of the time at most, however long a busy machine makes each page take.
      const started = performance.now();
      for (let i = 0; i < 300 && (i < 30 || performance.now() - started < 600); i++) {
        const sent = performance.now();
        await pool.scan({ body: page, type: 'html', contentType: 'text/html', url: 'http://h.test/' });
        await new Promise((resolve) => setTimeout(resolve, Math.max(20, 4 * (performance.now() - sent))));
      }
      expect(pool.slots).toHaveLength(1);
      // Pages of 20,000 links back to back: busy all the time; bounded by 200 pages.
      const big = Buffer.from(`<html><body>${'<a href="x.html">x</a>'.repeat(20_000)}</body></html>`);
      for (let i = 0; i < 200 && pool.slots.length < 2; i++) await pool.scan({ body: big, type: 'html', contentType: 'text/html', url: 'http://h.test/' });
      expect(pool.slots).toHaveLength(2);
    } finally {
      await pool.close();
    }
  });

  // The main thread feeds the pages threads; a thread woken by a message must not take its core.
  it.runIf(process.platform === 'linux')('the page threads run at a lower priority than the main thread (Linux)', async () => {
    const niceOf = (/** @type {string} */ task) => Number(readFileSync(`/proc/self/task/${task}/stat`, 'latin1').replace(/^.*\) /s, '').split(' ')[16]);
    const main = niceOf(String(process.pid));
    const before = new Set(readdirSync('/proc/self/task'));
    const pool = new PageThreads(1);
    await ready(pool);
    try {
      const added = readdirSync('/proc/self/task').filter((task) => !before.has(task)).map(niceOf);
      expect(added.length).toBeGreaterThan(0);
      expect(added).toContain(Math.min(19, main + 10));
      expect(niceOf(String(process.pid))).toBe(main);
    } finally {
      await pool.close();
    }
  });

  it('a worker that dies fails what it held; the main thread takes what comes next', async () => {
    const pool = new PageThreads(1);
    await ready(pool);
    // A page that takes the thread a while (100,000 links), so that it is still held when the thread stops.
    const big = Buffer.from(`<html><body>${'<a href="x.html">x</a>'.repeat(100_000)}</body></html>`);
    const held = pool.scan({ body: big, type: 'html', contentType: 'text/html', url: 'http://h.test/' });
    await pool.slots[0].worker.terminate();
    await expect(held).rejects.toThrow(/worker thread stopped/);
    const next = await pool.scan({ body: page, type: 'html', contentType: 'text/html', url: 'http://h.test/' });
    expect(next.links).toContain('http://h.test/shop/a.html');
    expect(pool.counts.local).toBe(1);
    await pool.close();
  });
});
