// @ts-check
/**
 * `prerender serve` in production (issue 12; issue 10 item 14), through a
 * real server: prices from a 50 ms endpoint on a 200-slot page and in a cold
 * burst; the endpoint down, slow, answering HTML or control characters;
 * compressed plain files; absolute-form targets; `/` on a tree whose crawl
 * root was not `/`; no price-source warning for a tree without slots.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../lib/serve/index.js';
import { benchPrice, startPriceEndpoint } from '../fixtures/price-endpoint.js';
import { closeServer, listen, rawRequest, request, waitFor } from '../fixtures/serve/http.js';
import { buildServeTree, productPieces, writeTree } from '../fixtures/serve/tree.js';

/** @type {string} */
let dir;
/** @type {(() => Promise<unknown>)[]} */
let cleanups;
/** @type {string[]} */
let log;
const logger = { warn: (/** @type {string} */ m) => void log.push(`warn ${m}`), info: (/** @type {string} */ m) => void log.push(`info ${m}`) };

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-serve-prod-'));
  cleanups = [];
  log = [];
});
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** @param {Partial<import('../lib/serve/options.js').ServeOptionsInput>} [options] */
async function serve(options = {}) {
  const server = createServer({ root: dir, logger, watch: false, ...options });
  const port = await listen(server);
  cleanups.push(() => closeServer(server));
  return { port, server };
}

/** @param {Parameters<typeof startPriceEndpoint>[0]} options */
async function endpointWith(options) {
  const endpoint = await startPriceEndpoint(options);
  cleanups.push(() => endpoint.close());
  return endpoint;
}

/** A page with n price slots, SKU-1..SKU-n. */
function bigPage(/** @type {number} */ n) {
  /** @type {import('../fixtures/serve/tree.js').Piece[]} */
  const pieces = ['<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><ul>\n'];
  for (let i = 1; i <= n; i++) pieces.push(`<li>Item ${i}: <span class="p">`, { sku: `SKU-${i}` }, '</span></li>\n');
  pieces.push('</ul></body></html>\n');
  return pieces;
}

/** The texts of the price slots of bigPage. */
const slotsOf = (/** @type {string} */ html) => [...html.matchAll(/<span class="p">([^<]*)<\/span>/g)].map((m) => m[1]);

/** Many GETs at once, each on its own connection. */
function burst(/** @type {number} */ port, /** @type {string[]} */ targets) {
  return Promise.all(targets.map((target) => new Promise((resolve, reject) => {
    const started = performance.now();
    http.get({ host: '127.0.0.1', port, path: target, agent: false, headers: { cookie: 'zip=10001' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body, ms: performance.now() - started }));
    }).on('error', reject);
  })));
}

