// @ts-check
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Parser } from 'htmlparser2';
import { crawl } from '../lib/index.js';
import { startShop } from '../fixtures/shop.js';
import { startStaticServer } from '../fixtures/static-server.js';
import { readManifest, tempDirs } from './crawl-helpers.js';

/**
 * The whole promise, end to end: crawl the shop (1,200 products, a catalogue
 * paginated by 500, two roots), serve the output with a plain static file
 * server at the origin's paths, follow every link of every written page.
 */

const PRODUCTS = 1200;
const DYNAMIC = new Set(['/st/cart.asp', '/st/checkout.asp', '/st/search.asp']);

/** @type {Awaited<ReturnType<typeof startShop>>} */
let shop;
/** @type {Awaited<ReturnType<typeof startStaticServer>>} */
let statics;
const dirs = tempDirs();
/** @type {string} */
let out;
/** @type {import('../lib/crawler/index.js').CrawlResult} */
let result;
/** @type {import('./crawl-helpers.js').Manifest} */
let manifest;
/** @type {Map<string, number>} */
let hitsAfterCrawl;

beforeAll(async () => {
  shop = await startShop({ products: PRODUCTS, count: 500 });
  out = path.join(await dirs.make(), 'out');
  result = await crawl({
    roots: [shop.url, `${shop.origin}/st/product.asp?SKUSetID=${PRODUCTS}`],
    include: ['/st/dir.asp', '/st/product.asp'],
    out,
    concurrency: 8,
    retries: 0,
    timeout: 10_000,
  });
  hitsAfterCrawl = new Map(shop.hits);
  manifest = await readManifest(out);
  statics = await startStaticServer(out);
});

afterAll(async () => {
  await statics?.close();
  await shop?.close();
  await dirs.cleanup();
});

/**
 * The URL-bearing attributes of a page, read by an HTML parser of our own
 * (not the crawler's scanner), entities decoded.
 * @param {string} html
 * @returns {string[]}
 */
function linksOf(html) {
  /** @type {string[]} */
  const links = [];
  const parser = new Parser({
    onopentag(name, attributes) {
      for (const key of ['href', 'src', 'action']) {
        if (attributes[key] !== undefined && ['a', 'area', 'link', 'img', 'script', 'iframe', 'form', 'source', 'embed'].includes(name)) links.push(attributes[key]);
      }
    },
  }, { decodeEntities: true });
  parser.end(html);
  return links;
}

/**
 * Run `task` over `items`, `limit` at a time.
 * @template T
 * @param {T[]} items
 * @param {number} limit
 * @param {(item: T) => Promise<void>} task
 */
async function pool(items, limit, task) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

/** @param {string} file */
const staticUrlOf = (file) => new URL(file.split('/').map(encodeURIComponent).join('/'), `${statics.origin}/`);

