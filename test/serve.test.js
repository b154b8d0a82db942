// @ts-check
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import http from 'node:http';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPriceFilter, createServer, runServeCommand } from '../lib/serve/index.js';
import { UsageError } from '../lib/errors.js';
import { buildServeTree, writeManifest, writePrices, writeTree, productPieces } from '../fixtures/serve/tree.js';
import { closeServer, listen, nextEvent, rawRequest, request, waitFor } from '../fixtures/serve/http.js';
import { startPriceEndpoint } from '../fixtures/price-endpoint.js';

const PRICES = {
  'SKU-1': { '10001': '$10.00', '90210': '$12.50', '*': '$11.00' },
  'SKU-2': { '10001': '$20.00', '*': '$21.00' },
  'SKU-2-CASE': { '*': '$25.00' },
  'SKU-3': { '10001': '$30.00' },
  CAFE: { '*': '12,50 €' },
};

/** @type {string} */
let dir;
/** @type {(() => Promise<unknown>)[]} */
let cleanups;
/** @type {string[]} */
let warnings;
const logger = { warn: (/** @type {string} */ m) => void warnings.push(m), info: () => {} };

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-serve-'));
  cleanups = [];
  warnings = [];
});
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * @param {Partial<import('../lib/serve/options.js').ServeOptionsInput>} [options]
 */
async function serve(options = {}) {
  const server = createServer({ root: path.join(dir, 'out'), logger, ...options });
  const port = await listen(server);
  cleanups.push(() => closeServer(server));
  await server.priceFilter.ready;
  return { port, server, filter: server.priceFilter };
}

function tree(options = {}) {
  const out = path.join(dir, 'out');
  fs.mkdirSync(out);
  return buildServeTree(out, options);
}

/** The text in the first price slot of a product page. */
function firstPrice(/** @type {string} */ html) {
  return /<span class="amount">([^]*?)<\/span>/.exec(html)?.[1];
}