describe('prices from an endpoint, under load', () => {
  it.each([
    ['one SKU per request', 'template'],
    ['{skus} batches', 'batchTemplate'],
  ])('a 200-slot page on a 50 ms endpoint gets 200 prices (%s)', async (_label, which) => {
    writeTree(dir, [{ file: 'list.html', pieces: bigPage(200) }]);
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 50 });
    // One SKU per request on 4 connections: 50 rounds of 50 ms (2.5 s) wait in the queue, more than the
    // 2 s timeout, which must not count them. (Timeouts above the defaults: this process is the client, the
    // server and the endpoint, on a shared machine.)
    const options = which === 'template' ? { priceConnections: 4, priceTimeoutMs: 2000, priceQueueMs: 30_000 } : {};
    const { port, server } = await serve({ prices: /** @type {string} */ (endpoint[/** @type {'template' | 'batchTemplate'} */ (which)]), ...options });
    const res = await request(port, '/list.html?zip=10001', { timeoutMs: 50_000 });
    const slots = slotsOf(res.text);
    expect(slots).toHaveLength(200);
    const stats = /** @type {import('../lib/prices/http-source.js').HttpPriceSource} */ (server.priceFilter.prices).stats;
    expect(slots.filter((s) => !s.startsWith('$')), JSON.stringify(stats)).toEqual([]);
    expect(slots[199]).toBe('$200.99 (10001)');
    // and the next page, other SKUs on the same endpoint, is not hurt by the first
    expect(slotsOf((await request(port, '/list.html?zip=90210', { timeoutMs: 50_000 })).text).filter((s) => !s.startsWith('$'))).toEqual([]);
  });

  it('1,000 concurrent requests over 1,000 pages on a cold cache get >= 99% real prices ({skus})', async () => {
    const specs = Array.from({ length: 1000 }, (_, i) => ({ file: `st/product${i + 1}.htm`, pieces: productPieces(i + 1, { size: 600 }) }));
    writeTree(dir, specs);
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 50 });
    // (a price timeout well above the 300 ms default: the client, the server and the endpoint share this process, on a shared machine)
    // Hang bounds on headers and requests: a loaded machine may take seconds to read 1,000 connections' requests.
    const { port, server } = await serve({ prices: endpoint.batchTemplate, priceTimeoutMs: 5000, headersTimeoutMs: 120_000, requestTimeoutMs: 120_000 });
    const answers = /** @type {{ status: number, body: string }[]} */ (await burst(port, specs.map((s) => `/${s.file}`)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const priced = answers.filter((a) => /<span class="amount">\$\d+\.99 \(10001\)<\/span>/.test(a.body)).length;
    const stats = /** @type {import('../lib/prices/http-source.js').HttpPriceSource} */ (server.priceFilter.prices).stats;
    expect.soft(stats, JSON.stringify(stats)).toMatchObject({ timeouts: 0, overloaded: 0 });
    expect(priced / answers.length).toBeGreaterThanOrEqual(0.99);
    // lookups of requests read together share requests (the burst looks up 1,500 SKUs)
    expect(endpoint.hits.total).toBeLessThan(1500);
  });

  it('a cold burst longer than the old 1 s queue bound gets >= 99% real prices (one SKU per request, default pool and queue bound)', async () => {
    // 100 pages, ~150 lookups, one request each, on a 500 ms endpoint: 3 rounds of 64 connections (~1.5 s), more
    // than the old 1 s bound on 32 connections (5 rounds, 2.5 s) allowed. Slow answers, so that the time a busy
    // machine adds to each (the client, the server and the endpoint share one process) stays small beside them:
    // the bound (3 s) sheds lookups once an answer takes over 1 s. The 1,000-request burst on a 50 ms endpoint
    // is in bench/serve-bench.js.
    const specs = Array.from({ length: 100 }, (_, i) => ({ file: `st/product${i + 1}.htm`, pieces: productPieces(i + 1, { size: 600 }) }));
    writeTree(dir, specs);
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 500 });
    // (a timeout above the 300 ms default, counted from the send: a shared machine; the pool and the queue bound are the defaults)
    const { port, server } = await serve({ prices: endpoint.template, priceTimeoutMs: 10_000, headersTimeoutMs: 120_000, requestTimeoutMs: 120_000 });
    const answers = /** @type {{ status: number, body: string }[]} */ (await burst(port, specs.map((s) => `/${s.file}`)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const priced = answers.filter((a) => /<span class="amount">\$\d+\.99 \(10001\)<\/span>/.test(a.body)).length;
    const stats = /** @type {import('../lib/prices/http-source.js').HttpPriceSource} */ (server.priceFilter.prices).stats;
    expect(priced / answers.length, JSON.stringify(stats)).toBeGreaterThanOrEqual(0.99);
  });

  it('with the endpoint down, every page is served at once with the fallback, not after a timeout', async () => {
    buildServeTree(dir, { products: 40 });
    const endpoint = await endpointWith({ prices: benchPrice });
    const template = endpoint.template;
    await endpoint.close();
    // Long timeouts: pages must not wait for them (refused connections open the circuit); the 300 ms figure
    // with the default settings is measured in bench/serve-bench.js (a test on a shared machine cannot promise it).
    const { port, server } = await serve({ prices: template, fallback: 'See cart', priceTimeoutMs: 3000, priceQueueMs: 3000 });
    // Time in the server, from the request to the end of the answer (the client's connect is not the server's doing).
    /** @type {number[]} */
    const times = [];
    server.on('request', (_req, res) => {
      const started = performance.now();
      res.on('finish', () => times.push(performance.now() - started));
    });
    const answers = /** @type {{ status: number, body: string, ms: number }[]} */ (await burst(port, Array.from({ length: 40 }, (_, i) => `/st/product${i + 1}.htm`)));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.body).toContain('<span class="amount">See cart</span>');
    }
    expect(times).toHaveLength(40);
    expect(Math.max(...times)).toBeLessThan(1000);
    expect(log.join('\n')).toMatch(/circuit open/);
  });

  it('with the endpoint hanging, pages get the fallback within the price deadline', async () => {
    buildServeTree(dir, { products: 4 });
    const endpoint = await endpointWith({ prices: benchPrice });
    endpoint.setMode('slow');
    const { port, server } = await serve({ prices: endpoint.template, fallback: 'See cart', priceTimeoutMs: 100, priceQueueMs: 100 });
    /** @type {number[]} */
    const times = [];
    server.on('request', (_req, res) => {
      const started = performance.now();
      res.on('finish', () => times.push(performance.now() - started));
    });
    const res = await request(port, '/st/product2.htm?zip=10001');
    expect(res.text).toContain('<span class="amount">See cart</span>');
    // within the deadline (100 + 100 + 50 ms), with room for a loaded machine; never held until the endpoint answers
    expect(times[0]).toBeGreaterThanOrEqual(100);
    expect(times[0]).toBeLessThan(2000);
  });

  it('an HTML error page from the endpoint is never shown: the fallback is', async () => {
    buildServeTree(dir, { products: 2 });
    const endpoint = await endpointWith({ prices: benchPrice });
    endpoint.setMode('html');
    const { port } = await serve({ prices: endpoint.template, fallback: 'See cart' });
    const res = await request(port, '/st/product1.htm?zip=10001');
    expect(res.text).toContain('<span class="amount">See cart</span>');
    expect(res.text).not.toMatch(/Bad Gateway/);
  });

  it('control characters and invalid UTF-8 from the endpoint are stripped from the price', async () => {
    buildServeTree(dir, { products: 2 });
    const endpoint = await endpointWith({ prices: benchPrice });
    endpoint.setMode('control');
    const { port } = await serve({ prices: endpoint.template });
    const res = await request(port, '/st/product1.htm?zip=10001');
    const price = /<span class="amount">([^<]*)<\/span>/.exec(res.text)?.[1];
    expect(price).toBe('$1[31m.99 X-Injected: 1!');
     
    expect(res.body.toString('latin1')).not.toMatch(/[\u0000\u001b\r]/);
  });
});

