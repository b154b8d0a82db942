// @ts-check
/**
 * The front's generated configurations, run for real: `prerender front
 * --nginx` in Debian's nginx, `prerender front --varnish` in Debian's
 * Varnish (its tree backend `prerender serve --route-header`), in front of
 * the fixture shop and of the MediaWiki/gitweb layouts. The cases of
 * test/front.test.js that apply to an edge server.
 * Skipped only outside CI when nginx or varnishd is absent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { frontConfigs } from '../lib/front/command.js';
import { nginxConfig } from '../lib/front/nginx.js';
import { RouteTable } from '../lib/front/route.js';
import { createServer } from '../lib/serve/index.js';
import { startShop } from '../fixtures/shop.js';
import { startPriceEndpoint } from '../fixtures/price-endpoint.js';
import { startAppsOrigin, writeAppsTree } from '../fixtures/front-apps.js';
import { HOSTILE_TARGETS } from '../fixtures/serve/hostile-targets.js';
import { closeServer, listen, rawRequest } from '../fixtures/serve/http.js';
import { CookieJar, crawlShopForFront, send, shopPrice } from './helpers/front.js';
import { NGINX, VARNISHD, freePort, startNginxWith, startVarnishWith } from './helpers/edge.js';

const IN_CI = process.env.CI === 'true';
const quiet = { warn: () => {}, info: () => {} };
const SECRET = 'SECRET-NEXT-TO-THE-TREE';

/** @type {string} */ let dir;
/** @type {Awaited<ReturnType<typeof startShop>>} */ let shop;
/** @type {Awaited<ReturnType<typeof startPriceEndpoint>>} */ let endpoint;
/** @type {Awaited<ReturnType<typeof startAppsOrigin>>} */ let apps;
/** @type {string} */ let appsTree;
/** @type {(() => Promise<unknown>)[]} */
const cleanups = [];