describe('prices per zip', () => {
  beforeEach(() => {
    tree();
    writePrices(path.join(dir, 'prices.json'), PRICES);
  });

  it('fills from the zip cookie, the zip query, the default and the fallback', async () => {
    const { port } = await serve({ prices: path.join(dir, 'prices.json'), fallback: 'Call us' });
    const cookie = await request(port, '/st/product1.htm', { headers: { cookie: 'a=b; zip=90210; c=d' } });
    expect(cookie.status).toBe(200);
    expect(firstPrice(cookie.text)).toBe('$12.50');
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');
    // query wins over cookie
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001', { headers: { cookie: 'zip=90210' } })).text)).toBe('$10.00');
    // unknown zip and missing zip: the SKU's default
    expect(firstPrice((await request(port, '/st/product1.htm?zip=55555')).text)).toBe('$11.00');
    expect(firstPrice((await request(port, '/st/product1.htm')).text)).toBe('$11.00');
    // no default for SKU-3: the fallback
    expect(firstPrice((await request(port, '/st/product3.htm?zip=55555')).text)).toBe('Call us');
    expect(firstPrice((await request(port, '/st/product3.htm?zip=10001')).text)).toBe('$30.00');
    // an SKU with no prices at all: the fallback
    expect(firstPrice((await request(port, '/st/product4.htm')).text)).toBe('Call us');
  });

  it('fills every slot of a page, each with its own SKU', async () => {
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    const res = await request(port, '/st/product2.htm', { headers: { cookie: 'zip=10001' } });
    expect(res.text).toContain('<span class="amount">$20.00</span>');
    expect(res.text).toContain('With case: <span>$25.00</span>');
    expect(res.text).not.toContain('prerender:price');
  });

  it('uses --default-zip when the request has no zip', async () => {
    const { port } = await serve({ prices: path.join(dir, 'prices.json'), defaultZip: '90210' });
    expect(firstPrice((await request(port, '/st/product1.htm')).text)).toBe('$12.50');
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');
  });

  it('takes a CSV price file', async () => {
    writePrices(path.join(dir, 'prices.csv'), { 'SKU-1': { '10001': '$1,000.00', '*': 'from "$9"' } });
    const { port } = await serve({ prices: path.join(dir, 'prices.csv') });
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$1,000.00');
    expect(firstPrice((await request(port, '/st/product1.htm')).text)).toBe('from &quot;$9&quot;');
  });

  it('sends Cache-Control: private and Vary on filled pages', async () => {
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    const res = await request(port, '/st/product1.htm');
    expect(res.headers['cache-control']).toMatch(/^private/);
    expect(res.headers.vary).toMatch(/Cookie/);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(Number(res.headers['content-length'])).toBe(res.body.length);
    expect(res.headers.etag).toMatch(/^W\/"[\w-]+"$/);
  });

  it('gives filled pages a weak ETag from the page and its prices, and answers If-None-Match with 304', async () => {
    const prices = writePrices(path.join(dir, 'prices.json'), PRICES);
    const { port } = await serve({ prices });
    const first = await request(port, '/st/product1.htm?zip=10001');
    const etag = /** @type {string} */ (first.headers.etag);
    expect(etag).toMatch(/^W\//);
    const again = await request(port, '/st/product1.htm?zip=10001', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect(again.headers.etag).toBe(etag);
    expect(again.headers['cache-control']).toMatch(/^private/);
    // another zip, other prices: another ETag, a full answer
    const other = await request(port, '/st/product1.htm?zip=90210', { headers: { 'if-none-match': etag } });
    expect(other.status).toBe(200);
    expect(other.headers.etag).not.toBe(etag);
    // the price changes: the old ETag no longer matches
    writePrices(prices, { ...PRICES, 'SKU-1': { '10001': '$99.00' } });
    await waitFor(async () => firstPrice((await request(port, '/st/product1.htm?zip=10001')).text) === '$99.00', { what: 'the new price', timeoutMs: 60_000 });
    const changed = await request(port, '/st/product1.htm?zip=10001', { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
  });

  it('compresses filled pages with brotli when the client prefers it', async () => {
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    const plain = await request(port, '/st/product2.htm?zip=10001');
    for (let i = 0; i < 2; i++) {
      const br = await request(port, '/st/product2.htm?zip=10001', { headers: { 'accept-encoding': 'gzip, deflate, br' } });
      expect(br.headers['content-encoding']).toBe('br');
      expect(zlib.brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
      expect(br.headers.etag).toBe(plain.headers.etag);
    }
    const gz = await request(port, '/st/product2.htm?zip=10001', { headers: { 'accept-encoding': 'gzip, br;q=0.5' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
  });

  it('compresses a large filled page (off the event loop) and a usual one alike: brotli and gzip decode to the identity answer', async () => {
    const out = path.join(dir, 'big');
    fs.mkdirSync(out);
    writeTree(out, [
      { file: 'st/big.htm', pieces: productPieces(7, { size: 200_000, slots: 2 }) },
      { file: 'st/small.htm', pieces: productPieces(8, { size: 15_000, slots: 2 }) },
    ]);
    const { port } = await serve({ root: out, prices: { 'SKU-7': { '*': '$7' }, 'SKU-7-CASE': { '*': '$77' }, 'SKU-8': { '*': '$8' }, 'SKU-8-CASE': { '*': '$88' } } });
    for (const page of ['/st/big.htm', '/st/small.htm']) {
      const plain = await request(port, page);
      expect(plain.text).toMatch(/<span class="amount">\$[78]<\/span>/);
      for (let i = 0; i < 2; i++) {
        const br = await request(port, page, { headers: { 'accept-encoding': 'br' } });
        expect(br.headers['content-encoding']).toBe('br');
        expect(zlib.brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
        const gz = await request(port, page, { headers: { 'accept-encoding': 'gzip' } });
        expect(gz.headers['content-encoding']).toBe('gzip');
        expect(zlib.gunzipSync(gz.body).equals(plain.body)).toBe(true);
        // the identity answer after the page's parts were packed with their deflated forms
        expect((await request(port, page)).body.equals(plain.body)).toBe(true);
      }
    }
  });

  it('answers HEAD on a filled page with the headers and no body', async () => {
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    const get = await request(port, '/st/product1.htm?zip=10001');
    const head = await request(port, '/st/product1.htm?zip=10001', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-length']).toBe(String(get.body.length));
  });

  it('gzips filled pages without recompressing them, identical once inflated', async () => {
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    for (const file of ['/st/product1.htm', '/st/product2.htm', '/legacy/cafe.htm']) {
      const plain = await request(port, `${file}?zip=10001`);
      const gz = await request(port, `${file}?zip=10001`, { headers: { 'accept-encoding': 'br;q=0.5, gzip;q=0.8' } });
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.body.length).toBeLessThan(plain.body.length + 30);
      expect(zlib.gunzipSync(gz.body).equals(plain.body)).toBe(true);
    }
    const refused = await request(port, '/st/product1.htm', { headers: { 'accept-encoding': 'gzip;q=0' } });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });
});

describe('hostile input', () => {
  it('escapes markup, quotes and ampersands in prices', async () => {
    tree();
    const evil = { 'SKU-1': { '*': '<script>alert("x")</script> & \'1\'' } };
    writePrices(path.join(dir, 'prices.json'), evil);
    const { port } = await serve({ prices: path.join(dir, 'prices.json'), fallback: '<b>"fallback"</b>' });
    const res = await request(port, '/st/product1.htm');
    expect(firstPrice(res.text)).toBe('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;1&#39;');
    expect(res.text).not.toContain('<script>');
    expect(firstPrice((await request(port, '/st/product3.htm')).text)).toBe('&lt;b&gt;&quot;fallback&quot;&lt;/b&gt;');
  });

  it('shows the fallback instead of very long or hostile endpoint answers, and escapes the rest', async () => {
    tree();
    /** @type {Record<string, string>} */
    const answers = { 'SKU-1': '9'.repeat(100_000), 'SKU-2': '<img src=x onerror=alert(1)>', 'SKU-2-CASE': '"$5" & more', 'SKU-3': 'x'.repeat(1500) };
    const endpoint = http.createServer((req, res) => {
      const sku = new URL(String(req.url), 'http://x').searchParams.get('sku') ?? '';
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(answers[sku] ?? '');
    });
    const endpointPort = await listen(endpoint);
    cleanups.push(() => closeServer(endpoint));
    const { port } = await serve({ prices: `http://127.0.0.1:${endpointPort}/p?sku={sku}&zip={zip}`, fallback: 'n/a' });
    expect(firstPrice((await request(port, '/st/product1.htm')).text)).toBe('n/a');
    expect(firstPrice((await request(port, '/st/product3.htm')).text)).toBe('n/a');
    const two = await request(port, '/st/product2.htm');
    expect(firstPrice(two.text)).toBe('&lt;img src=x onerror=alert(1)&gt;');
    expect(two.text).toContain('With case: <span>&quot;$5&quot; &amp; more</span>');
  });

  it('treats hostile or implausible zips in cookies and queries as absent', async () => {
    tree();
    writePrices(path.join(dir, 'prices.json'), PRICES);
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    const hostile = [
      '<script>alert(1)</script>',
      '"><img src=x>',
      "10001' OR '1'='1",
      '1'.repeat(5000),
      '%3Cb%3E',
      '10001"',
      '12',
      '%ZZ',
      '10001;zip=90210',
    ];
    for (const value of hostile) {
      const viaCookie = await request(port, '/st/product1.htm', { headers: { cookie: `zip=${value}` } });
      expect(viaCookie.status).toBe(200);
      expect(firstPrice(viaCookie.text)).toBe(value === '10001;zip=90210' ? '$10.00' : '$11.00');
      expect(viaCookie.text).not.toContain('<script>alert(1)');
      expect(viaCookie.text).not.toContain('<img');
      const viaQuery = await request(port, `/st/product1.htm?zip=${encodeURIComponent(value)}`, { headers: { cookie: 'zip=90210' } });
      expect(viaQuery.status).toBe(200);
      // an implausible query zip is absent: the cookie decides
      expect(firstPrice(viaQuery.text)).toBe('$12.50');
    }
    // quoted cookie values and plus/space forms are accepted
    expect(firstPrice((await request(port, '/st/product1.htm', { headers: { cookie: 'zip="10001"' } })).text)).toBe('$10.00');
  });

  it('rejects oversized headers with 431 and keeps serving', async () => {
    tree();
    const { port } = await serve({ maxHeaderSize: 4096 });
    const res = await rawRequest(port, `GET /st/product1.htm HTTP/1.1\r\nHost: x\r\nCookie: zip=${'9'.repeat(10_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect((await request(port, '/st/product1.htm')).status).toBe(200);
  });

  it('closes a connection whose headers never finish (slowloris)', async () => {
    tree();
    const { port } = await serve({ headersTimeoutMs: 300, requestTimeoutMs: 300 });
    // Half a request line and no end: the server must give up on its own, long before the client does.
    const res = await rawRequest(port, 'GET /st/product1.htm HTTP/1.1\r\nHost: x\r\nX-Slow: 1', { timeoutMs: 60_000 });
    expect(res.timedOut).toBe(false);
    expect([0, 408]).toContain(res.status);
  });
});

describe('windows-1252 pages', () => {
  it('keep their charset label and bytes; prices go in as character references', async () => {
    tree();
    writePrices(path.join(dir, 'prices.json'), PRICES);
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    const res = await request(port, '/legacy/cafe.htm');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=windows-1252');
    const latin = res.body.toString('latin1');
    expect(latin).toContain('Caf\xe9 cr\xe8me: 12,50 &#8364;</p>');
    expect(res.body.includes(Buffer.from('é', 'utf8'))).toBe(false);
  });

  it('in UTF-8 pages non-ASCII prices stay UTF-8', async () => {
    tree();
    writePrices(path.join(dir, 'prices.json'), { 'SKU-1': { '*': '12,50 €' } });
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    expect(firstPrice((await request(port, '/st/product1.htm')).text)).toBe('12,50 €');
  });
});

describe('price endpoint', () => {
  /** @param {Partial<import('../lib/serve/options.js').ServeOptionsInput>} [extra] */
  async function withEndpoint(extra = {}) {
    tree();
    const endpoint = await startPriceEndpoint({ prices: PRICES });
    cleanups.push(() => endpoint.close());
    const served = await serve({ prices: endpoint.template, fallback: 'See price in cart', priceTimeoutMs: 150, ...extra });
    return { endpoint, ...served };
  }

  it('fills per zip from the endpoint and caches the answers', async () => {
    const { port, endpoint } = await withEndpoint();
    expect(firstPrice((await request(port, '/st/product1.htm', { headers: { cookie: 'zip=90210' } })).text)).toBe('$12.50');
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');
    expect(firstPrice((await request(port, '/st/product1.htm')).text)).toBe('$11.00');
    const before = endpoint.hits.total;
    for (let i = 0; i < 5; i++) await request(port, '/st/product1.htm?zip=10001');
    expect(endpoint.hits.total).toBe(before);
    expect(endpoint.hits.urls).toContain('/price.asp?sku=SKU-1&zip=90210');
  });

  it('reads JSON answers { "price": ... }', async () => {
    tree();
    const endpoint = await startPriceEndpoint({ prices: PRICES, json: true });
    cleanups.push(() => endpoint.close());
    const { port } = await serve({ prices: endpoint.template });
    expect(firstPrice((await request(port, '/st/product1.htm?zip=90210')).text)).toBe('$12.50');
  });

  it('coalesces identical lookups in flight into one request', async () => {
    const { port, endpoint } = await withEndpoint({ priceTimeoutMs: 5000 });
    endpoint.setMode('slow');
    const pages = Array.from({ length: 10 }, () => request(port, '/st/product1.htm?zip=10001'));
    await waitFor(() => endpoint.hits.total >= 1, { what: 'the endpoint to be asked' });
    endpoint.setMode('ok');
    endpoint.releaseHeld();
    const results = await Promise.all(pages);
    for (const r of results) expect(firstPrice(r.text)).toBe('$10.00');
    expect(endpoint.hits.total).toBe(1);
  });

  it.each([
    ['down', 'down'],
    ['answering 500', 'error'],
    ['slow', 'slow'],
  ])('serves the fallback promptly when the endpoint is %s', async (_label, mode) => {
    const { port, endpoint } = await withEndpoint();
    endpoint.setMode(/** @type {any} */ (mode));
    const res = await request(port, '/st/product2.htm?zip=10001', { timeoutMs: 3000 });
    expect(res.status).toBe(200);
    expect(res.text).toContain('<span class="amount">See price in cart</span>');
    expect(res.text).toContain('With case: <span>See price in cart</span>');
    expect(res.text).not.toContain('oops');
    expect(warnings.some((w) => w.includes('price.asp'))).toBe(true);
  });

  it('recovers once the endpoint is back (failures are cached only briefly)', async () => {
    const { port, endpoint } = await withEndpoint({ priceNegativeTtlMs: 1 });
    endpoint.setMode('error');
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('See price in cart');
    endpoint.setMode('ok');
    await waitFor(async () => firstPrice((await request(port, '/st/product1.htm?zip=10001')).text) === '$10.00', { what: 'the price to come back' });
  });
});

describe('hot reload of the price file', () => {
  it('picks up a new file and keeps the last good prices when the new one is broken', async () => {
    tree();
    const file = writePrices(path.join(dir, 'prices.json'), PRICES);
    const { port, filter } = await serve({ prices: file, pollIntervalMs: 100 });
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');

    let reloaded = nextEvent(filter.events, 'prices-reload');
    writePrices(file, { ...PRICES, 'SKU-1': { '10001': '$9.99' } });
    await reloaded;
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$9.99');

    const failed = nextEvent(filter.events, 'prices-reload-error');
    fs.writeFileSync(`${file}.tmp`, '{ "SKU-1": { "10001": ');
    fs.renameSync(`${file}.tmp`, file);
    await failed;
    expect(warnings.some((w) => w.includes('could not reload') && w.includes('keeping the prices'))).toBe(true);
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$9.99');

    reloaded = nextEvent(filter.events, 'prices-reload');
    writePrices(file, { 'SKU-1': { '10001': '$8.88' } });
    await reloaded;
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$8.88');
  });

  it('a CSV with a bad row is rejected whole', async () => {
    tree();
    const file = writePrices(path.join(dir, 'prices.csv'), PRICES);
    const { port, filter } = await serve({ prices: file, pollIntervalMs: 100 });
    const failed = nextEvent(filter.events, 'prices-reload-error');
    fs.writeFileSync(`${file}.tmp`, 'sku,zip,price\nSKU-1,10001,$1.00\nSKU-1,<bad>,$2\n');
    fs.renameSync(`${file}.tmp`, file);
    const [error] = await failed;
    expect(String(error.message)).toContain('line 3');
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');
  });
});

describe('manifest', () => {
  it('falls back to scanning a file whose placeholders moved, with a warning', async () => {
    const { pages } = tree();
    // Edit a page after the crawl: offsets in the manifest are now stale.
    const file = path.join(dir, 'out/st/product1.htm');
    fs.writeFileSync(file, Buffer.concat([Buffer.from('<!-- edited -->\n'), fs.readFileSync(file)]));
    writePrices(path.join(dir, 'prices.json'), PRICES);
    const { port } = await serve({ prices: path.join(dir, 'prices.json') });
    const res = await request(port, '/st/product1.htm?zip=10001');
    expect(warnings.some((w) => w.includes('st/product1.htm') && w.includes('scanning'))).toBe(true);
    expect(res.text.startsWith('<!-- edited -->')).toBe(true);
    expect(firstPrice(res.text)).toBe('$10.00');
    expect(pages.length).toBeGreaterThan(0);
  });

  it('reloads a replaced manifest and serves the new pages', async () => {
    const { pages } = tree({ products: 2 });
    writePrices(path.join(dir, 'prices.json'), PRICES);
    const { port, filter } = await serve({ prices: path.join(dir, 'prices.json'), pollIntervalMs: 100 });
    expect((await request(port, '/st/product3.htm')).status).toBe(404);
    const reloaded = nextEvent(filter.events, 'manifest-reload');
    const added = writeTree(path.join(dir, 'tmp-tree'), [{ file: 'st/product3.htm', pieces: productPieces(3) }]);
    fs.copyFileSync(path.join(dir, 'tmp-tree/st/product3.htm'), path.join(dir, 'out/st/product3.htm'));
    writeManifest(path.join(dir, 'out'), [...pages, ...added]);
    await reloaded;
    expect(firstPrice((await request(port, '/st/product3.htm?zip=10001')).text)).toBe('$30.00');
  });

  it('forgets the routes of the old manifest: a URL filled before is served as the new one says', async () => {
    const { pages } = tree({ products: 2 });
    writePrices(path.join(dir, 'prices.json'), PRICES);
    const { port, filter } = await serve({ prices: path.join(dir, 'prices.json'), pollIntervalMs: 100 });
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');
    const reloaded = nextEvent(filter.events, 'manifest-reload');
    // product1 is no longer a page with slots: the same request target is now a plain file.
    writeManifest(path.join(dir, 'out'), pages.filter((p) => !p.file.endsWith('product1.htm')));
    await reloaded;
    const res = await request(port, '/st/product1.htm?zip=10001');
    expect(res.text).toContain('<!--prerender:price sku=SKU-1-->');
    expect(res.text).not.toContain('$10.00');
  });

  it('keeps the previous manifest when the new one is broken', async () => {
    tree({ products: 1 });
    writePrices(path.join(dir, 'prices.json'), PRICES);
    const { port, filter } = await serve({ prices: path.join(dir, 'prices.json'), pollIntervalMs: 100 });
    const failed = nextEvent(filter.events, 'manifest-error');
    fs.writeFileSync(path.join(dir, 'out/prerender-manifest.json'), '{"version": 1, "pages": [');
    await failed;
    expect(firstPrice((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');
  });

  it('serves ssi and esi trees as they are (for nginx / Varnish in front)', async () => {
    tree({ mode: 'ssi' });
    const { port } = await serve();
    const res = await request(port, '/st/product1.htm');
    expect(res.text).toContain('<!--# include virtual="/price?sku=SKU-1"');
    expect(res.headers.etag).toBeDefined();
  });

  it('works without a manifest as a plain static server, with a warning', async () => {
    fs.mkdirSync(path.join(dir, 'out'));
    fs.writeFileSync(path.join(dir, 'out/index.html'), 'hello');
    const { port } = await serve();
    expect((await request(port, '/')).text).toBe('hello');
    expect(warnings.some((w) => w.includes('no prerender-manifest.json'))).toBe(true);
  });
});

describe('static files', () => {
  beforeEach(() => tree());

  it('serves content types from the manifest or by extension, and index.html for directories', async () => {
    const { port } = await serve();
    const css = await request(port, '/assets/site.css');
    expect(css.headers['content-type']).toBe('text/css');
    expect(css.headers['cache-control']).toBe('public, max-age=0');
    const dirIndex = await request(port, '/infodir/');
    expect(dirIndex.status).toBe(200);
    expect(dirIndex.text).toContain('About us');
    expect(dirIndex.headers['content-type']).toBe('text/html; charset=utf-8');
    const redirect = await request(port, '/infodir?x=1');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.location).toBe('/infodir/?x=1');
  });

  it('never lists a directory and serves its own 404 page', async () => {
    const { port } = await serve();
    const listing = await request(port, '/st/');
    expect(listing.status).toBe(404);
    expect(listing.text).toContain('Custom not found');
    expect(listing.text).not.toContain('product1');
    expect((await request(port, '/nope.html')).status).toBe(404);
    expect((await request(port, '/prerender-manifest.json')).status).toBe(404);
  });

  it('a 404.html that is a link leading out of the tree is not served: the built-in 404 page is', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-outside-'));
    try {
      fs.writeFileSync(path.join(outside, 'secret.html'), 'SECRET OUTSIDE THE TREE');
      fs.rmSync(path.join(dir, 'out', '404.html'), { force: true });
      fs.symlinkSync(path.join(outside, 'secret.html'), path.join(dir, 'out', '404.html'));
      const { port } = await serve();
      const missing = await request(port, '/nope.html');
      expect(missing.status).toBe(404);
      expect(missing.text).not.toContain('SECRET');
      expect(missing.text).toContain('Not Found');
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  it('answers conditional requests with 304 (ETag and Last-Modified)', async () => {
    const { port } = await serve();
    const first = await request(port, '/infodir/index.html');
    expect(first.headers.etag).toMatch(/^"/);
    const byTag = await request(port, '/infodir/index.html', { headers: { 'if-none-match': `"x", ${first.headers.etag}` } });
    expect(byTag.status).toBe(304);
    expect(byTag.body.length).toBe(0);
    const byDate = await request(port, '/infodir/index.html', { headers: { 'if-modified-since': String(first.headers['last-modified']) } });
    expect(byDate.status).toBe(304);
    const stale = await request(port, '/infodir/index.html', { headers: { 'if-none-match': '"other"', 'if-modified-since': String(first.headers['last-modified']) } });
    expect(stale.status).toBe(200);
    const head = await request(port, '/assets/plain.txt', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe('11');
    expect(head.body.length).toBe(0);
  });

  it('serves byte ranges of large files', async () => {
    const { port } = await serve();
    const big = fs.readFileSync(path.join(dir, 'out/big.bin'));
    const part = await request(port, '/big.bin', { headers: { range: 'bytes=1000-1999' } });
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 1000-1999/${big.length}`);
    expect(part.body.equals(big.subarray(1000, 2000))).toBe(true);
    const suffix = await request(port, '/big.bin', { headers: { range: 'bytes=-10' } });
    expect(suffix.body.equals(big.subarray(big.length - 10))).toBe(true);
    const open = await request(port, '/big.bin', { headers: { range: `bytes=${big.length - 5}-` } });
    expect(open.body.length).toBe(5);
    const bad = await request(port, '/big.bin', { headers: { range: `bytes=${big.length}-` } });
    expect(bad.status).toBe(416);
    expect(bad.headers['content-range']).toBe(`bytes */${big.length}`);
    const whole = await request(port, '/big.bin');
    expect(whole.body.equals(big)).toBe(true);
    const etag = String(whole.headers.etag);
    expect((await request(port, '/big.bin', { headers: { range: 'bytes=0-9', 'if-range': etag } })).status).toBe(206);
    expect((await request(port, '/big.bin', { headers: { range: 'bytes=0-9', 'if-range': '"old"' } })).status).toBe(200);
  });

  it('negotiates precompressed .br and .gz siblings', async () => {
    const { port } = await serve();
    const css = fs.readFileSync(path.join(dir, 'out/assets/site.css'));
    const br = await request(port, '/assets/site.css', { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toBe('Accept-Encoding');
    expect(zlib.brotliDecompressSync(br.body).equals(css)).toBe(true);
    const gz = await request(port, '/assets/site.css', { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(gz.body).equals(css)).toBe(true);
    expect(gz.headers.etag).not.toBe(br.headers.etag);
    const none = await request(port, '/assets/site.css');
    expect(none.headers['content-encoding']).toBeUndefined();
    expect(none.body.equals(css)).toBe(true);
  });

  it('sends a .gz or .br only when it decompresses to the file (not one put there by hand, nor a page of its own), nor one older than its file', async () => {
    const out = path.join(dir, 'out');
    const text = Buffer.from(`${'<p>a page with words to compress</p>\n'.repeat(100)}`);
    fs.writeFileSync(path.join(out, 'hand.html'), text);
    fs.writeFileSync(path.join(out, 'hand.html.gz'), zlib.gzipSync('<p>something else</p>'));
    fs.writeFileSync(path.join(out, 'hand.html.br'), 'not brotli at all');
    // A site with URLs for both app.js and app.js.gz: the second is a page, not a sibling.
    fs.writeFileSync(path.join(out, 'app.js'), Buffer.from(`${'console.log("app");\n'.repeat(100)}`));
    fs.writeFileSync(path.join(out, 'app.js.gz'), Buffer.from('the bytes of another document'));
    const { port } = await serve();
    for (const [file, encoding] of /** @type {const} */ ([['hand.html', 'gzip'], ['hand.html', 'br'], ['app.js', 'gzip']])) {
      const answer = await request(port, `/${file}`, { headers: { 'accept-encoding': encoding } });
      const decoded = answer.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(answer.body)
        : answer.headers['content-encoding'] === 'br' ? zlib.brotliDecompressSync(answer.body) : answer.body;
      expect(decoded.equals(fs.readFileSync(path.join(out, file))), `${file} as ${encoding}`).toBe(true);
    }
    expect((await request(port, '/app.js.gz')).body.toString()).toBe('the bytes of another document');

    // A file too large to be held (served as it streams): a sibling older than it is left out.
    const large = await serve({ pageCacheBytes: 64 * 1024 });
    const big = Buffer.from(`${'<p>a large page</p>\n'.repeat(2000)}`);
    fs.writeFileSync(path.join(out, 'large.html'), big);
    fs.writeFileSync(path.join(out, 'large.html.gz'), zlib.gzipSync('<p>an older version</p>'));
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(path.join(out, 'large.html.gz'), past, past);
    const stale = await request(large.port, '/large.html', { headers: { 'accept-encoding': 'gzip' } });
    expect(stale.headers['content-encoding']).toBeUndefined();
    expect(stale.body.equals(big)).toBe(true);
  });

  it('answers other methods with 405', async () => {
    const { port } = await serve();
    const res = await request(port, '/st/product1.htm', { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });
});

describe('middleware', () => {
  it('mounts in a plain node:http server and hands what it does not serve to next()', async () => {
    tree();
    writePrices(path.join(dir, 'prices.json'), PRICES);
    const filter = createPriceFilter({ root: path.join(dir, 'out'), prices: path.join(dir, 'prices.json'), logger });
    cleanups.push(() => filter.close());
    const server = http.createServer((req, res) => {
      filter(req, res, () => {
        res.writeHead(418, { 'content-type': 'text/plain' });
        res.end('app route');
      });
    });
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    expect(firstPrice((await request(port, '/st/product1.htm?zip=90210')).text)).toBe('$12.50');
    expect((await request(port, '/assets/plain.txt')).text).toBe('plain text\n');
    const other = await request(port, '/api/cart');
    expect(other.status).toBe(418);
    expect((await request(port, '/st/product1.htm', { method: 'POST' })).status).toBe(418);
  });

  it('with static: false fills pages only and passes everything else on', async () => {
    tree();
    const filter = createPriceFilter({ root: path.join(dir, 'out'), prices: { 'SKU-1': { '*': '$1' } }, static: false, logger });
    cleanups.push(() => filter.close());
    const server = http.createServer((req, res) => filter(req, res, () => { res.statusCode = 204; res.end(); }));
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    expect(firstPrice((await request(port, '/st/product1.htm')).text)).toBe('$1');
    expect((await request(port, '/assets/plain.txt')).status).toBe(204);
  });

  it('accepts a custom price source with lookup(sku, zip)', async () => {
    tree();
    const filter = createPriceFilter({ root: path.join(dir, 'out'), logger, prices: { lookup: (sku, zip) => Promise.resolve(`${sku}@${zip}`) } });
    cleanups.push(() => filter.close());
    const server = http.createServer((req, res) => filter(req, res));
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    expect(firstPrice((await request(port, '/st/product1.htm?zip=ab-12')).text)).toBe('SKU-1@AB-12');
  });
});

describe('options and command', () => {
  it.each([
    [{ root: '/nonexistent/prerender' }, /does not exist/],
    [{ port: 70000 }, /--port/],
    [{ prices: 'prices.txt' }, /\.json or \.csv/],
    [{ prices: 'http://shop/price.asp' }, /\{sku\}/],
    [{ prices: 'ftp://shop/{sku}' }, /\.json or \.csv|http/],
    [{ defaultZip: '<x>' }, /--default-zip/],
    [{ zipCookie: 'a b' }, /--zip-cookie/],
    [{ priceTimeoutMs: -1 }, /priceTimeoutMs/],
    [{ colour: 'red' }, /unknown option "colour"/],
    [{ pageCacheBytes: 64 * 1024 * 1024, maxRssBytes: 32 * 1024 * 1024 }, /--max-rss \(maxRssBytes\) must be larger than --cache-bytes/],
  ])('rejects bad options with a UsageError (%o)', (bad, message) => {
    tree();
    const run = () => createPriceFilter({ root: path.join(dir, 'out'), logger, .../** @type {any} */ (bad) });
    expect(run).toThrow(UsageError);
    expect(run).toThrow(message);
  });

  it('rejects a broken price file at start-up', () => {
    tree();
    fs.writeFileSync(path.join(dir, 'prices.json'), '[1,2]');
    expect(() => createPriceFilter({ root: path.join(dir, 'out'), prices: path.join(dir, 'prices.json'), logger })).toThrow(/cannot load prices/);
  });

  it('runServeCommand turns a port in use into a UsageError', async () => {
    tree();
    const other = http.createServer();
    const port = await listen(other);
    cleanups.push(() => closeServer(other));
    const io = { stdout: new PassThrough(), stderr: new PassThrough(), signal: new AbortController().signal };
    await expect(runServeCommand(path.join(dir, 'out'), { port }, io)).rejects.toThrow(UsageError);
    await expect(runServeCommand(path.join(dir, 'out'), { port }, io)).rejects.toThrow(/already in use/);
  });

  it('runServeCommand prints the address and stops on abort', async () => {
    tree();
    writePrices(path.join(dir, 'prices.json'), PRICES);
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const controller = new AbortController();
    let out = '';
    stdout.on('data', (c) => (out += c));
    const done = runServeCommand(path.join(dir, 'out'), { port: 0, prices: path.join(dir, 'prices.json') }, { stdout, stderr, signal: controller.signal });
    const line = await waitFor(() => /^listening on http:\/\/127\.0\.0\.1:(\d+)\n$/.exec(out), { what: 'the listening line' });
    const res = await request(Number(line[1]), '/st/product1.htm?zip=10001');
    expect(firstPrice(res.text)).toBe('$10.00');
    controller.abort();
    await done;
    await expect(request(Number(line[1]), '/')).rejects.toThrow();
  });
});
