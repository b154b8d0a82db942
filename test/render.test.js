// @ts-check
/**
 * --render through the real Chromium, against fixtures/spa-shop.js (a shop whose pages are built in the browser from
 * JSON): a catalogue, the wait conditions, and what a timeout says. Every crawl checks that no browser process is left.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { readManifest, pageOf } from './crawl-helpers.js';
import { runCli } from './helpers/cli.js';
import { describeRender, SLOW, useRenderShop } from './helpers/render.js';

describeRender('--render (real Chromium): a catalogue, the waits and their timeouts', () => {
  const context = useRenderShop({ sharedBrowser: true });
  const { dirs, renderCrawl, read } = context;
  /** @type {import('./helpers/render.js').SpaShop} */
  let shop;
  beforeAll(() => {
    shop = context.shop;
  });

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
    // 12 tasks of 15 ms each after the last response (the page's script): the network is quiet for 50 ms long before the list is built.
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

  it('preview --render shows the links rendering added and what it aborted', async () => {
    const dir = await dirs.make('prerender-render-preview-');
    const run = await runCli(['preview', `${shop.origin}/st/product.asp?SKUSetID=2`, '-i', '/st/product.asp?SKUSetID=2', '--render', '--browser-endpoint', /** @type {string} */ (context.browserOptions().browserEndpoint), '--progress-interval', '0'], { cwd: dir });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/rendered in \d+ ms; 6 links not in the raw HTML/);
    expect(run.stdout).toContain(`+ ${shop.origin}/st/product.asp?SKUSetID=3`);
    expect(run.stdout).toContain('aborted: 0 non-GET/HEAD, 1 image/media/font, 0 blocked');
    expect(run.stdout).toContain(`x GET ${shop.origin}/img/2.png (resource)`);
  }, SLOW);
});