describe('plain files', () => {
  it('compresses a plain page on the fly once (gzip and br), with its own ETag per encoding and 304s', async () => {
    buildServeTree(dir);
    const html = `<!DOCTYPE html><html><body>${'<p>All about our shop, its history and its people.</p>\n'.repeat(100)}</body></html>\n`;
    fs.writeFileSync(path.join(dir, 'about.html'), html);
    const { port, server } = await serve();
    const plain = await request(port, '/about.html');
    expect(plain.text).toBe(html);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gz = await request(port, '/about.html', { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(gz.body).toString()).toBe(html);
    const br = await request(port, '/about.html', { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(zlib.brotliDecompressSync(br.body).toString()).toBe(html);
    expect(br.body.length).toBeLessThan(html.length / 5);
    expect(new Set([plain.headers.etag, gz.headers.etag, br.headers.etag]).size).toBe(3);
    expect(br.headers.vary).toBe('Accept-Encoding');
    const again = await request(port, '/about.html', { headers: { 'accept-encoding': 'br', 'if-none-match': /** @type {string} */ (br.headers.etag) } });
    expect(again.status).toBe(304);
    // counted in the one budget
    expect(server.priceFilter.cache.calculatedSize).toBeGreaterThanOrEqual(html.length + br.body.length);
  });

  it('serves .gz/.br siblings when present, and small or incompressible files as they are', async () => {
    buildServeTree(dir);
    const { port } = await serve();
    const css = await request(port, '/assets/site.css', { headers: { 'accept-encoding': 'br' } });
    expect(css.headers['content-encoding']).toBe('br');
    expect(css.body.equals(fs.readFileSync(path.join(dir, 'assets/site.css.br')))).toBe(true);
    const txt = await request(port, '/assets/plain.txt', { headers: { 'accept-encoding': 'gzip' } });
    expect(txt.headers['content-encoding']).toBeUndefined();
    expect(txt.text).toBe('plain text\n');
  });

  it('sees a changed file within a second (a cached file is stat-ed at most once a second)', async () => {
    buildServeTree(dir);
    const { port } = await serve();
    expect((await request(port, '/assets/plain.txt')).text).toBe('plain text\n');
    fs.writeFileSync(path.join(dir, 'assets/plain.txt'), 'new text, longer\n');
    await waitFor(async () => (await request(port, '/assets/plain.txt')).text === 'new text, longer\n', { timeoutMs: 30_000, what: 'the new file' });
  });
});

describe('request targets and the root', () => {
  it('accepts the absolute form of the request target, with the same path checks', async () => {
    buildServeTree(dir);
    const { port } = await serve({ prices: { 'SKU-1': { '*': '$5' } } });
    const ok = await rawRequest(port, 'GET http://shop.example/st/product1.htm?zip=10001 HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n');
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('<span class="amount">$5</span>');
    const plain = await rawRequest(port, 'GET http://shop.example/infodir/ HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n');
    expect(plain.status).toBe(200);
    expect(plain.text).toContain('About us');
    for (const target of ['http://shop.example/../etc/passwd', 'http://shop.example/%2e%2e/%2e%2e/etc/passwd', 'http://user@shop.example/infodir/']) {
      const bad = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n`);
      expect(bad.status, target).toBe(400);
    }
  });

  it('answers / with a redirect to the crawl root\'s page when the crawl root was not / (and says so)', async () => {
    writeTree(dir, [
      { file: 'st/dir.asp.html', url: 'http://shop.invalid/st/dir.asp', pieces: ['<html><body><a href="product1.htm">1</a></body></html>\n'] },
      { file: 'st/product1.htm', pieces: productPieces(1) },
    ]);
    const { port } = await serve({ prices: { 'SKU-1': { '*': '$5' } } });
    const res = await request(port, '/?zip=10001');
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/st/dir.asp.html?zip=10001');
    expect(log.join('\n')).toMatch(/no index\.html: \/ redirects to \/st\/dir\.asp\.html, the page of the crawl root http:\/\/shop\.invalid\/st\/dir\.asp/);
  });

  it('spells the Location of / as the tree links the page (gitweb.cgi@p=repo.git;a=summary.html), not percent-encoded', async () => {
    writeTree(dir, [{ file: 'gitweb.cgi@p=repo.git;a=summary.html', url: 'http://git.invalid/gitweb.cgi?p=repo.git;a=summary', pieces: ['<html>summary</html>'] }]);
    const file = path.join(dir, 'prerender-manifest.json');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('"http://shop.invalid/st/dir.asp"', '"http://git.invalid/gitweb.cgi?p=repo.git;a=summary"'));
    const { port } = await serve();
    const res = await request(port, '/');
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/gitweb.cgi@p=repo.git;a=summary.html');
    expect((await request(port, String(res.headers.location))).text).toBe('<html>summary</html>');
  });

  it('says why / answers 404 when the crawl root\'s page was not written', async () => {
    writeTree(dir, [{ file: 'st/product1.htm', pieces: productPieces(1) }]);
    const { port } = await serve({ prices: { 'SKU-1': { '*': '$5' } } });
    expect((await request(port, '/')).status).toBe(404);
    expect(log.join('\n')).toMatch(/no index\.html and the page of the crawl root http:\/\/shop\.invalid\/st\/dir\.asp was not written: \/ answers 404/);
  });

  it('an index.html at the top wins', async () => {
    writeTree(dir, [
      { file: 'index.html', url: 'http://shop.invalid/', pieces: ['<html>home</html>'] },
      { file: 'st/dir.asp.html', url: 'http://shop.invalid/st/dir.asp', pieces: ['<html>dir</html>'] },
    ]);
    const { port } = await serve();
    expect((await request(port, '/')).text).toBe('<html>home</html>');
  });
});

describe('price source warnings', () => {
  it('no warning about a missing price source for a tree without price slots', async () => {
    writeTree(dir, [{ file: 'index.html', pieces: ['<html>home</html>'] }]);
    await serve();
    expect(log.filter((l) => /price source/.test(l))).toEqual([]);
  });

  it('a warning when the tree has price slots', async () => {
    buildServeTree(dir);
    await serve();
    expect(log.filter((l) => /no price source given/.test(l))).toHaveLength(1);
  });
});