describe('the shop, crawled and served from a static file server', () => {
  it('crawls every catalogue and product page once, and nothing dynamic', () => {
    expect(result.failed).toBe(0);
    expect(result.interrupted).toBe(false);
    expect(manifest.pages).toHaveLength(PRODUCTS + 3);
    const notOnce = [];
    for (let n = 1; n <= PRODUCTS; n++) {
      if (hitsAfterCrawl.get(`/st/product.asp?SKUSetID=${n}`) !== 1) notOnce.push(n);
    }
    expect(notOnce).toEqual([]);
    expect(hitsAfterCrawl.get('/st/dir.asp')).toBe(1);
    expect(hitsAfterCrawl.get('/st/dir.asp?Start=501&Count=500')).toBe(1);
    expect(hitsAfterCrawl.get('/st/dir.asp?Start=1001&Count=500')).toBe(1);
    for (const target of hitsAfterCrawl.keys()) expect(DYNAMIC.has(target.split('?')[0]), target).toBe(false);
    const files = new Set(manifest.pages.map((page) => page.file));
    for (const n of [1, 2, 499, 500, 501, 1200]) expect(files.has(`st/product${n}.htm`), `product${n}`).toBe(true);
    expect(files.has('st/dir.asp.html')).toBe(true);
  });

  it('every product page has its price slot replaced by a placeholder', async () => {
    const wrong = manifest.pages
      .filter((page) => page.file.startsWith('st/product'))
      .filter((page) => page.placeholders.map((p) => p.sku).join() !== `SKU-${/product(\d+)\.htm$/.exec(page.file)?.[1]}`);
    expect(wrong).toEqual([]);
    const sample = await readFile(path.join(out, 'st', 'product1034.htm'), 'utf8');
    expect(sample).not.toContain('$1034.99');
    expect(sample).toContain('<!--prerender:price sku=SKU-1034-->');
  });

  it('every in-scope link is followed with no 404; out-of-scope links still reach the origin', async () => {
    /** @type {Set<string>} */
    const staticTargets = new Set();
    /** @type {Set<string>} */
    const originTargets = new Set();
    /** @type {Map<string, Set<string>>} file -> files it links to */
    const graph = new Map();
    const files = new Set(manifest.pages.map((page) => page.file));
    /** @type {string[]} */
    const problems = [];
    let links = 0;
    await pool(manifest.pages, 16, async (page) => {
      const html = await readFile(path.join(out, ...page.file.split('/')), 'utf8');
      const here = staticUrlOf(page.file);
      const servedAtOrigin = new URL(here.pathname, shop.origin);
      /** @type {Set<string>} */
      const edges = new Set();
      for (const link of linksOf(html)) {
        links++;
        const inTree = new URL(link, here);
        const target = decodeURIComponent(inTree.pathname.slice(1));
        if (inTree.origin === statics.origin && files.has(target)) {
          if (inTree.search !== '') problems.push(`${page.file}: ${link} has a query string in the static tree`);
          inTree.hash = '';
          staticTargets.add(inTree.href);
          edges.add(target);
          continue;
        }
        // Out of scope: served at the origin's paths, it leads where it led on the live page.
        const live = new URL(link, page.url);
        const asServed = new URL(link, servedAtOrigin);
        if (asServed.href !== live.href) problems.push(`${page.file}: ${link} leads to ${asServed.href} in the static tree, ${live.href} on the live page`);
        if (!DYNAMIC.has(live.pathname)) problems.push(`${page.file}: ${link} -> ${live.href} is neither a written page nor dynamic`);
        live.hash = '';
        originTargets.add(live.href);
      }
      graph.set(page.file, edges);
    });
    expect(problems.slice(0, 10)).toEqual([]);
    expect(links).toBeGreaterThan(PRODUCTS * 6);

    /** @type {string[]} */
    const missing = [];
    await pool([...staticTargets], 16, async (url) => {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status !== 200) missing.push(`${url} -> ${response.status}`);
    });
    expect(missing).toEqual([]);
    expect(statics.statuses.get('404')).toBeUndefined();

    /** @type {string[]} */
    const unreachable = [];
    const dynamicBefore = [...shop.hits.keys()].filter((key) => DYNAMIC.has(key.split('?')[0])).length;
    expect(dynamicBefore).toBe(0);
    await pool([...originTargets], 16, async (url) => {
      const response = await fetch(url);
      const body = await response.text();
      if (response.status !== 200 || !body.includes('dynamic /st/')) unreachable.push(`${url} -> ${response.status}`);
    });
    expect(unreachable).toEqual([]);
    expect(originTargets.size).toBeGreaterThanOrEqual(PRODUCTS + 2); // a cart link per product, checkout, search

    // From the roots' files, the static links reach every written page.
    const seen = new Set(['st/dir.asp.html', `st/product${PRODUCTS}.htm`]);
    const queue = [...seen];
    while (queue.length > 0) {
      for (const next of graph.get(/** @type {string} */ (queue.shift())) ?? []) {
        if (!seen.has(next)) {
          seen.add(next);
          queue.push(next);
        }
      }
    }
    expect(seen.size).toBe(files.size);
  });
});
