// @ts-check
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crawl } from '../lib/index.js';
import { startOrigin } from '../bench/origin.js';
import { startSite } from '../fixtures/site.js';
import { edgeCaseOptions, serveSite, snapshotTree, tempDirs } from './crawl-helpers.js';

/**
 * Pages written while the crawl runs (lib/engine/early.js): the tree and the
 * manifest are those of a crawl that writes everything after the last
 * fetch, byte for byte, whether the early outputs are taken (every page got
 * the file it wanted) or refused (a collision moved a file).
 */

const dirs = tempDirs();

const snapshot = snapshotTree;

const serve = serveSite;

/**
 * The same crawl without early writes, and with them whatever the main
 * thread's load ('always': how many are taken does not depend on the
 * machine), worker threads from the first page.
 * @param {Parameters<typeof crawl>[0]} options
 */
async function both(options) {
  /** @type {{ early: boolean | 'always', files: Record<string, string>, result: Awaited<ReturnType<typeof crawl>> }[]} */
  const runs = [];
  for (const early of /** @type {const} */ ([false, 'always'])) {
    const dir = path.join(await dirs.make(), 'out');
    const result = await crawl({ ...options, out: dir, threads: 2, threadsFrom: 0, retryDelay: 0, early });
    runs.push({ early, files: await snapshot(dir), result });
  }
  return { late: runs[0], early: runs[1] };
}

afterAll(async () => {
  await dirs.cleanup();
});

