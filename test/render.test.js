// @ts-check
/**
 * --render through the real Chromium, against fixtures/spa-shop.js (a shop
 * whose pages are built in the browser from JSON). Skipped only outside CI
 * when no browser is installed; in CI (CI=true) a missing browser fails.
 * Every crawl here also checks that no process of its browsers is left.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Crawler } from '../lib/crawler/index.js';
import { findBrowser, processesUsing } from '../lib/render/browser.js';
import { BrowserPool } from '../lib/render/pool.js';
import { startSpaShop } from '../fixtures/spa-shop.js';
import { readManifest, pageOf, tempDirs } from './crawl-helpers.js';
import { BIN, runCli } from './helpers/cli.js';

const IN_CI = process.env.CI === 'true';
/** @returns {string | null} */
function installedBrowser() {
  try {
    return findBrowser({});
  } catch {
    return null;
  }
}
const BROWSER = installedBrowser();
const describeRender = BROWSER || IN_CI ? describe : describe.skip;
if (!BROWSER && !IN_CI) console.warn('render tests skipped: no chromium installed (apt-get install chromium); in CI they run');

const SLOW = 90_000;

describeRender('--render (real Chromium)', () => {
  /** @type {Awaited<ReturnType<typeof startSpaShop>>} */
  let shop;
  const dirs = tempDirs();
  beforeAll(async () => {
    shop = await startSpaShop();
  });
  afterAll(async () => {
    await shop?.close();
    await dirs.cleanup();
  });

  /**
   * A rendered crawl into a fresh directory; afterwards, no process of any of its browsers may be left.
   * @param {string[]} roots paths on the shop
   * @param {Record<string, unknown>} [options]
   * @param {(crawler: Crawler) => void} [hook]
   */
  async function renderCrawl(roots, options = {}, hook) {
    const out = await dirs.make('prerender-render-');
    const crawler = new Crawler({
      roots: roots.map((root) => shop.origin + root), include: ['/st/'], out, render: true, browser: /** @type {string} */ (BROWSER ?? 'chromium'),
      retries: 0, renderConcurrency: 4, ...options,
    });
    /** @type {{ pid: number, profile: string }[]} */
    const browsers = [];
    /** @type {{ url: string, message: string, code?: string, status?: number }[]} */
    const failures = [];
    /** @type {{ url: string, code: string, message: string }[]} */
    const warnings = [];
    /** @type {any[]} */
    const rendered = [];
    crawler.on('browser', (event) => browsers.push(event));
    crawler.on('failure', (event) => failures.push(event));
    crawler.on('warning', (event) => warnings.push(event));
    crawler.on('rendered', (event) => rendered.push(event));
    hook?.(crawler);
    const result = await crawler.run();
    expect(browsers.length).toBeGreaterThan(0);
    for (const browser of browsers) {
      expect(processesUsing(browser.profile), `processes of the browser with profile ${browser.profile}`).toEqual([]);
      expect(existsSync(browser.profile), `profile ${browser.profile} removed`).toBe(false);
    }
    return { out, result, browsers, failures, warnings, rendered };
  }

  /** @param {string} out @param {string} file */
  const read = (out, file) => readFile(path.join(out, file), 'utf8');

  it('crawls a client-rendered catalogue into a complete, linked static tree, fetching each page once', async () => {
    const { out, result, failures } = await renderCrawl(['/st/dir.asp'], { include: ['/st/dir.asp', '/st/product.asp'] });
    expect(failures).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.pages).toBe(15); // 3 directory pages, 12 products
    const files = (await readdir(path.join(out, 'st'))).sort();
    for (let n = 1; n <= 12; n++) expect(files).toContain(`product${n}.htm`); // X-Builder-FileName still names them
    const product = await read(out, 'st/product3.htm');
    expect(product).toMatch(/^<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">/);
    expect(product).toContain('<h1>Product 3</h1>');
    expect(product).toContain('<span data-price-sku="SKU-3"><!--prerender:price sku=SKU-3--></span>');
    expect(product).toContain('<a href="product2.htm">previous</a>');
    expect(product).toContain('<a href="product4.htm">next</a>');
    expect(product).toContain('<a href="dir.asp.html">catalogue</a>');
    expect(product).toContain('<a href="cart.asp?add=3&amp;qty=1">add to cart</a>'); // out of scope: as rendered
    expect(product).not.toContain('<base');
    const dir = await read(out, 'st/dir.asp.html');
    expect(dir).toContain('<a href="product1.htm">Product 1</a>');
    expect(dir).toContain('<a href="dir.asp@Start=6&amp;Count=5.html">next</a>');
    const manifest = await readManifest(out);
    const entry = pageOf(manifest, `${shop.origin}/st/product.asp?SKUSetID=3`);
    expect(entry).toMatchObject({ rendered: true, contentType: 'text/html; charset=utf-8', aborted: { methods: 0, resources: 1, blocked: 0 } });
    expect(entry.placeholders).toHaveLength(1);
    expect(entry.renderMs).toBeGreaterThan(0);
    // Fetch once: the origin saw one request per page; images never left the browser.
    for (let n = 1; n <= 12; n++) expect(shop.hits.get(`GET /st/product.asp?SKUSetID=${n}`)).toBe(1);
    expect(shop.count('GET', '/img/')).toBe(0);
  }, SLOW);

  it('waits for selector:, event: and flag: conditions, and sees an event dispatched before any other script', async () => {
    // Crawls of their own, at once: each waits on its page, not on the machine.
    await Promise.all(['selector:#late', 'event:late-ready', 'flag:window.lateDone === true'].map(async (wait) => {
      const { out, failures } = await renderCrawl(['/st/late.asp'], { renderWait: [wait], renderIdle: 0 });
      expect(failures, wait).toEqual([]);
      expect(await read(out, 'st/late.asp.html'), wait).toContain('<p id="late">late content</p>');
    }).concat((async () => {
      const early = await renderCrawl(['/st/early.asp'], { renderWait: ['event:early-ready'], renderTimeout: 10_000 });
      expect(early.failures).toEqual([]);
      expect(await read(early.out, 'st/early.asp.html')).toContain('<p id="x">early</p>');
    })()));
  }, SLOW);

  it('networkidle waits for the quiet window after the last request', async () => {
    // The late page changes 300 ms after load, with no request: a 1500 ms window sees it.
    const { out, failures } = await renderCrawl(['/st/late.asp'], { renderWait: ['networkidle'], renderIdle: 1500 });
    expect(failures).toEqual([]);
    expect(await read(out, 'st/late.asp.html')).toContain('late content');
  }, SLOW);

  it('networkidle waits for the page\'s script too: work it does after the last response, in short tasks, ends before the DOM is read', async () => {
    // 12 tasks of 15 ms each after the last request: the network is quiet for 50 ms long before the list is built.
    const { out, failures } = await renderCrawl(['/st/chunked.asp'], { renderWait: ['networkidle'], renderIdle: 50 });
    expect(failures).toEqual([]);
    const html = await read(out, 'st/chunked.asp.html');
    expect(html.match(/<li>/g)).toHaveLength(12);
    expect(html).toContain('data-ready="1"');
  }, SLOW);

  it('networkidle still ends on a page whose DOM never stops changing, and on one that replaces the clock, timers and idle callback', async () => {
    const { out, failures } = await renderCrawl(['/st/ticker.asp', '/st/odd.asp'], {
      include: ['/st/ticker.asp', '/st/odd.asp'], renderWait: ['networkidle'], renderIdle: 100, renderTimeout: 6000,
    });
    expect(failures).toEqual([]);
    expect(await read(out, 'st/ticker.asp.html')).toContain('<p id="ticker">ticking</p>');
    expect(await read(out, 'st/odd.asp.html')).toContain('<p id="odd">odd page</p>');
  }, SLOW);

  it('a page that never becomes ready fails with what was awaited and the requests in flight; save keeps it as partial', async () => {
    // Three crawls at once: the time is their timeouts'.
    const [failed, flag, saved] = await Promise.all([
      renderCrawl(['/st/never.asp'], { renderTimeout: 6000 }),
      renderCrawl(['/st/late.asp'], { renderTimeout: 6000, renderWait: ['load', 'flag:window.never === true'] }),
      renderCrawl(['/st/never.asp'], { renderTimeout: 6000, onRenderTimeout: 'save', renderIdle: 100 }),
    ]);
    expect(failed.result.failed).toBe(1);
    expect(failed.failures[0].code).toBe('RENDER_TIMEOUT');
    expect(failed.failures[0].message).toContain('render timed out after 6000 ms waiting for networkidle');
    expect(failed.failures[0].message).toContain(`1 request in flight: GET ${shop.origin}/api/hang`);
    expect(existsSync(path.join(failed.out, 'st/never.asp.html'))).toBe(false);

    expect(flag.failures[0].message).toMatch(/waiting for flag:window\.never === true \(no request in flight\)/);

    expect(saved.result.failed).toBe(0);
    expect(await read(saved.out, 'st/never.asp.html')).toContain('<p id="half">half built</p>');
    const manifest = await readManifest(saved.out);
    expect(pageOf(manifest, `${shop.origin}/st/never.asp`)).toMatchObject({ rendered: true, partial: true });
    expect(saved.warnings.map((w) => w.code)).toContain('RENDER_PARTIAL');
  }, SLOW);

  it('in-page waits (no networkidle, no Network domain): the timeout names what the page still waits for and the requests its resource timing has not seen end', async () => {
    // Three crawls at once, each with a timeout long enough for its page to reach the state it is stuck in.
    const timeout = 5000;
    const [hung, flag, late] = await Promise.all([
      // never.asp leaves GET /api/hang open and sets prerenderReady = false; #half is there, #whole never comes.
      renderCrawl(['/st/never.asp'], { renderTimeout: timeout, renderWait: ['selector:#half', 'selector:#whole'] }),
      // Every selector there: what is left is the page's own flag.
      renderCrawl(['/st/never.asp'], { renderTimeout: timeout, renderWait: ['selector:#half'] }),
      // Ended requests (the app script, the JSON) are not listed.
      renderCrawl(['/st/late.asp'], { renderTimeout: timeout, renderWait: ['event:never-fired'] }),
    ]);
    // A script that never yields cannot say: the reason says so instead of guessing. Alone, as it takes a core.
    const busy = await renderCrawl(['/st/busy.asp'], { renderTimeout: timeout, renderWait: ['selector:#never'] });
    expect(hung.failures[0].code).toBe('RENDER_TIMEOUT');
    expect(hung.failures[0].message).toContain(`render timed out after ${timeout} ms waiting for selector:#whole (`);
    expect(hung.failures[0].message).not.toContain('selector:#half');
    expect(hung.failures[0].message).toContain(`1 request in flight: GET ${shop.origin}/api/hang)`);
    expect(flag.failures[0].message).toContain('waiting for window.prerenderReady === true (1 request in flight');
    expect(late.failures[0].message).toMatch(/waiting for event:never-fired \(no request in flight\)$/);
    expect(busy.failures[0].code).toBe('RENDER_TIMEOUT');
    expect(busy.failures[0].message).toContain('the page\'s script is busy');
  }, SLOW);

  it('a page whose prerenderReady stays false is waited for, and named in the timeout', async () => {
    // never.asp sets prerenderReady = false: with a wait that holds (load), the flag is what is awaited.
    const { failures } = await renderCrawl(['/st/never.asp'], { renderTimeout: 6000, renderWait: ['load'] });
    expect(failures[0].message).toContain('waiting for window.prerenderReady === true');
  }, SLOW);

  it('aborts a POST and a beacon sent on load, counts them, and the origin never sees them', async () => {
    const { out, failures } = await renderCrawl(['/st/post.asp']);
    expect(failures).toEqual([]);
    expect(await read(out, 'st/post.asp.html')).toContain('tracked');
    const manifest = await readManifest(out);
    expect(pageOf(manifest, `${shop.origin}/st/post.asp`).aborted).toEqual({ methods: 2, resources: 0, blocked: 0 });
    expect(shop.count('POST', '/api/track')).toBe(0);
  }, SLOW);

  it('a page that leaves (location, a POST form, a reload) stays: its own DOM is written, and nothing it left for reaches the origin', async () => {
    const hows = ['href', 'form', 'reload'];
    const { out, failures } = await renderCrawl(hows.map((how) => `/st/leaving.asp?how=${how}`), { include: ['/st/leaving.asp'], renderTimeout: 8000 });
    expect(failures).toEqual([]);
    for (const how of hows) {
      const html = await read(out, `st/leaving.asp@how=${how}.html`);
      expect(html, how).toContain('<p id="built">built here</p>');
      expect(html, how).not.toMatch(/ERR_BLOCKED|chrome-error/);
    }
    const manifest = await readManifest(out);
    expect(pageOf(manifest, `${shop.origin}/st/leaving.asp?how=href`).aborted.blocked).toBe(1);
    expect(shop.count('GET', '/st/cart.asp')).toBe(0);
    expect(shop.count('POST', '/api/track')).toBe(0);
  }, SLOW);

  it('a page that goes back to the tab\'s first entry before it is read fails, saying so: never a blank page written', async () => {
    const { out, failures } = await renderCrawl(['/st/back.asp'], { include: ['/st/back.asp'], renderIsolation: 'context', renderTimeout: 8000 });
    expect(failures).toEqual([expect.objectContaining({ url: `${shop.origin}/st/back.asp`, message: expect.stringMatching(/left itself for about:blank before it was read/) })]);
    expect(existsSync(path.join(out, 'st/back.asp.html'))).toBe(false);
  }, SLOW);

  it('alert, confirm and prompt are dismissed at once (confirm false, prompt null), not waited on', async () => {
    // A dialog waited on would hold the page until its timeout: a failure, not a wall-clock bound.
    const { out, failures } = await renderCrawl(['/st/dialogs.asp'], { include: ['/st/dialogs.asp'], renderTimeout: 60_000 });
    expect(failures).toEqual([]);
    expect(await read(out, 'st/dialogs.asp.html')).toContain('<p id="answers">[false,null]</p>');
  }, SLOW);

  it('no popup opens (window.open, a form with target=_blank): nothing of it reaches the origin', async () => {
    const { out, failures } = await renderCrawl(['/st/popup.asp'], { include: ['/st/popup.asp'], renderTimeout: 8000 });
    expect(failures).toEqual([]);
    expect(await read(out, 'st/popup.asp.html')).toContain('<p id="built">no popup</p>');
    // Past the render: a popup, had one opened, would have asked by now.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(shop.count('GET', '/api/track')).toBe(0);
    expect(shop.count('POST', '/api/track')).toBe(0);
  }, SLOW);

  it('a dedicated worker\'s requests: its GET ends networkidle like any other, its POST is aborted and never reaches the origin', async () => {
    for (const renderWait of [['networkidle'], ['selector:#from-worker']]) {
      const { out, failures } = await renderCrawl(['/st/worker.asp'], { renderWait, renderTimeout: 8000 });
      expect(failures, renderWait[0]).toEqual([]);
      expect(await read(out, 'st/worker.asp.html')).toContain('<p id="from-worker">Product 1, Product 2</p>');
    }
    expect(shop.count('POST', '/api/track')).toBe(0);
  }, SLOW);

  it('turns <meta name="prerender-status-code"> into a recorded 404 and a redirect, and removes the tags', async () => {
    const { out, result, failures } = await renderCrawl(['/st/gone.asp', '/st/moved.asp'], { include: ['/st/gone.asp', '/st/moved.asp', '/st/product.asp?SKUSetID=1'] });
    expect(failures).toEqual([expect.objectContaining({ url: `${shop.origin}/st/gone.asp`, status: 404 })]);
    expect(result.failed).toBe(1);
    const manifest = await readManifest(out);
    expect(manifest.redirects).toEqual([{ url: `${shop.origin}/st/moved.asp`, location: `${shop.origin}/st/product.asp?SKUSetID=1`, status: 301 }]);
    expect(manifest.pages.map((p) => p.file)).toEqual(['st/product1.htm']);
    expect(await read(out, 'st/product1.htm')).not.toContain('prerender-');
  }, SLOW);

  it('serialises form state, CSSOM rules and open shadow roots; strips executable scripts only', async () => {
    const { out, failures } = await renderCrawl(['/st/form.asp'], { renderScripts: 'strip', renderWait: ['load'] });
    expect(failures).toEqual([]);
    const html = await read(out, 'st/form.asp.html');
    expect(html).toMatch(/^<!DOCTYPE html>\n/);
    expect(html).toContain('<input id="t" name="t" value="typed">');
    expect(html).toContain('<input id="c" type="checkbox" checked="">');
    expect(html).toContain('<option selected="">b</option>');
    expect(html).toContain('<textarea id="ta">written</textarea>');
    expect(html).toContain('<style id="dyn">.hidden { display: none; }</style>');
    expect(html).toContain('<shop-card><template shadowrootmode="open"><b class="inside">in the shadow</b><slot></slot></template></shop-card>');
    expect(html).toContain('<script type="application/ld+json">{"@type":"Product","name":"Widget"}</script>');
    expect(html).not.toContain('customElements.define');
    expect(html).not.toContain('<base');
  }, SLOW);

  it('writes UTF-8 and says so, whatever the page was served in', async () => {
    const { out } = await renderCrawl(['/st/latin1.asp'], { renderWait: ['load'] });
    const bytes = await readFile(path.join(out, 'st/latin1.asp.html'));
    const html = bytes.toString('utf8');
    expect(html).toContain('<title>Café</title>');
    expect(html).toContain('<p id="built">crème</p>');
    expect(html.match(/<meta[^>]*charset/gi)).toEqual(['<meta charset']);
    expect(html).toContain('<meta charset="utf-8">');
    const manifest = await readManifest(out);
    expect(pageOf(manifest, `${shop.origin}/st/latin1.asp`).contentType).toBe('text/html; charset=utf-8');
  }, SLOW);

  it('a page whose script never yields fails on its timeout and does not stall the crawl', async () => {
    const { out, failures, result } = await renderCrawl(['/st/busy.asp', '/st/product.asp?SKUSetID=1', '/st/product.asp?SKUSetID=2'], {
      include: ['/st/busy.asp', '/st/product.asp?SKUSetID=1', '/st/product.asp?SKUSetID=2'], renderTimeout: 8000, renderConcurrency: 2,
    });
    expect(failures.map((f) => f.url)).toEqual([`${shop.origin}/st/busy.asp`]);
    expect(failures[0].code).toBe('RENDER_TIMEOUT');
    expect(result.pages).toBe(2);
    expect(await read(out, 'st/product2.htm')).toContain('<h1>Product 2</h1>');
  }, SLOW);

  it('restarts the browser after --render-recycle pages; every page is still rendered', async () => {
    const products = [2, 3, 4, 5].map((n) => `/st/product.asp?SKUSetID=${n}`);
    const { out, browsers, result } = await renderCrawl(['/st/dir.asp'], { include: ['/st/dir.asp', ...products], renderRecycle: 2 });
    expect(result.failed).toBe(0);
    expect(result.pages).toBe(7); // 3 directory pages, 4 products
    expect(browsers.length).toBe(4); // 2 pages per browser
    const manifest = await readManifest(out);
    expect(manifest.pages.every((p) => p.rendered === true)).toBe(true);
  }, SLOW);

  it('a browser killed under a page is restarted, and the page rendered again in a fresh context', async () => {
    let killed = 0;
    /** @type {string[]} */
    const tmpDirs = [];
    const { out, browsers, failures } = await renderCrawl(['/st/slow.asp'], { renderWait: ['selector:#slow'] }, (crawler) => {
      crawler.on('browser', (event) => {
        // Chromium's temporary files (its singleton socket directory) go inside the profile, removed with it.
        const tmp = readFileSyncSafe(`/proc/${event.pid}/environ`).split('\0').find((entry) => entry.startsWith('TMPDIR='));
        tmpDirs.push(tmp === `TMPDIR=${path.join(event.profile, 'tmp')}` ? 'inside the profile' : String(tmp));
        if (killed++ === 0) setTimeout(() => process.kill(event.pid, 'SIGKILL'), 300);
      });
    });
    expect(failures).toEqual([]);
    expect(browsers.length).toBe(2);
    expect(tmpDirs).toEqual(['inside the profile', 'inside the profile']);
    expect(await read(out, 'st/slow.asp.html')).toContain('<p id="slow">slow content</p>');
  }, SLOW);

  it('under a temporary directory too long for a socket path inside the profile, Chromium keeps its own TMPDIR and still starts', async () => {
    const long = await dirs.make(`prerender-${'x'.repeat(60)}-`);
    /** @type {{ pid?: number, profile?: string }} */
    const seen = {};
    const pool = new BrowserPool({ executablePath: /** @type {string} */ (BROWSER), recycle: 10, protocolTimeout: 10_000, tmpDir: long, onEvent: (type, data) => { if (type === 'browser') Object.assign(seen, data); } });
    try {
      await pool.start();
      const tmp = readFileSyncSafe(`/proc/${seen.pid}/environ`).split('\0').find((entry) => entry.startsWith('TMPDIR='));
      expect(tmp).toBe(process.env.TMPDIR === undefined ? undefined : `TMPDIR=${process.env.TMPDIR}`);
      expect(String(seen.profile).startsWith(long)).toBe(true);
    } finally {
      await pool.close();
    }
    expect(processesUsing(/** @type {string} */ (seen.profile))).toEqual([]);
  }, SLOW);

  it('isolation slot: a tab renders page after page, and nothing one page stored reaches the next (cookies, storage, IndexedDB, caches, late writes)', async () => {
    const nothing = { cookie: '', httpCookie: '', local: [], session: [], name: '', dbs: [], caches: [] };
    /** @type {Record<string, number>} */
    const histories = {};
    for (const renderIsolation of ['slot', 'context']) {
      // One tab: look.asp is found in leave.asp's rendered DOM, so it is rendered after it, in the same slot.
      const { out, failures } = await renderCrawl(['/st/leave.asp'], { include: ['/st/leave.asp', '/st/look.asp'], renderConcurrency: 1, renderIsolation, renderWait: ['selector:[data-ready]'] });
      expect(failures).toEqual([]);
      const html = await read(out, 'st/look.asp.html');
      const seen = JSON.parse(/<pre id="seen">(.*)<\/pre>/.exec(html)?.[1].replace(/&quot;/g, '"') ?? 'null');
      const { history, ...stored } = seen;
      expect(stored, renderIsolation).toEqual(nothing);
      histories[renderIsolation] = history;
    }
    // With slot the same tab rendered both pages, its history reset between them: the length a fresh tab's page sees.
    expect(histories.slot).toBe(histories.context);
  }, SLOW);

  it('a re-crawl keeps the rendered fields of pages carried over (304, and a failure that keeps the last copy)', async () => {
    const include = ['/st/product.asp?SKUSetID=1', '/st/product.asp?SKUSetID=2'];
    const { out } = await renderCrawl(include, { include, renderWait: ['selector:[data-ready]'] });
    const first = await readManifest(out);
    expect(first.pages.map((/** @type {any} */ p) => p.rendered)).toEqual([true, true]);
    shop.failing.add('/st/product.asp?SKUSetID=2');
    try {
      const crawler = new Crawler({ roots: include.map((p) => shop.origin + p), include, out, render: true, browser: /** @type {string} */ (BROWSER), retries: 0, renderWait: ['selector:[data-ready]'] });
      const result = await crawler.run();
      expect(result.failed).toBe(0);
      expect(result.churn.notModified).toBe(1); // product 1: 304
      expect(result.stale).toBe(1); // product 2: 503, its last copy kept
    } finally {
      shop.failing.clear();
    }
    const again = await readManifest(out);
    for (const n of [1, 2]) {
      const before = pageOf(first, `${shop.origin}/st/product.asp?SKUSetID=${n}`);
      const page = pageOf(again, `${shop.origin}/st/product.asp?SKUSetID=${n}`);
      expect(page.rendered, `product ${n}`).toBe(true);
      expect(page.renderMs).toBe(before.renderMs);
      expect(page.aborted).toEqual(before.aborted);
      expect(page.sha256).toBe(before.sha256);
    }
    expect(pageOf(again, `${shop.origin}/st/product.asp?SKUSetID=2`).stale).toBe(true);
    expect(await read(out, 'st/product1.htm')).toContain('<h1>Product 1</h1>');
  }, SLOW);

  it('a crawl resumed after an interruption keeps the rendered fields of the pages it does not fetch again', async () => {
    const include = ['/st/product.asp?SKUSetID=1', '/st/product.asp?SKUSetID=2', '/st/product.asp?SKUSetID=3', '/st/product.asp?SKUSetID=4'];
    const controller = new AbortController();
    const { out, result } = await renderCrawl(include.slice(0, 1), { include, signal: controller.signal, renderConcurrency: 1, renderWait: ['selector:[data-ready]'] }, (crawler) => {
      crawler.on('page', () => setImmediate(() => controller.abort()));
    });
    expect(result.interrupted).toBe(true);
    const crawler = new Crawler({ roots: [shop.origin + include[0]], include, out, render: true, browser: /** @type {string} */ (BROWSER), retries: 0, renderWait: ['selector:[data-ready]'] });
    const again = await crawler.run();
    expect(again.failed).toBe(0);
    expect(again.resumed).toBeGreaterThan(0);
    const manifest = await readManifest(out);
    expect(manifest.pages).toHaveLength(4);
    for (const page of manifest.pages) {
      expect(page.rendered, page.url).toBe(true);
      expect(page.renderMs, page.url).toBeGreaterThan(0);
    }
  }, SLOW);

  it('a tab costs one renderer process: no address-bar WebUI renderer per context, no spare renderer; all of them found by their profile', async () => {
    const products = [1, 2, 3, 4, 5, 6].map((n) => `/st/product.asp?SKUSetID=${n}`);
    /** @type {string[][]} */
    const seen = [];
    let profile = '';
    const { failures } = await renderCrawl(products, { include: products, renderConcurrency: 2, renderWait: ['selector:[data-ready]'] }, (crawler) => {
      crawler.on('browser', (event) => { profile = event.profile; });
      crawler.on('rendered', () => {
        seen.push(processesUsing(profile).map((pid) => {
          try {
            const args = readFileSyncSafe(`/proc/${pid}/cmdline`).split(/[\0 ]/);
            if (args.includes('--top-chrome-webui')) return 'webui';
            return args.find((arg) => arg.startsWith('--type=')) ?? 'browser';
          } catch {
            return 'gone';
          }
        }));
      });
    });
    expect(failures).toEqual([]);
    expect(seen.length).toBe(6);
    for (const types of seen) {
      expect(types).toContain('browser');
      expect(types).toContain('--type=renderer'); // found although Chromium rewrote their command line
      expect(types, 'a WebUI renderer (the address bar popup of a headless window)').not.toContain('webui');
      // One per tab (2), and the one of the blank tab the browser starts with.
      expect(types.filter((type) => type === '--type=renderer').length, types.join(' ')).toBeLessThanOrEqual(3);
    }
  }, SLOW);

  it('--render-only and --render-skip choose the pages rendered', async () => {
    const { out } = await renderCrawl(['/st/dir.asp'], { include: ['/st/dir.asp', '/st/product.asp?SKUSetID=2'], renderSkip: ['/st/product.asp'] });
    const manifest = await readManifest(out);
    expect(pageOf(manifest, `${shop.origin}/st/dir.asp`).rendered).toBe(true);
    // The directory's links are built client-side, so the products were found; they are written as fetched.
    const product = pageOf(manifest, `${shop.origin}/st/product.asp?SKUSetID=2`);
    expect(product.rendered).toBeUndefined();
    expect(await read(out, 'st/product2.htm')).toContain('<div id="app" data-page="product" data-count="5"></div>');
  }, SLOW);

  it('an interrupted crawl (the run\'s AbortSignal) leaves no browser process', async () => {
    const controller = new AbortController();
    const { result } = await renderCrawl(['/st/never.asp', '/st/dir.asp'], { signal: controller.signal, renderTimeout: 60_000 }, (crawler) => {
      crawler.on('browser', () => setTimeout(() => controller.abort(), 500));
    });
    expect(result.interrupted).toBe(true);
  }, SLOW);

  /**
   * The CLI rendering a page that never becomes ready, in a temporary directory of its own;
   * resolves once its browser runs (bounded: 30 s).
   * @param {string} name
   */
  async function renderingCli(name) {
    const tmp = await dirs.make(name);
    const child = spawn(process.execPath, [BIN, 'crawl', `${shop.origin}/st/never.asp`, '-o', path.join(tmp, 'out'), '--render', '--browser', /** @type {string} */ (BROWSER ?? 'chromium'), '--render-timeout', '60000', '-q'], {
      env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
    const ours = () => processesWith(`--user-data-dir=${tmp}/prerender-chromium-`);
    for (let i = 0; i < 300 && ours().length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ours().length, stderr).toBeGreaterThan(0);
    const profilesLeft = async () => (await readdir(tmp)).filter((entry) => entry.startsWith('prerender-chromium-'));
    return { child, exited, ours, profilesLeft, stderr: () => stderr };
  }

  it('Ctrl-C on the CLI leaves no browser process and exits 130', async () => {
    const { child, exited, ours, profilesLeft } = await renderingCli('prerender-render-tmp-');
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(ours()).toEqual([]);
    expect(await profilesLeft()).toEqual([]);
  }, SLOW);

  it('a second Ctrl-C quits at once, and still leaves no browser process nor its profile', async () => {
    const { child, exited, ours, profilesLeft, stderr } = await renderingCli('prerender-render-tmp2-');
    child.kill('SIGINT');
    for (let i = 0; i < 1500 && !/stopping cleanly/.test(stderr()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    // The kernel may take a moment to reap what was killed: bounded.
    for (let i = 0; i < 300 && ours().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ours()).toEqual([]);
    expect(await profilesLeft()).toEqual([]);
  }, SLOW);

  it('a browser that fails to start ends the run (exit 2) and leaves nothing running', async () => {
    const dir = await dirs.make('prerender-render-launch-');
    const pidFile = path.join(dir, 'pid');
    const wrapper = path.join(dir, 'broken-chromium');
    // Starts a real Chromium (without the pipe puppeteer waits on), then fails.
    await writeFile(wrapper, `#!/bin/bash
args=()
for a in "$@"; do [ "$a" = --remote-debugging-pipe ] || args+=("$a"); done
${BROWSER ?? 'chromium'} "\${args[@]}" about:blank </dev/null >/dev/null 2>&1 3>&- 4>&- &
echo $! > ${pidFile}
sleep 1
exit 1
`);
    await chmod(wrapper, 0o755);
    const out = path.join(dir, 'out');
    const run = await runCli(['crawl', `${shop.origin}/st/late.asp`, '-o', out, '--render', '--browser', wrapper], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('did not start');
    const pid = Number(await readFile(pidFile, 'utf8'));
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid), `Chromium ${pid} started by the wrapper`).toBe(false);
    expect(processesWith(`--user-data-dir=${os.tmpdir()}/prerender-chromium-`).filter((p) => p === pid)).toEqual([]);
  }, SLOW);

  it('a missing browser exits 2 with one line saying how to install one, before anything is fetched', async () => {
    const dir = await dirs.make('prerender-render-missing-');
    const before = shop.count('GET', '/st/late.asp');
    const run = await runCli(['crawl', `${shop.origin}/st/late.asp`, '-o', path.join(dir, 'out'), '--render'], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('apt-get install chromium');
    expect(shop.count('GET', '/st/late.asp')).toBe(before);
  });

  it('--browser naming a directory is no browser: exit 2, one line, nothing left in OUT', async () => {
    const dir = await dirs.make('prerender-render-dir-');
    const run = await runCli(['crawl', `${shop.origin}/st/late.asp`, '-o', path.join(dir, 'out'), '--render', '--browser', dir], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/--browser .*: no executable there/);
    expect(existsSync(path.join(dir, 'out'))).toBe(false);
  });

  it('preview --render shows the links rendering added and what it aborted', async () => {
    const dir = await dirs.make('prerender-render-preview-');
    const run = await runCli(['preview', `${shop.origin}/st/product.asp?SKUSetID=2`, '-i', '/st/product.asp?SKUSetID=2', '--render', '--browser', /** @type {string} */ (BROWSER ?? 'chromium'), '--progress-interval', '0'], { cwd: dir });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/rendered in \d+ ms; 6 links not in the raw HTML/);
    expect(run.stdout).toContain(`+ ${shop.origin}/st/product.asp?SKUSetID=3`);
    expect(run.stdout).toContain('aborted: 0 non-GET/HEAD, 1 image/media/font, 0 blocked');
    expect(run.stdout).toContain(`x GET ${shop.origin}/img/2.png (resource)`);
  }, SLOW);
});

/** @param {string} needle a word of the command line */
function processesWith(needle) {
  /** @type {number[]} */
  const found = [];
  for (const entry of require_proc()) {
    // Chromium's child processes rewrite their command line as one string of words.
    if (entry.cmdline.split(/[\0 ]/).some((arg) => arg.startsWith(needle))) found.push(entry.pid);
  }
  return found;
}

function require_proc() {
  /** @type {{ pid: number, cmdline: string }[]} */
  const list = [];
  for (const entry of readdirSyncSafe('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      list.push({ pid: Number(entry), cmdline: readFileSyncSafe(`/proc/${entry}/cmdline`) });
    } catch {
      // gone meanwhile
    }
  }
  return list;
}

/** @param {number} pid */
function alive(pid) {
  try {
    const stat = readFileSyncSafe(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie is dead, waiting to be reaped
  } catch {
    return false;
  }
}

import { readdirSync, readFileSync } from 'node:fs';
/** @param {string} dir */
function readdirSyncSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
/** @param {string} file */
function readFileSyncSafe(file) {
  return readFileSync(file, 'latin1');
}
void mkdtemp;
void rm;
