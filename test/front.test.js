// @ts-check
/**
 * `prerender serve OUT --origin URL`, end to end: the fixture shop crawled,
 * the front in front of it; the real-app layouts of issue 43 (MediaWiki's
 * path-info, gitweb's `;` queries); the limits and the security cases.
 * The same cases through nginx and Varnish: test/front-edge.test.js.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../lib/serve/index.js';
import { RouteTable } from '../lib/front/route.js';
import { startShop } from '../fixtures/shop.js';
import { startAppsOrigin, writeAppsTree } from '../fixtures/front-apps.js';
import { HOSTILE_TARGETS } from '../fixtures/serve/hostile-targets.js';
import { closeServer, listen, rawRequest } from '../fixtures/serve/http.js';
import { CookieJar, crawlShopForFront, FRONT_PRICES, send, shopPrice } from './helpers/front.js';
import { freePort } from './helpers/edge.js';
import { startCli, until } from './helpers/processes.js';
import { runCli } from './helpers/cli.js';

const quiet = { warn: () => {}, info: () => {} };

/** @type {string} */ let dir;
/** @type {Awaited<ReturnType<typeof startShop>>} */ let shop;
/** @type {string} */ let out;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-front-'));
  shop = await startShop({ products: 5 });
  out = path.join(dir, 'out');
  await crawlShopForFront(shop, out);
});

