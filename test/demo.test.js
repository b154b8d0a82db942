// @ts-check
/**
 * `prerender demo` (issue 41, item 8): the real bin crawls the demo shop and
 * serves the tree in front of it. A product page comes from the tree, add to
 * cart reaches the live shop, prices follow the zip, the printed commands
 * run as printed, and Ctrl-C ends it with 130.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli, runNode } from './helpers/cli.js';
import { send } from './helpers/front.js';
import { startCli, treeDigest, until } from './helpers/processes.js';

/** @type {string} */ let dir;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-demo-'));
});
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A printed command line back into its arguments (words, and single-quoted words as shellWords writes them).
 * @param {string} line
 */
function words(line) {
  return [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replaceAll("'\\''", "'") : m[2]));
}

/** The printed `prerender …` lines, in order. @param {string} stdout */
const printedCommands = (stdout) => [...stdout.matchAll(/^ {2}prerender (.+)$/gm)].map((m) => words(m[1]));

/** The text of the product page's price slot. @param {string} html */
const price = (html) => /<span data-price-sku="SKU-3">([^<]*)<\/span>/.exec(html)?.[1];

/** @param {string} url */
const portOf = (url) => Number(new URL(url).port);

describe('prerender demo', () => {
  it('refuses an OUT that holds files of its own (DEMO_OUT_IN_USE), and writes nothing there', async () => {
    const cwd = fs.mkdtempSync(path.join(dir, 'taken-'));
    fs.mkdirSync(path.join(cwd, 'site'));
    fs.writeFileSync(path.join(cwd, 'site', 'index.html'), 'mine');
    const result = await runCli(['demo', '--no-serve', '--out', 'site'], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^prerender: demo: .*site holds files that are not an earlier demo's/);
    expect(fs.readdirSync(path.join(cwd, 'site'))).toEqual(['index.html']);
    expect((await runCli(['demo', '--port', '80x'], { cwd })).code).toBe(2);
  });

  it('a front port in use is refused before the shop starts and anything is crawled (exit 2, one line)', async () => {
    const cwd = fs.mkdtempSync(path.join(dir, 'port-'));
    const holder = net.createServer();
    await new Promise((resolve) => holder.listen(0, '127.0.0.1', () => resolve(undefined)));
    const port = /** @type {import('node:net').AddressInfo} */ (holder.address()).port;
    try {
      const result = await runCli(['demo', '--port', String(port)], { cwd });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`prerender: port ${port} on 127.0.0.1 is already in use: stop the other server or pick another --port (0 picks a free one)\n`);
      expect(result.stdout).toBe('');
      expect(fs.existsSync(path.join(cwd, 'prerender-demo'))).toBe(false);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('with --no-serve, crawls the shop into ./prerender-demo, prints the command and exits 0', async () => {
    const result = await runCli(['demo', '--no-serve'], { cwd: dir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const [crawl] = printedCommands(result.stdout);
    expect(crawl).toEqual(['crawl', expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/st\/dir\.asp$/), '-i', '/st/dir.asp', '/st/product.asp', '-o', 'prerender-demo']);
    // The self-paginated catalogue's 3 pages, and 25 products under their header names.
    const files = fs.readdirSync(path.join(dir, 'prerender-demo', 'st')).sort();
    expect(files.filter((f) => f.startsWith('dir.asp'))).toHaveLength(3);
    expect(files.filter((f) => /^product\d+\.htm$/.test(f))).toHaveLength(25);
  });

  it('serves the tree in front of the live shop: a product from the tree, add to cart and checkout from the shop, prices by zip; the printed commands run; Ctrl-C exits 130', async () => {
    // An earlier demo's tree is in ./prerender-demo (the test before): the demo crawls it again.
    const demo = startCli(['demo', '--port', '0'], { cwd: dir, limitMs: 120_000 });
    /** @type {import('node:child_process').ChildProcess[]} */
    const others = [];
    let stdout = '';
    demo.child.stdout?.on('data', (chunk) => { stdout += chunk; });
    try {
      await until(() => /Ctrl-C stops\.\n$/.test(stdout), 90_000);
      const front = /served in front of the shop at (http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout)?.[1] ?? '';
      const shop = /The demo shop runs at (http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout)?.[1] ?? '';
      const product = /^ {2}(http:\S+\/st\/product3\.htm)$/m.exec(stdout)?.[1] ?? '';
      expect(product).toBe(`${front}/st/product3.htm`);
      const port = portOf(front);
      const target = new URL(product).pathname;

      // The product page is the tree's file (the shop has no such path), its slot filled.
      const page = await send(port, target, { timeoutMs: 30_000 });
      expect(page.status).toBe(200);
      expect(page.text).toContain('<h1>Product 3</h1>');
      expect(price(page.text)).toBe('$3.99');
      expect(fs.readFileSync(path.join(dir, 'prerender-demo', 'st', 'product3.htm'), 'utf8')).toContain('<!--prerender:price sku=SKU-3-->');
      expect((await send(portOf(shop), target)).status).toBe(404);

      // Add to cart: the page's form POSTs to the live shop, through the front; the checkout sees the cart.
      expect(page.text).toContain('<form method="post" action="cart.asp"><input type="hidden" name="add" value="3">');
      const added = await send(port, '/st/cart.asp', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'add=3', timeoutMs: 30_000 });
      expect(added.status).toBe(200);
      expect(added.text).toContain('<p id="cart">Product 3</p>');
      expect(added.headers['set-cookie']).toEqual(['cart=3; Path=/']);
      const checkout = await send(port, '/st/checkout.asp', { headers: { cookie: 'cart=3' }, timeoutMs: 30_000 });
      expect(checkout.text).toContain('1 item(s)');

      // Prices by zip: the printed URL's query, the zip form's cookie.
      expect(stdout).toContain(`${product}?zip=10001\n      its price for zip 10001: $4.24 ($3.99 with no zip)`);
      expect(price((await send(port, `${target}?zip=10001`, { timeoutMs: 30_000 })).text)).toBe('$4.24');
      const kept = await send(port, '/st/zip.asp', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', referer: product }, body: 'zip=94103', timeoutMs: 30_000 });
      expect([kept.status, kept.headers.location, kept.headers['set-cookie']]).toEqual([303, target, ['zip=94103; Path=/']]);
      expect(price((await send(port, target, { headers: { cookie: 'zip=94103' }, timeoutMs: 30_000 })).text)).toBe('$6.24');

      // The printed crawl command, run as printed elsewhere, writes the same tree.
      const [crawl, again, serve] = printedCommands(stdout);
      expect(again).toEqual(crawl);
      const elsewhere = fs.mkdtempSync(path.join(dir, 'again-'));
      const rerun = await runNode([BIN, ...crawl], { cwd: elsewhere, limitMs: 90_000 });
      expect([rerun.code, rerun.stderr]).toEqual([0, '']);
      expect(await treeDigest(path.join(elsewhere, 'prerender-demo'))).toEqual(await treeDigest(path.join(dir, 'prerender-demo')));
      // The printed serve command, too: the same front, prices by zip.
      expect(serve).toEqual(['serve', 'prerender-demo', '--origin', shop, '--prices', `${shop}/st/price.asp?sku={sku}&zip={zip}`, '--port', '0']);
      const served = startCli(serve, { cwd: elsewhere, limitMs: 60_000 });
      others.push(served.child);
      let servedOut = '';
      served.child.stdout?.on('data', (chunk) => { servedOut += chunk; });
      await until(() => /listening on /.test(servedOut), 30_000);
      const servedPort = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(servedOut)?.[1]);
      expect(price((await send(servedPort, `${target}?zip=10001`, { timeoutMs: 30_000 })).text)).toBe('$4.24');
      served.child.kill('SIGTERM');
      expect((await served.done).code).toBe(0);
    } finally {
      for (const child of others) if (child.exitCode === null) child.kill('SIGKILL');
      demo.child.kill('SIGINT');
    }
    const ended = await demo.done;
    expect(ended.stderr).toContain('prerender demo: stopping the front and the shop\n');
    expect(ended.stderr).not.toMatch(/bug/);
    expect([ended.code, ended.signal]).toEqual([130, null]);
  });
});
