// @ts-check
/**
 * --render through the real Chromium: the browser's lifecycle (recycling, a crash, isolation, re-crawls and resumes,
 * interruptions, a browser that is missing or fails). Every crawl checks that no browser process is left.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, readFile, readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { freePort } from './helpers/ports.js';
import { Crawler } from '../lib/crawler/index.js';
import { isHeadlessShell, processesUsing } from '../lib/render/browser.js';
import { treeDigest } from './helpers/processes.js';
import { processTree } from '../lib/runtime/processes.js';
import { BrowserPool } from '../lib/render/pool.js';
import { readManifest, pageOf } from './crawl-helpers.js';
import { BIN, runCli } from './helpers/cli.js';
import { alive, BROWSER, describeRender, FULL_BROWSER, IN_CI, processesWith, readFileSyncSafe, SLOW, useRenderShop } from './helpers/render.js';

describeRender("--render (real Chromium): the browser's lifecycle", () => {
  const context = useRenderShop();
  const { dirs, renderCrawl, read } = context;
  /** @type {import('./helpers/render.js').SpaShop} */
  let shop;
  beforeAll(() => {
    shop = context.shop;
  });

  it('restarts the browser after --render-recycle pages; every page is still rendered', async () => {
    const products = [2, 3, 4, 5].map((n) => `/st/product.asp?SKUSetID=${n}`);
    const { out, browsers, result } = await renderCrawl(['/st/dir.asp'], { include: ['/st/dir.asp', ...products], renderRecycle: 4 });
    expect(result.failed).toBe(0);
    expect(result.pages).toBe(7); // 3 directory pages, 4 products
    expect(browsers.length).toBe(2); // 4 pages in the first browser, 3 in the second
    const manifest = await readManifest(out);
    expect(manifest.pages.every((p) => p.rendered === true)).toBe(true);
  }, SLOW);

  // CI installs both: the headless shell, found first, renders every other test; Debian's chromium renders this one.
  it.skipIf(!(BROWSER && isHeadlessShell(BROWSER) && FULL_BROWSER) && !IN_CI)('the full browser renders the tree the headless shell renders', async () => {
    expect(isHeadlessShell(/** @type {string} */ (BROWSER)), 'the headless shell found first (CI installs it)').toBe(true);
    expect(FULL_BROWSER, 'chromium on the PATH (CI installs it)').not.toBeNull();
    expect(isHeadlessShell(/** @type {string} */ (FULL_BROWSER))).toBe(false);
    const products = [1, 2, 3].map((n) => `/st/product.asp?SKUSetID=${n}`);
    const shell = await renderCrawl(['/st/dir.asp'], { include: ['/st/dir.asp', ...products] });
    const full = await renderCrawl(['/st/dir.asp'], { include: ['/st/dir.asp', ...products], browser: FULL_BROWSER });
    expect([shell.failures, full.failures]).toEqual([[], []]);
    expect(full.browsers.length).toBe(1);
    expect(full.result.pages).toBe(shell.result.pages);
    expect(await treeDigest(full.out)).toEqual(await treeDigest(shell.out));
  }, SLOW);

  it('a browser killed under a page is restarted, and the page rendered again in a fresh context', async () => {
    let killed = 0;
    /** @type {string[]} */
    const tmpDirs = [];
    /** @type {number[]} */
    const tree = [];
    const { out, browsers, failures } = await renderCrawl(['/st/slow.asp'], { renderWait: ['selector:#slow'] }, (crawler) => {
      crawler.on('browser', (event) => {
        // Chromium's temporary files (its singleton socket directory) go inside the profile, removed with it.
        const tmp = readFileSyncSafe(`/proc/${event.pid}/environ`).split('\0').find((entry) => entry.startsWith('TMPDIR='));
        tmpDirs.push(tmp === `TMPDIR=${path.join(event.profile, 'tmp')}` ? 'inside the profile' : String(tmp));
        if (killed++ === 0) {
          setTimeout(() => {
            tree.push(...processTree(event.pid)); // its helpers too: a headless shell's do not name the profile
            process.kill(event.pid, 'SIGKILL');
          }, 300);
        }
      });
    });
    expect(failures).toEqual([]);
    expect(browsers.length).toBe(2);
    expect(tree.length).toBeGreaterThan(1);
    expect(tree.filter(alive), 'processes of the killed browser left').toEqual([]);
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
      // One per tab (2), and the one of the blank tab the full browser starts with (the headless shell's is closed).
      expect(types.filter((type) => type === '--type=renderer').length, types.join(' ')).toBeLessThanOrEqual(isHeadlessShell(/** @type {string} */ (BROWSER)) ? 2 : 3);
    }
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
});

describeRender('--render (real Chromium): what a page leaves to the next, re-crawls and resumes, in one running browser', () => {
  const context = useRenderShop({ sharedBrowser: true });
  const { renderCrawl, read, browserOptions } = context;
  /** @type {import('./helpers/render.js').SpaShop} */
  let shop;
  beforeAll(() => {
    shop = context.shop;
  });

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
      const crawler = new Crawler({ roots: include.map((p) => shop.origin + p), include, out, render: true, ...browserOptions(), retries: 0, renderWait: ['selector:[data-ready]'] });
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
    const crawler = new Crawler({ roots: [shop.origin + include[0]], include, out, render: true, ...browserOptions(), retries: 0, renderWait: ['selector:[data-ready]'] });
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

  it('--render-only and --render-skip choose the pages rendered', async () => {
    const { out } = await renderCrawl(['/st/dir.asp'], { include: ['/st/dir.asp', '/st/product.asp?SKUSetID=2'], renderSkip: ['/st/product.asp'] });
    const manifest = await readManifest(out);
    expect(pageOf(manifest, `${shop.origin}/st/dir.asp`).rendered).toBe(true);
    // The directory's links are built client-side, so the products were found; they are written as fetched.
    const product = pageOf(manifest, `${shop.origin}/st/product.asp?SKUSetID=2`);
    expect(product.rendered).toBeUndefined();
    expect(await read(out, 'st/product2.htm')).toContain('<div id="app" data-page="product" data-count="5"></div>');
  }, SLOW);

  it('--browser-endpoint: the CLI renders in the running browser (ws:// or http://), closes what it opened there and leaves it running; an endpoint nobody answers at exits 2', async () => {
    const endpoint = /** @type {string} */ (browserOptions().browserEndpoint);
    const running = context.sharedBrowser();
    const page = `${shop.origin}/st/product.asp?SKUSetID=3`;
    for (const at of [endpoint, `http://${new URL(endpoint).host}`]) {
      const dir = await context.dirs.make('prerender-endpoint-');
      const run = await runCli(['crawl', page, '-i', '/st/product.asp?SKUSetID=3', '-o', path.join(dir, 'out'), '--render', '--browser-endpoint', at, '-q'], { cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      expect(await read(path.join(dir, 'out'), 'st/product3.htm'), at).toContain('<h1>Product 3</h1>');
      expect(pageOf(await readManifest(path.join(dir, 'out')), page).rendered).toBe(true);
      expect(await running.left(), at).toEqual({ contexts: 0, tabs: [] });
      expect(running.browser.connected, at).toBe(true);
    }
    const dir = await context.dirs.make('prerender-endpoint-');
    const closed = `ws://127.0.0.1:${await freePort()}/devtools/browser/none`;
    const run = await runCli(['crawl', page, '-o', path.join(dir, 'out'), '--render', '--browser-endpoint', closed], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(`the browser at ${closed} could not be reached`);
    expect(existsSync(path.join(dir, 'out', 'st', 'product3.htm'))).toBe(false);
  }, SLOW);
});