afterAll(async () => {
  await shop?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A front on `root`, closed after the test file.
 * @param {Partial<import('../lib/serve/options.js').ServeOptionsInput>} options
 */
async function startFront(options) {
  const server = createServer({ root: out, logger: quiet, watch: false, ...options });
  const port = await listen(server);
  cleanups.push(() => closeServer(server));
  return port;
}
/** @type {(() => Promise<unknown>)[]} */
const cleanups = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Requests the shop got since `from` (an index into shop.requests). @param {number} from */
const shopGot = (from) => shop.requests.slice(from).map((r) => `${r.method} ${r.target}`);

describe('serve --origin in front of the shop', () => {
  /** @type {number} */ let port;
  beforeAll(async () => {
    port = await startFront({ origin: shop.origin, prices: FRONT_PRICES });
  });

  it('answers a product from the tree with its price filled, at its crawled URL and at its file, without asking the shop', async () => {
    const from = shop.requests.length;
    for (const target of ['/st/product.asp?SKUSetID=2', '/st/product2.htm', '/st/product.asp?SKUSetID=%32', '/st/./product2.htm', '//st/product2.htm', '/st/product2%2Ehtm']) {
      const answer = await send(port, target);
      expect(answer.status, target).toBe(200);
      expect(shopPrice(answer.text), target).toBe('$2.50');
    }
    expect((await send(port, '/st/product.asp?SKUSetID=2', { method: 'HEAD' })).status).toBe(200);
    expect(shopGot(from)).toEqual([]);
  });

  it('passes add-to-cart, a POST login and a checkout to the shop, cookies and all', async () => {
    const jar = new CookieJar();
    const from = shop.requests.length;
    const added = jar.keep(await send(port, '/st/cart.asp?add=3&qty=1'));
    expect(added.status).toBe(200);
    expect(added.text).toContain('Product 3');
    const login = jar.keep(await send(port, '/st/login.asp', {
      method: 'POST', body: 'user=alice', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header },
    }));
    expect(login.status).toBe(303);
    expect(login.headers.location).toBe('/st/checkout.asp');
    expect(login.headers['set-cookie']).toEqual(['session=u-alice; Path=/; HttpOnly', 'seen=1; Path=/']);
    const checkout = await send(port, String(login.headers.location), { headers: { cookie: jar.header } });
    expect(checkout.text).toContain('signed in as alice, 1 item(s)');
    const order = await send(port, '/st/checkout.asp', { method: 'POST', body: 'confirm=1', headers: { cookie: jar.header, 'content-type': 'application/x-www-form-urlencoded' } });
    expect(order.status).toBe(200);
    expect(order.text).toContain('order placed for alice: 1 item(s)');
    expect(shopGot(from)).toEqual(['GET /st/cart.asp?add=3&qty=1', 'POST /st/login.asp', 'GET /st/checkout.asp', 'POST /st/checkout.asp']);
  });

  it('answers the manifest\'s 301 itself, and a query the crawl did not fetch goes to the shop', async () => {
    const from = shop.requests.length;
    const moved = await send(port, '/st/old.asp');
    expect(moved.status).toBe(301);
    expect(moved.headers.location).toBe('/st/dir.asp');
    expect(shopGot(from)).toEqual([]);
    const other = await send(port, '/st/dir.asp?Start=3&Count=2');
    expect(other.text).toContain('Product 3');
    expect(shopGot(from)).toEqual(['GET /st/dir.asp?Start=3&Count=2']);
  });

  it('streams a request body to the shop and keeps the visitor\'s headers, less the hop-by-hop ones; Host and X-Forwarded-* are its own', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024, 'b');
    const answer = await send(port, '/st/echo.asp?x=1', {
      method: 'PUT',
      body,
      headers: {
        host: 'visitor.example', cookie: 'a=1', 'x-custom': 'kept', connection: 'keep-alive, x-secret', 'x-secret': 'hop', 'keep-alive': 'timeout=5', te: 'trailers',
        'x-forwarded-for': '6.6.6.6', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https', forwarded: 'for=6.6.6.6',
      },
    });
    const echo = JSON.parse(answer.text);
    expect(echo).toMatchObject({ method: 'PUT', url: '/st/echo.asp?x=1', length: body.length });
    /** @type {Record<string, string[]>} */
    const got = {};
    for (let i = 0; i < echo.headers.length; i += 2) (got[echo.headers[i].toLowerCase()] ??= []).push(echo.headers[i + 1]);
    expect(got.host).toEqual([new URL(shop.origin).host]);
    expect(got.cookie).toEqual(['a=1']);
    expect(got['x-custom']).toEqual(['kept']);
    expect(got['x-forwarded-for']).toEqual(['127.0.0.1']);
    expect(got['x-forwarded-host']).toEqual(['visitor.example']);
    expect(got['x-forwarded-proto']).toEqual(['http']);
    for (const name of ['x-secret', 'keep-alive', 'te', 'forwarded']) expect(got[name], name).toBeUndefined();
  });

  it('is no open proxy: an absolute-form target or a Host header cannot send a request anywhere but the origin', async () => {
    const other = await startAppsOrigin();
    cleanups.push(other.close);
    const from = shop.requests.length;
    const answer = await rawRequest(port, `GET http://127.0.0.1:${other.port}/st/echo.asp HTTP/1.1\r\nHost: 127.0.0.1:${other.port}\r\nConnection: close\r\n\r\n`);
    expect(answer.status).toBe(200);
    const viaHost = await send(port, '/st/search.asp?q=x', { headers: { host: `127.0.0.1:${other.port}` } });
    expect(viaHost.text).toContain('dynamic /st/search.asp');
    expect(other.requests).toEqual([]);
    expect(shopGot(from)).toEqual(['GET /st/echo.asp', 'GET /st/search.asp?q=x']);
  });

  it('refuses a request with both Content-Length and Transfer-Encoding (no smuggling), and never forwards it', async () => {
    const from = shop.requests.length;
    const smuggled = 'POST /st/echo.asp HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /st/cart.asp?add=666 HTTP/1.1\r\nHost: x\r\n\r\n';
    expect((await rawRequest(port, smuggled)).status).toBe(400);
    const twoLengths = 'POST /st/echo.asp HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcd';
    expect((await rawRequest(port, twoLengths)).status).toBe(400);
    expect(shopGot(from)).toEqual([]);
  });

  it('never serves nor proxies the manifest or hidden files; hostile paths reach neither a file nor the shop', async () => {
    const from = shop.requests.length;
    for (const target of ['/prerender-manifest.json', '/prerender-front.nginx.conf', '/.env', '/.prerender/state']) {
      expect((await send(port, target)).status, target).toBe(404);
    }
    for (const [target, status] of HOSTILE_TARGETS) {
      const answer = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      // A segment too long for any file of a tree is the origin's to answer (the shop: 404).
      expect(answer.status, target).toBe(status);
    }
    expect(shopGot(from)).toEqual([`GET /${'a'.repeat(300)}`]);
  });
});