describe('pages written while the crawl runs', () => {
  /** @type {import('node:http').Server} */
  let origin;
  let base = '';
  beforeAll(async () => {
    // The bench's shop: products that link to each other (related products), menus, forms, price slots.
    origin = await startOrigin({ products: 150, count: 50, port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (origin.address()).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => origin.close(resolve));
  });

  it('the shop: written early, taken by phase two, the same tree and manifest as written at the end', async () => {
    const { late, early } = await both({ roots: [`${base}/st/dir.asp`], include: ['/st/dir.asp', '/st/product.asp'], placeholders: 'ssi' });
    expect(late.result.pages).toBe(153);
    expect(late.result.threads.early).toBe(0);
    // Products link to products fetched later: they wait for them, and are written before the end all the same
    // (as many as the threads had time for: at most 16 early renders wait for a thread at once).
    expect(early.result.threads.early).toBeGreaterThan(0);
    expect(early.result.pages).toBe(153);
    expect(Object.keys(early.files).filter((file) => file.startsWith('st/'))).toHaveLength(153);
    expect(early.files).toEqual(late.files);
  });

  it('by default, against an origin that takes 10 ms a page (the main thread has time to spare): the same tree', async () => {
    const slow = await startOrigin({ products: 60, count: 50, port: 0, host: '127.0.0.1', latencyMs: 10 });
    try {
      const url = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (slow.address()).port}/st/dir.asp`;
      const trees = [];
      for (const early of [false, true]) {
        const out = path.join(await dirs.make(), 'out');
        const result = await crawl({ roots: [url], include: ['/st/dir.asp', '/st/product.asp'], out, threads: 2, threadsFrom: 0, retryDelay: 0, early });
        expect(result.pages).toBe(62);
        trees.push(await snapshot(out));
      }
      expect(trees[1]).toEqual(trees[0]);
    } finally {
      await new Promise((resolve) => slow.close(resolve));
    }
  });

  it('a re-crawl: pages new to OUT are written early; changed and unchanged ones as before; the same tree', async () => {
    const first = path.join(await dirs.make(), 'first');
    const second = path.join(await dirs.make(), 'second');
    const options = { roots: [`${base}/st/dir.asp`], include: ['/st/dir.asp', '/st/product.asp'], placeholders: /** @type {const} */ ('ssi') };
    // Two OUTs crawled alike, then crawled again with and without early writes against an origin with more products.
    for (const out of [first, second]) await crawl({ ...options, out, maxPages: 100, retryDelay: 0 });
    const runs = [];
    for (const [out, early] of /** @type {[string, boolean | 'always'][]} */ ([[first, false], [second, 'always']])) {
      const result = await crawl({ ...options, out, threads: 2, threadsFrom: 0, retryDelay: 0, early });
      runs.push({ result, files: await snapshot(out) });
    }
    expect(runs[0].result.churn.new).toBeGreaterThan(40);
    expect(runs[1].result.threads.early).toBeGreaterThan(0);
    expect(runs[1].result.threads.early).toBeLessThanOrEqual(runs[1].result.churn.new);
    expect(runs[1].files).toEqual(runs[0].files);
  });
});

describe('early writes on the edge cases of the fixture site', () => {
  /** @type {Awaited<ReturnType<typeof startSite>>} */
  let site;
  beforeAll(async () => { site = await startSite(); });
  afterAll(async () => { await site.close(); });

  it('name headers, collisions, unsafe names, redirects, <base>, windows-1252, price slots, CSS: the same tree', async () => {
    const { late, early } = await both(edgeCaseOptions(site));
    expect(Object.keys(late.files).length).toBeGreaterThan(20);
    // This site has a collision: the pages that link to the URL that moved are written again in phase two.
    expect(late.files['prerender-manifest.json']).toContain('NAME_COLLISION');
    expect(early.result.threads.early).toBeGreaterThan(0);
    expect(early.files).toEqual(late.files);
  });
});

describe('a collision found after pages were written early', () => {
  /** @type {Awaited<ReturnType<typeof serve>>} */
  let site;
  let base = '';
  beforeAll(async () => {
    // /a links to /b and /c; /c's name header claims the file /b wants. /b is slow, so /c is
    // fetched (and /a written early with /c at "b.html") before /b comes and, by URL order
    // (shorter first), keeps "b.html": /c moves to "b-2.html" (or so) in the naming.
    site = await serve((req, res) => {
      const page = (/** @type {string} */ body, /** @type {Record<string, string>} */ headers = {}) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
        res.end(`<!doctype html><title>t</title>${body}`);
      };
      if (req.url === '/a.asp') return page('<a href="/b.asp">b</a> <a href="/cc.asp">c</a>', { 'x-builder-filename': 'a.html' });
      if (req.url === '/b.asp') return setTimeout(() => page('<a href="/a.asp">a</a>', { 'x-builder-filename': 'b.html' }), 300);
      if (req.url === '/cc.asp') return page('<a href="/a.asp">back to a</a>', { 'x-builder-filename': 'b.html' });
      res.writeHead(404).end();
    });
    base = site.base;
  });
  afterAll(async () => {
    await site.close();
  });

  it('phase two refuses the early outputs of the pages it touches and writes them again: links lead to the files the naming gave', async () => {
    const { late, early } = await both({ roots: [`${base}/a.asp`], include: ['/'] });
    expect(early.files).toEqual(late.files);
    const manifest = JSON.parse(late.files['prerender-manifest.json']);
    const files = Object.fromEntries(manifest.pages.map((/** @type {{ url: string, file: string }} */ page) => [new URL(page.url).pathname, page.file]));
    expect(files, JSON.stringify(manifest.warnings)).toMatchObject({ '/a.asp': 'a.html' });
    expect(files['/b.asp']).toBe('b.html');
    expect(files['/cc.asp']).not.toBe('b.html');
    expect(Buffer.from(early.files['a.html'], 'base64').toString()).toContain(`href="${files['/cc.asp']}"`);
    // /b.asp (which links only to /a.asp) is taken; /a.asp (links to the moved /cc.asp) and /cc.asp (moved) are not.
    expect(early.result.threads.early).toBe(1);
  });
});

describe('many collisions, with pages still being written early when the naming ends', () => {
  /** @type {Awaited<ReturnType<typeof serve>>} */
  let site;
  let base = '';
  beforeAll(async () => {
    // 150 pages that all want "same.html" (more renamed pages than are listed: no early output is
    // taken), linked from a root of 3 MB that keeps the main thread busy while their renders run.
    const pad = 'x'.repeat(3 * 1024 * 1024);
    site = await serve((req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      if (req.url === '/') {
        let links = '';
        for (let i = 0; i < 150; i++) links += `<a href="/p/${i}.asp">p${i}</a>\n`;
        res.end(`<!doctype html><title>r</title>${links}<p>${pad}</p>`);
        return;
      }
      const match = /^\/p\/(\d+)\.asp$/.exec(req.url ?? '');
      if (match) {
        res.setHeader('x-builder-filename', 'same.html');
        res.end(`<!doctype html><title>${match[1]}</title><a href="/">home</a> <a href="/p/${(Number(match[1]) + 1) % 150}.asp">next</a>`);
        return;
      }
      res.writeHead(404).end();
    });
    base = site.base;
  });
  afterAll(async () => {
    await site.close();
  });

  it('renders that end after their outputs were given up keep nothing, and the commit waits for them: the same tree', async () => {
    const { late, early } = await both({ roots: [`${base}/`], include: ['/'] });
    expect(late.result.pages).toBe(151);
    expect(early.result.threads.early).toBe(0);
    expect(early.files).toEqual(late.files);
  });
});