beforeAll(async () => {
  if (!NGINX && !VARNISHD && !IN_CI) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-front-edge-'));
  fs.writeFileSync(path.join(dir, 'secret.txt'), SECRET);
  shop = await startShop({ products: 5 });
  endpoint = await startPriceEndpoint({ prices: (sku) => `${sku.replace('SKU-', '$')}.75` });
  apps = await startAppsOrigin();
  appsTree = path.join(dir, 'apps');
  writeAppsTree(appsTree);
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await shop?.close();
  await endpoint?.close();
  await apps?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Requests the shop got since `from`. @param {number} from */
const shopGot = (from) => shop.requests.slice(from).map((r) => `${r.method} ${r.target}`);

/**
 * The cases every front answers the same way, whatever runs it.
 * @param {() => number} port the shop's front
 * @param {() => number} appsPort the apps' front
 */
function commonCases(port, appsPort) {
  it('answers a product from the tree with its price filled, at its crawled URL and at its file, without asking the shop', async () => {
    const from = shop.requests.length;
    for (const target of ['/st/product.asp?SKUSetID=2', '/st/product2.htm', '/st/./product2.htm', '/st/product2%2Ehtm']) {
      const answer = await send(port(), target);
      expect(answer.status, target).toBe(200);
      expect(shopPrice(answer.text), target).toBe('$2.75');
    }
    expect(shopGot(from)).toEqual([]);
  });

  it('passes add-to-cart, a POST login and a checkout to the shop, cookies and all', async () => {
    const jar = new CookieJar();
    const from = shop.requests.length;
    expect(jar.keep(await send(port(), '/st/cart.asp?add=3&qty=1')).text).toContain('Product 3');
    const login = jar.keep(await send(port(), '/st/login.asp', { method: 'POST', body: 'user=bob', headers: { 'content-type': 'application/x-www-form-urlencoded' } }));
    expect([login.status, login.headers.location]).toEqual([303, '/st/checkout.asp']);
    expect(login.headers['set-cookie']).toEqual(['session=u-bob; Path=/; HttpOnly', 'seen=1; Path=/']);
    expect((await send(port(), '/st/checkout.asp', { headers: { cookie: jar.header } })).text).toContain('signed in as bob, 1 item(s)');
    const order = await send(port(), '/st/checkout.asp', { method: 'POST', body: 'confirm=1', headers: { cookie: jar.header } });
    expect(order.text).toContain('order placed for bob: 1 item(s)');
    expect(shopGot(from)).toEqual(['GET /st/cart.asp?add=3&qty=1', 'POST /st/login.asp', 'GET /st/checkout.asp', 'POST /st/checkout.asp']);
  });

  it('answers the manifest\'s 301 without asking the shop', async () => {
    const from = shop.requests.length;
    const moved = await send(port(), '/st/old.asp');
    expect([moved.status, moved.headers.location]).toEqual([301, '/st/dir.asp']);
    expect(shopGot(from)).toEqual([]);
  });

  it('X-Forwarded-* are its own, Host is the origin\'s; an absolute-form target cannot go elsewhere', async () => {
    const answer = await send(port(), '/st/echo.asp', { headers: { 'x-forwarded-for': '6.6.6.6', host: 'visitor.example', connection: 'close, x-secret', 'x-secret': '1' } });
    /** @type {Record<string, string[]>} */
    const got = {};
    const echo = JSON.parse(answer.text);
    for (let i = 0; i < echo.headers.length; i += 2) (got[echo.headers[i].toLowerCase()] ??= []).push(echo.headers[i + 1]);
    expect(got['x-forwarded-for']).toEqual(['127.0.0.1']);
    expect(got.host).toEqual([new URL(shop.origin).host]);
    expect(got['x-forwarded-host']).toEqual(['visitor.example']);
    const before = apps.requests.length;
    const absolute = await rawRequest(port(), `GET http://127.0.0.1:${apps.port}/st/search.asp?q=1 HTTP/1.1\r\nHost: 127.0.0.1:${apps.port}\r\nConnection: close\r\n\r\n`);
    expect(absolute.text).toContain('dynamic /st/search.asp');
    expect(apps.requests.length).toBe(before);
  });

  it('refuses Content-Length with Transfer-Encoding, and forwards nothing', async () => {
    const from = shop.requests.length;
    const smuggled = 'POST /st/echo.asp HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /st/cart.asp?add=666 HTTP/1.1\r\nHost: x\r\n\r\n';
    const answer = await rawRequest(port(), smuggled);
    expect(answer.status).toBe(400);
    expect(shopGot(from).filter((r) => r.includes('add=666'))).toEqual([]);
  });

  it('serves no file outside the tree, nor the manifest or hidden files', async () => {
    for (const target of ['/prerender-manifest.json', '/prerender-front.nginx.conf', '/prerender-front.vcl', '/.env']) {
      expect((await send(port(), target)).status, target).toBe(404);
    }
    for (const [target] of HOSTILE_TARGETS) {
      const answer = await rawRequest(port(), `GET ${target.replace('secret', 'x')} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(answer.text, target).not.toContain(SECRET);
    }
    for (const target of ['/../secret.txt', '/%2e%2e/secret.txt', '/st/..%2f..%2fsecret.txt']) {
      expect((await rawRequest(port(), `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).text).not.toContain(SECRET);
    }
  });

  it.each([
    ['/index.php/Main_Page', 'static Main Page'],
    ['/index.php/Main_Page.html', 'static Main Page'],
    ['/gitweb.cgi?p=repo.git;a=commit;h=abc123', 'static commit abc123'],
    ['/gitweb.cgi@p=repo.git;a=summary.html', 'static summary'],
    ['/index.php?title=Main_Page&action=edit', 'live GET /index.php?title=Main_Page&action=edit'],
    ['/index.php?search=foo&title=Special%3ASearch', 'live GET /index.php?search=foo&title=Special%3ASearch'],
    ['/index.php', 'live GET /index.php'],
    ['/gitweb.cgi?p=repo.git;a=commit;h=def456', 'live GET /gitweb.cgi?p=repo.git;a=commit;h=def456'],
  ])('path-info and ;-query site: %s', async (target, text) => {
    const answer = await send(appsPort(), target);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(text);
  });

  it('path-info site: the manifest\'s redirect, and a POST at a tree path reaches the origin', async () => {
    const moved = await send(appsPort(), '/wiki/Old_Name');
    expect([moved.status, moved.headers.location]).toEqual([301, '/index.php/Main_Page']);
    expect((await send(appsPort(), '/index.php/Main_Page', { method: 'POST', body: 'x=1' })).text).toContain('live POST /index.php/Main_Page');
  });
}

describe('prerender front --nginx, in nginx', () => {
  const skip = !NGINX && !IN_CI;
  /** @type {number} */ let port;
  /** @type {number} */ let appsPort;

  /**
   * nginx on the generated configuration of `out`.
   * @param {string} name
   * @param {string} out
   * @param {string} origin
   * @param {Partial<import('../lib/front/command.js').FrontCommandOptions>} [flags]
   */
  async function nginxFront(name, out, origin, flags = {}) {
    const listen = await freePort();
    const made = await frontConfigs(out, { nginx: true, origin, listen: `127.0.0.1:${listen}`, priceEndpoint: `127.0.0.1:${endpoint.port}`, priceCache: path.join(dir, name, 'price-cache'), originTimeoutMs: 1000, ...flags });
    const nginx = await startNginxWith({ dir: path.join(dir, name), port: listen, site: /** @type {string} */ (made.nginx), probe: out === appsTree ? '/index.php/Main_Page.html' : '/st/product1.htm' });
    cleanups.push(nginx.stop);
    return nginx.port;
  }

  beforeAll(async () => {
    if (skip) return;
    const out = path.join(dir, 'ssi');
    await crawlShopForFront(shop, out, { placeholders: 'ssi' });
    port = await nginxFront('nginx-shop', out, shop.origin);
    appsPort = await nginxFront('nginx-apps', appsTree, apps.origin, { originHost: 'apps.invalid' });
  });

  if (!skip) commonCases(() => port, () => appsPort);

  it.skipIf(skip)('takes X-Forwarded-* from the client only with --trust-proxy', async () => {
    const trusting = await nginxFront('nginx-trust', path.join(dir, 'ssi'), shop.origin, { trustProxy: true });
    const answer = await send(trusting, '/st/echo.asp', { headers: { 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'shop.example' } });
    /** @type {Record<string, string>} */
    const got = {};
    const echo = JSON.parse(answer.text);
    for (let i = 0; i < echo.headers.length; i += 2) got[echo.headers[i].toLowerCase()] = echo.headers[i + 1];
    expect([got['x-forwarded-for'], got['x-forwarded-proto'], got['x-forwarded-host']]).toEqual(['6.6.6.6, 127.0.0.1', 'https', 'shop.example']);
  });

  it.skipIf(skip)('answers its own 502 when the origin is down, and 504 when it is slow', async () => {
    const closed = await freePort();
    const downPort = await nginxFront('nginx-down', appsTree, `http://127.0.0.1:${closed}`);
    const down = await send(downPort, '/index.php?title=X&action=edit');
    expect(down.status).toBe(502);
    expect(down.text).toContain('The live site cannot be reached');
    // The origin answers after 20 s and the client waits 15 s at most: a 504 is the front's own, on time.
    const slow = await send(port, '/st/slow.asp?ms=20000', { timeoutMs: 15_000 });
    expect(slow.status).toBe(504);
    expect(slow.text).toContain('did not answer in time');
  });
});

describe('prerender front --varnish, in Varnish', () => {
  const skip = !VARNISHD && !IN_CI;
  /** @type {number} */ let port;
  /** @type {number} */ let appsPort;

  /**
   * Varnish on the generated VCL of `out`, its tree backend `prerender serve out --route-header`.
   * @param {string} name
   * @param {string} out
   * @param {string} origin
   * @param {string} probe
   * @param {Partial<import('../lib/front/command.js').FrontCommandOptions>} [flags]
   */
  async function varnishFront(name, out, origin, probe, flags = {}) {
    const tree = createServer({ root: out, routeHeader: true, logger: quiet, watch: false });
    const treePort = await listen(tree);
    cleanups.push(() => closeServer(tree));
    const made = await frontConfigs(out, { varnish: true, origin, tree: `127.0.0.1:${treePort}`, priceEndpoint: `127.0.0.1:${endpoint.port}`, originTimeoutMs: 1000, ...flags });
    const varnish = await startVarnishWith({ dir: path.join(dir, name), vcl: /** @type {string} */ (made.varnish), probe });
    cleanups.push(varnish.stop);
    return varnish.port;
  }

  beforeAll(async () => {
    if (skip) return;
    const out = path.join(dir, 'esi');
    await crawlShopForFront(shop, out, { placeholders: 'esi' });
    port = await varnishFront('varnish-shop', out, shop.origin, '/st/product1.htm');
    appsPort = await varnishFront('varnish-apps', appsTree, apps.origin, '/index.php/Main_Page', { originHost: 'apps.invalid' });
  });

  if (!skip) commonCases(() => port, () => appsPort);

  it.skipIf(skip)('answers its own 502 when the origin is down', async () => {
    const closed = await freePort();
    const downPort = await varnishFront('varnish-down', appsTree, `http://127.0.0.1:${closed}`, '/index.php/Main_Page');
    const down = await send(downPort, '/index.php?title=X&action=edit');
    expect(down.status).toBe(502);
    expect(down.text).toContain('The live site cannot be reached');
  });

  it.skipIf(skip)('answers its own 504 when the origin is slow', async () => {
    // The origin answers after 20 s and the client waits 15 s at most: a 504 is the front's own, on time.
    const slow = await send(port, '/st/slow.asp?ms=20000', { timeoutMs: 15_000 });
    expect(slow.status).toBe(504);
    expect(slow.text).toContain('did not answer in time');
  });
});

if (!NGINX && !IN_CI) console.warn('front nginx tests skipped: nginx is not installed (apt-get install nginx); in CI they run');
if (!VARNISHD && !IN_CI) console.warn('front Varnish tests skipped: varnishd is not installed (apt-get install varnish); in CI they run');

describe('prerender front --nginx and hostile URLs in the manifest', () => {
  const skip = !NGINX && !IN_CI;

  it.skipIf(skip)('escapes what nginx can take, leaves to the origin what it cannot, and nginx loads the result', async () => {
    const root = path.join(dir, 'hostile');
    fs.mkdirSync(root, { recursive: true });
    for (const file of ['quote.html', 'dollar.html', 'x$y.html']) fs.writeFileSync(path.join(root, file), `<html>${file}</html>`);
    const routes = new RouteTable({
      site: 'http://shop.invalid',
      pages: new Map([['/q?a="x";}{include/etc/passwd;', 'quote.html'], ['/d?x=$uri\\', 'dollar.html'], ['/f', 'x$y.html']]),
      redirects: new Map([['/r', { status: 302, location: '/t?$request_uri' }], ['/s', { status: 307, location: '/u";return 200 "pwned' }]]),
    });
    const listenPort = await freePort();
    const { text, warnings } = nginxConfig(routes, {
      origin: apps.origin, originHost: null, listen: `127.0.0.1:${listenPort}`, root, trustProxy: false, connectTimeoutMs: 1000, timeoutMs: 1000,
      connections: 8, placeholderMode: 'none', priceCacheDir: path.join(dir, 'hostile-cache'), priceEndpoint: null, generatedFrom: 'a test',
    });
    expect(warnings.join('\n')).toMatch(/page \/f \(file x\$y\.html\).*left to the origin/);
    expect(warnings.join('\n')).toMatch(/redirect \/r to \/t\?\$request_uri.*left to the origin/);
    const nginx = await startNginxWith({ dir: path.join(dir, 'nginx-hostile'), port: listenPort, site: text, probe: '/quote.html' });
    cleanups.push(nginx.stop);
    const raw = async (/** @type {string} */ target) => (await rawRequest(nginx.port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).text;
    expect(await raw('/q?a="x";}{include/etc/passwd;')).toContain('<html>quote.html</html>');
    expect(await raw('/d?x=$uri\\')).toContain('<html>dollar.html</html>');
    expect(await raw('/f')).toContain('live GET /f');
    expect(await raw('/r')).toContain('live GET /r');
    const moved = await raw('/s');
    expect(moved).toMatch(/^HTTP\/1\.1 307/);
    expect(moved).toContain('Location: /u";return 200 "pwned');
  });
});