describe('the routing decision', () => {
  const table = new RouteTable({ site: 'http://shop.invalid', pages: new Map([['/st/product.asp?SKUSetID=1', 'st/product1.htm']]) });

  it.each(HOSTILE_TARGETS)('never routes %s to a file of the tree', (target) => {
    const route = table.decide('GET', target);
    expect(['refuse', 'origin']).toContain(route.kind);
  });

  it('sends other methods, and --dynamic patterns, to the origin even for tree paths', () => {
    expect(table.decide('POST', '/st/product.asp?SKUSetID=1').kind).toBe('origin');
    expect(table.decide('GET', '/st/product.asp?SKUSetID=1')).toEqual({ kind: 'page', file: 'st/product1.htm' });
    const dynamic = new RouteTable({ site: 'http://shop.invalid', pages: table.pages, dynamic: ['/st/product*'] });
    expect(dynamic.decide('GET', '/st/product.asp?SKUSetID=1').kind).toBe('origin');
    expect(dynamic.decide('GET', '/st/product1.htm').kind).toBe('origin');
  });
});

describe('serve --origin on path-info and ;-query sites (MediaWiki, gitweb)', () => {
  /** @type {number} */ let port;
  /** @type {Awaited<ReturnType<typeof startAppsOrigin>>} */ let apps;
  beforeAll(async () => {
    const root = path.join(dir, 'apps');
    writeAppsTree(root);
    apps = await startAppsOrigin();
    cleanups.push(apps.close);
    port = await startFront({ root, origin: apps.origin, originHost: 'apps.invalid' });
  });

  it.each([
    ['/index.php/Main_Page', 'static Main Page'],
    ['/index.php/Main_Page.html', 'static Main Page'],
    ['/index.php/Help:Contents', 'static Help'],
    ['/gitweb.cgi?p=repo.git;a=commit;h=abc123', 'static commit abc123'],
    ['/gitweb.cgi?p=repo.git;a=summary', 'static summary'],
    ['/gitweb.cgi@p=repo.git;a=summary.html', 'static summary'],
  ])('%s comes from the tree', async (target, text) => {
    const from = apps.requests.length;
    const answer = await send(port, target);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(text);
    expect(apps.requests.length).toBe(from);
  });

  it.each([
    '/index.php?title=Main_Page&action=edit',
    '/index.php?title=Main_Page&action=history',
    '/index.php?search=foo&title=Special%3ASearch',
    '/index.php',
    '/index.php/Not_Crawled',
    '/index.php/Main_Page?action=raw',
    '/gitweb.cgi?p=repo.git;a=commit;h=def456',
    '/gitweb.cgi',
    '/',
  ])('%s reaches the origin as it is, with no redirect added', async (target) => {
    const answer = await send(port, target);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(`live GET ${target}`);
  });

  it('answers the manifest\'s redirect at the site\'s path, to the tree\'s page', async () => {
    const from = apps.requests.length;
    const moved = await send(port, '/wiki/Old_Name');
    expect([moved.status, moved.headers.location]).toEqual([301, '/index.php/Main_Page']);
    expect(apps.requests.length).toBe(from);
  });

  it('POSTs reach the origin, even at a tree path', async () => {
    const answer = await send(port, '/index.php/Main_Page', { method: 'POST', body: 'wpTextbox1=x' });
    expect(answer.text).toContain('live POST /index.php/Main_Page');
  });
});

describe('serve --origin when the origin fails', () => {
  it('answers our 502 at once when the origin is down', async () => {
    const closed = await freePort();
    const port = await startFront({ origin: `http://127.0.0.1:${closed}` });
    const answer = await send(port, '/st/cart.asp?add=1');
    expect(answer.status).toBe(502);
    expect(answer.text).toContain('The live site cannot be reached');
    // The tree still answers.
    expect((await send(port, '/st/product1.htm')).status).toBe(200);
  });

  it('answers our 504 when the origin is slower than --origin-timeout', async () => {
    const port = await startFront({ origin: shop.origin, originTimeoutMs: 200 });
    // The origin answers after 20 s and send() waits 10 s at most: a 504 is ours, before the origin's answer.
    const answer = await send(port, '/st/slow.asp?ms=20000');
    expect(answer.status).toBe(504);
    expect(answer.text).toContain('did not answer in time');
  });
});

