// @ts-check
/**
 * --render through the real Chromium: what a page may do while it renders (requests, leaving, dialogs, popups,
 * workers, status tags) and what is written of it. Every crawl checks that no browser process is left.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { readManifest, pageOf } from './crawl-helpers.js';
import { describeRender, SLOW, useRenderShop } from './helpers/render.js';

describeRender('--render (real Chromium): what a page does while it renders', () => {
  const context = useRenderShop({ sharedBrowser: true });
  const { renderCrawl, read } = context;
  /** @type {import('./helpers/render.js').SpaShop} */
  let shop;
  beforeAll(() => {
    shop = context.shop;
  });
  /**
   * One crawl, started by the first test that needs it, for pages that need the same options: a Chromium launch costs
   * more than the pages. Each test asserts on its own page; failures must be none for every page of the crawl.
   * @param {string[]} pages @param {Record<string, unknown>} options
   */
  const sharedCrawl = (pages, options) => {
    /** @type {ReturnType<typeof renderCrawl> | null} */
    let crawl = null;
    return () => (crawl ??= renderCrawl(pages, { include: pages, ...options }));
  };
  // Pages that only run scripts on load (requests, dialogs, popups): the default wait. A dialog waited on would
  // hold its page until the timeout, a failure: the long timeout is a bound on a hang, not on speed.
  const onLoad = sharedCrawl(['/st/post.asp', '/st/dialogs.asp', '/st/popup.asp'], { renderTimeout: 60_000 });
  // Pages whose serialisation is checked: read once loaded, executable scripts stripped.
  const serialised = sharedCrawl(['/st/form.asp', '/st/latin1.asp'], { renderScripts: 'strip', renderWait: ['load'] });

  it('aborts a POST and a beacon sent on load, counts them, and the origin never sees them', async () => {
    const { out, failures } = await onLoad();
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
    const { out, failures } = await onLoad();
    expect(failures).toEqual([]);
    expect(await read(out, 'st/dialogs.asp.html')).toContain('<p id="answers">[false,null]</p>');
  }, SLOW);

  it('no popup opens (window.open, a form with target=_blank): nothing of it reaches the origin', async () => {
    const { out, failures } = await onLoad();
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
    const { out, failures } = await serialised();
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
    const { out } = await serialised();
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
});