describe('prerender serve --origin streams large answers', () => {
  /** Peak resident memory of a process so far, in bytes (Linux). @param {number} pid */
  const peakRss = (pid) => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;

  it('a 100 MB download from the origin passes with flat memory, at the pace of the visitor', async () => {
    const { child, done } = startCli(['serve', out, '--origin', shop.origin, '--port', '0', '--max-rss', 'off'], { limitMs: 120_000 });
    cleanups.push(async () => {
      child.kill('SIGTERM');
      await done;
    });
    let stdout = '';
    child.stdout?.on('data', (chunk) => (stdout += chunk));
    await until(() => /listening on http:\/\/[^:]+:\d+/.test(stdout) || child.exitCode !== null, 30_000);
    const port = Number(/listening on http:\/\/[^:]+:(\d+)/.exec(stdout)?.[1]);
    const pid = /** @type {number} */ (child.pid);
    // Warm: the proxy's code loaded, a connection to the origin open.
    for (let i = 0; i < 3; i++) expect((await send(port, '/download/big.bin?bytes=1048576')).text.length).toBe(1048576);
    const before = peakRss(pid);

    const total = 100 * 1024 * 1024;
    const received = await new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/download/big.bin?bytes=${total}`, agent: false }, (res) => {
        let bytes = 0;
        let paused = false;
        res.on('data', (chunk) => {
          bytes += chunk.length;
          if (paused || bytes < 1024 * 1024) return;
          // The visitor stops reading: the origin must end up waiting for it, far from the end.
          paused = true;
          res.pause();
          let last = -1;
          let still = 0;
          until(() => {
            still = shop.downloads.waiting && shop.downloads.written === last ? still + 1 : 0;
            last = shop.downloads.written;
            return shop.downloads.done || still >= 5;
          }, 30_000).then(() => {
            try {
              expect(shop.downloads.done).toBe(false);
              expect(shop.downloads.written).toBeLessThan(total / 2);
            } catch (error) {
              reject(error);
            }
            res.resume();
          }, reject);
        });
        res.on('end', () => resolve(bytes));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    expect(received).toBe(total);
    // Not the 100 MB: what is in flight between the two sockets, plus the chunks the GC has not yet reclaimed
    // (their share varies with the machine's load). Holding the answer would add the whole 100 MB.
    expect(peakRss(pid) - before).toBeLessThan(72 * 1024 * 1024);
  });
});

describe('serve --origin: the rest of the contract', () => {
  it('takes X-Forwarded-* from the client only with trustProxy', async () => {
    const port = await startFront({ origin: shop.origin, trustProxy: true });
    const answer = await send(port, '/st/echo.asp', { headers: { 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'shop.example' } });
    const echo = JSON.parse(answer.text);
    /** @type {Record<string, string>} */
    const got = {};
    for (let i = 0; i < echo.headers.length; i += 2) got[echo.headers[i].toLowerCase()] = echo.headers[i + 1];
    expect([got['x-forwarded-for'], got['x-forwarded-proto'], got['x-forwarded-host']]).toEqual(['6.6.6.6, 127.0.0.1', 'https', 'shop.example']);
  });

  it('adds no redirect of its own: a tree directory named without its slash is the origin\'s, with it the tree\'s', async () => {
    fs.mkdirSync(path.join(out, 'help'), { recursive: true });
    fs.writeFileSync(path.join(out, 'help', 'index.html'), '<html>tree help</html>');
    const port = await startFront({ origin: shop.origin });
    const from = shop.requests.length;
    const bare = await send(port, '/help?x=1');
    expect([bare.status, bare.headers.location]).toEqual([404, undefined]);
    expect(shopGot(from)).toEqual(['GET /help?x=1']);
    expect((await send(port, '/help/')).text).toBe('<html>tree help</html>');
    // Without --origin, serve still adds it.
    const plain = await startFront({});
    expect((await send(plain, '/help')).headers.location).toBe('/help/');
    fs.rmSync(path.join(out, 'help'), { recursive: true });
  });

  it('never serves the front\'s configurations, with or without --origin', async () => {
    fs.writeFileSync(path.join(out, 'prerender-front.nginx.conf'), 'upstream secret { server 10.0.0.1; }');
    for (const port of [await startFront({}), await startFront({ origin: shop.origin })]) {
      const answer = await send(port, '/prerender-front.nginx.conf');
      expect(answer.status).toBe(404);
      expect(answer.text).not.toContain('10.0.0.1');
    }
    fs.rmSync(path.join(out, 'prerender-front.nginx.conf'));
  });

  it('refuses a bad --origin or --dynamic as usage errors', () => {
    expect(() => createServer({ root: out, logger: quiet, origin: 'ftp://shop' })).toThrow(/--origin must be the live site/);
    expect(() => createServer({ root: out, logger: quiet, origin: 'http://shop/st/' })).toThrow(/without a path/);
    expect(() => createServer({ root: out, logger: quiet, dynamic: ['/cart*'] })).toThrow(/--dynamic needs --origin/);
  });
});

describe('deploy ships the front\'s configuration with the release', () => {
  it('counts OUT/prerender-front.nginx.conf and .vcl as part of the tree, not as unlisted files', async () => {
    const { readSource } = await import('../lib/deploy/source.js');
    const copy = path.join(dir, 'deploy-copy');
    fs.cpSync(out, copy, { recursive: true });
    fs.rmSync(path.join(copy, 'help'), { recursive: true, force: true });
    fs.writeFileSync(path.join(copy, 'prerender-front.nginx.conf'), '# nginx\n');
    fs.writeFileSync(path.join(copy, 'prerender-front.vcl'), 'vcl 4.1;\n');
    const tree = await readSource(copy);
    expect(tree.unlisted).toEqual([]);
    expect([...tree.files.keys()]).toEqual(expect.arrayContaining(['prerender-front.nginx.conf', 'prerender-front.vcl']));
  });
});

describe('serve --origin: the bounds on the origin', () => {
  it('answers 503 at once when more requests wait for the origin than originQueue', async () => {
    const server = createServer({ root: out, logger: quiet, watch: false, origin: shop.origin, originConnections: 1, originQueue: 1, originTimeoutMs: 60_000 });
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    const pool = /** @type {NonNullable<typeof server.front>} */ (server.front).proxy?.pool;
    /** @type {import('node:http').ClientRequest[]} */
    const held = [];
    const hold = () => {
      const req = http.get({ host: '127.0.0.1', port, path: '/st/slow.asp?ms=60000', agent: false });
      req.on('error', () => {});
      held.push(req);
    };
    // The first holds the one connection to the origin, the second waits for it: a third is turned away.
    hold();
    await until(() => pool?.stats.running === 1, 30_000);
    hold();
    await until(() => pool?.stats.queued === 1, 30_000);
    const busy = await send(port, '/st/cart.asp?add=1');
    expect(busy.status).toBe(503);
    expect(busy.headers['retry-after']).toBe('1');
    // The visitors leave: the running request is cancelled, the waiting one never sent.
    for (const req of held) req.destroy();
    await until(() => pool?.stats.pending === 0, 10_000);
    expect(shop.requests.filter((r) => r.target === '/st/slow.asp?ms=60000')).toHaveLength(1);
  });

  it('keeps its connections to the origin alive: twenty requests in a row, one connection', async () => {
    const origin = http.createServer((req, res) => res.end('ok'));
    let connections = 0;
    origin.on('connection', () => connections++);
    const originPort = await listen(origin);
    cleanups.push(() => closeServer(origin));
    const port = await startFront({ origin: `http://127.0.0.1:${originPort}` });
    for (let i = 0; i < 20; i++) expect((await send(port, `/st/cart.asp?add=${i}`)).text).toBe('ok');
    expect(connections).toBe(1);
  });

  it('serves a file put in the tree after its path went to the origin, within a few seconds', async () => {
    const origin = http.createServer((req, res) => res.end('from the origin'));
    const originPort = await listen(origin);
    cleanups.push(() => closeServer(origin));
    const port = await startFront({ origin: `http://127.0.0.1:${originPort}` });
    const file = path.join(out, 'st', 'late.txt');
    cleanups.push(async () => fs.rmSync(file, { force: true }));
    expect((await send(port, '/st/late.txt')).text).toBe('from the origin');
    fs.writeFileSync(file, 'from the tree');
    // Bounded by the lookup's one-second freshness, with room for a busy machine.
    await until(async () => (await send(port, '/st/late.txt')).text === 'from the tree', 20_000);
  });

  it('drops the origin\'s hop-by-hop headers from its answer, those its Connection lists included', async () => {
    const origin = http.createServer((req, res) => {
      res.writeHead(200, [['Connection', 'keep-alive, X-Hop'], ['X-Hop', '1'], ['X-Kept', '1'], ['Keep-Alive', 'timeout=5'], ['Trailer', 'x-t']].flat());
      res.end('ok');
    });
    const originPort = await listen(origin);
    cleanups.push(() => closeServer(origin));
    const port = await startFront({ origin: `http://127.0.0.1:${originPort}` });
    const answer = await send(port, '/st/cart.asp?hop=1');
    expect([answer.text, answer.headers['x-kept'], answer.headers['x-hop'], answer.headers.trailer]).toEqual(['ok', '1', undefined, undefined]);
  });

  it('sends an answer read whole with a Content-Length, and one still coming as it comes', async () => {
    /** @type {(() => void) | null} */ let finish = null;
    const origin = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }); // chunked: no length from the origin
      if (req.url === '/whole') return res.end('all of it');
      res.write('first part;');
      finish = () => res.end('second part');
    });
    const originPort = await listen(origin);
    cleanups.push(() => closeServer(origin));
    const port = await startFront({ origin: `http://127.0.0.1:${originPort}` });
    const whole = await send(port, '/whole');
    expect([whole.status, whole.headers['content-length'], whole.headers['transfer-encoding'], whole.text]).toEqual([200, '9', undefined, 'all of it']);
    // The first part reaches the visitor while the origin holds the rest.
    const res = await new Promise((resolve, reject) => http.get({ host: '127.0.0.1', port, path: '/parts', agent: false }, resolve).on('error', reject));
    expect([res.headers['content-length'], res.headers['transfer-encoding']]).toEqual([undefined, 'chunked']);
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk) => (text += chunk));
    await until(() => text === 'first part;', 10_000);
    /** @type {() => void} */ (/** @type {unknown} */ (finish))();
    await new Promise((resolve) => res.on('end', resolve));
    expect(text).toBe('first part;second part');
  });

  it('cancels the origin\'s request when the visitor leaves before the answer', async () => {
    let closed = false;
    let got = false;
    const origin = http.createServer((req) => {
      got = true;
      req.socket.on('close', () => (closed = true));
    });
    const originPort = await listen(origin);
    cleanups.push(() => closeServer(origin));
    const port = await startFront({ origin: `http://127.0.0.1:${originPort}`, originTimeoutMs: 60_000 });
    const req = http.get({ host: '127.0.0.1', port, path: '/never', agent: false });
    req.on('error', () => {});
    await until(() => got, 10_000);
    req.destroy();
    await until(() => closed, 10_000);
    expect(closed).toBe(true);
  });
});

describe('prerender front (the CLI)', () => {
  it('writes the nginx and Varnish configurations into OUT, or to --output, and says what is wrong with its options', async () => {
    const copy = path.join(dir, 'cli-copy');
    fs.cpSync(out, copy, { recursive: true });
    const both = await runCli(['front', copy, '--nginx', '--varnish', '--origin', shop.origin, '--dynamic', '/st/cart.asp*'], { cwd: dir });
    expect(both.code).toBe(0);
    expect(both.stdout).toContain(`nginx: wrote ${path.join(copy, 'prerender-front.nginx.conf')}`);
    const nginx = fs.readFileSync(path.join(copy, 'prerender-front.nginx.conf'), 'utf8');
    expect(nginx).toContain('"/st/product.asp?SKUSetID=1" "/st/product1.htm";');
    expect(nginx).toContain('"/st/old.asp" "/st/dir.asp";');
    expect(nginx).toContain('"~^/st/cart\\\\.asp.*" 1;');
    expect(fs.readFileSync(path.join(copy, 'prerender-front.vcl'), 'utf8')).toContain('req.url ~ "^/st/cart\\.asp.*"');
    // The tree is a filter crawl: the edge servers cannot fill its slots, and it says so.
    expect(both.stderr).toMatch(/nginx: the tree's price slots are for "filter"/);
    const output = path.join(dir, 'front.conf');
    expect((await runCli(['front', copy, '--nginx', '--origin', shop.origin, '--output', output], { cwd: dir })).code).toBe(0);
    expect(fs.readFileSync(output, 'utf8')).toContain('upstream prerender_origin');
    for (const [args, message] of /** @type {const} */ ([
      [['--nginx'], /--origin is required/],
      [['--origin', shop.origin], /--nginx, --varnish, or both/],
      [['--nginx', '--varnish', '--origin', shop.origin, '--output', output], /--output names one file/],
      [['--nginx', '--origin', 'http://shop/path'], /without a path/],
      [['--varnish', '--origin', shop.origin, '--tree', 'nowhere'], /--tree takes host:port/],
    ])) {
      const result = await runCli(['front', copy, ...args], { cwd: dir });
      expect([result.code, result.stderr]).toEqual([2, expect.stringMatching(message)]);
    }
  });
});
