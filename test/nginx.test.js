// @ts-check
/**
 * The edge templates, run for real: crawl the fixture shop with SSI (nginx)
 * or ESI (Varnish) placeholders, start the server with the template from
 * templates/, and check the prices it fills per zip.
 *
 * nginx: Debian's package, installed by .ci/run. Skipped only outside CI when
 * nginx is absent; in CI (CI=true) a missing nginx fails.
 * Varnish: Debian's `varnish` package; installed by .ci/run; skipped only outside CI when varnishd is absent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crawl } from '../lib/crawler/index.js';
import { createServer } from '../lib/serve/index.js';
import { startShop } from '../fixtures/shop.js';
import { startPriceEndpoint } from '../fixtures/price-endpoint.js';
import { closeServer, listen, request } from '../fixtures/serve/http.js';
import { NGINX, VARNISHD, startNginx, startVarnish } from './helpers/edge.js';

const IN_CI = process.env.CI === 'true';

/** Prices the fixture endpoint knows. SKU-3 has none (404), SKU-4 only a default. */
const PRICES = {
  'SKU-1': { '10001': '$10.00', '90210': '$12.50', '1234 AB': '€9,95', '': '$11.00' },
  'SKU-2': { '10001': '$20.00', '': '$21.00' },
  'SKU-4': { '': '$40.00' },
};
/** @param {string} sku @param {string} zip */
const priceOf = (sku, zip) => PRICES[/** @type {keyof typeof PRICES} */ (sku)]?.[zip] ?? PRICES[/** @type {keyof typeof PRICES} */ (sku)]?.[''] ?? null;

/** The text of the first price slot. @param {string} html */
function price(html) {
  return /<span data-price-sku="[^"]*">([^]*?)<\/span>/.exec(html)?.[1];
}

/**
 * @param {string} dir
 * @param {'ssi' | 'esi'} mode
 * @param {{ precompress?: string }} [extra]
 * @param {{ products?: number, count?: number }} [shopOptions]
 */
async function crawlShop(dir, mode, extra = {}, shopOptions = { products: 5 }) {
  const shop = await startShop(shopOptions);
  try {
    const out = path.join(dir, 'out');
    await crawl({ roots: [shop.url], out, placeholders: mode, include: ['/st/dir.asp', '/st/product.asp'], ...extra });
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'prerender-manifest.json'), 'utf8'));
    expect(manifest.placeholderMode).toBe(mode);
    expect(manifest.pages.find((/** @type {{ file: string }} */ p) => p.file === 'st/product1.htm')?.placeholders).toHaveLength(1);
    return out;
  } finally {
    await shop.close();
  }
}

describe('nginx SSI template', () => {
  const skip = !NGINX && !IN_CI;
  /** @type {string} */ let dir;
  /** @type {number} */ let port;
  /** @type {Awaited<ReturnType<typeof startNginx>> | null} */ let nginx = null;
  /** @type {Awaited<ReturnType<typeof startPriceEndpoint>>} */ let endpoint;

  beforeAll(async () => {
    if (skip) return;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-nginx-'));
    const out = await crawlShop(dir, 'ssi', { precompress: 'gzip' }, { products: 30, count: 30 }); // a catalogue page over 1 KiB
    fs.writeFileSync(path.join(out, 'site.css'), 'body{}\n'.repeat(100));
    fs.writeFileSync(path.join(out, 'site.css.gz'), zlib.gzipSync('body{}\n'.repeat(100)));
    endpoint = await startPriceEndpoint({ prices: priceOf });
    nginx = await startNginx({ dir, root: out, endpointPort: endpoint.port, probe: '/st/product5.htm', workerConnections: 128 });
    port = nginx.port;
  });

  afterAll(async () => {
    await nginx?.stop();
    await endpoint?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(skip)('fills prices per zip from the query and from the cookie', async () => {
    expect(price((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');
    expect(price((await request(port, '/st/product1.htm', { headers: { cookie: 'a=1; zip=90210' } })).text)).toBe('$12.50');
    // the query wins over the cookie; encoded spaces pass through
    expect(price((await request(port, '/st/product1.htm?zip=1234%20AB', { headers: { cookie: 'zip=90210' } })).text)).toBe('€9,95');
    // no zip, unknown zip, hostile zip: the SKU's default
    expect(price((await request(port, '/st/product1.htm')).text)).toBe('$11.00');
    expect(price((await request(port, '/st/product2.htm?zip=55555')).text)).toBe('$21.00');
    const hostile = await request(port, '/st/product4.htm?zip=%3Cscript%3E', { headers: { cookie: 'zip="><img src=x>' } });
    expect(price(hostile.text)).toBe('$40.00');
    expect(endpoint.hits.urls.some((u) => /zip=[^&]*(?:<|%3C|script)/i.test(u))).toBe(false);
    // no price at all: the fallback
    expect(price((await request(port, '/st/product3.htm')).text)).toBe('See price in cart');
  });

  it.skipIf(skip)('marks filled pages private, gzips them, and serves precompressed assets', async () => {
    const page = await request(port, '/st/product1.htm?zip=10001', { headers: { 'accept-encoding': 'gzip' } });
    expect(page.headers['content-encoding']).toBe('gzip');
    expect(price(zlib.gunzipSync(page.body).toString())).toBe('$10.00');
    expect(page.headers['cache-control']).toBe('private, no-cache');
    expect(String(page.headers.vary)).toMatch(/Cookie/);
    const css = await request(port, '/site.css', { headers: { 'accept-encoding': 'gzip' } });
    expect(css.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(css.body).toString()).toBe('body{}\n'.repeat(100));
  });

  it.skipIf(skip)('serves the .gz that crawl --precompress wrote beside a page without price slots; never made for pages with slots', async () => {
    const out = path.join(dir, 'out');
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'prerender-manifest.json'), 'utf8'));
    const plain = manifest.pages.find((/** @type {{ placeholders: unknown[], bytes: number }} */ p) => p.placeholders.length === 0 && p.bytes >= 1024);
    expect(plain, 'a page without price slots of at least 1 KiB').toBeDefined();
    const precompressed = fs.readFileSync(path.join(out, `${plain.file}.gz`));
    const answer = await request(port, `/${plain.file}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-encoding']).toBe('gzip');
    expect(answer.body).toEqual(precompressed);
    expect(zlib.gunzipSync(answer.body)).toEqual(fs.readFileSync(path.join(out, plain.file)));
    expect(fs.existsSync(path.join(out, 'st/product1.htm.gz'))).toBe(false);
  });

  it.skipIf(skip)('keeps the price location internal and the manifest private', async () => {
    const before = endpoint.hits.total;
    const direct = await request(port, '/price?sku=SKU-1&zip=10001');
    expect(direct.text).not.toContain('$10.00');
    expect(endpoint.hits.total).toBe(before);
    expect((await request(port, '/prerender-manifest.json')).status).toBe(404);
  });

  it.skipIf(skip)('shows the fallback promptly when the endpoint is down, slow or failing', async () => {
    for (const [mode, zip] of /** @type {const} */ ([['down', '11111'], ['error', '22222'], ['slow', '33333']])) {
      endpoint.setMode(mode);
      const res = await request(port, `/st/product2.htm?zip=${zip}`, { timeoutMs: 3000 });
      expect(res.status).toBe(200);
      expect(price(res.text)).toBe('See price in cart');
    }
    endpoint.setMode('ok');
    endpoint.releaseHeld();
  });
});

describe('Varnish ESI template', () => {
  const skip = !VARNISHD && !IN_CI; // .ci/run installs varnish: in CI a missing varnishd fails
  /** @type {string} */ let dir;
  /** @type {number} */ let port;
  /** @type {Awaited<ReturnType<typeof startVarnish>> | null} */ let varnish = null;
  /** @type {Awaited<ReturnType<typeof startPriceEndpoint>>} */ let endpoint;
  /** @type {import('node:http').Server} */ let origin;

  beforeAll(async () => {
    if (skip) return;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-varnish-'));
    const out = await crawlShop(dir, 'esi');
    endpoint = await startPriceEndpoint({ prices: priceOf });
    // The static origin: prerender serve serves an ESI tree as it is.
    origin = createServer({ root: out, logger: { warn: () => {} } });
    const originPort = await listen(origin);
    varnish = await startVarnish({ dir, originPort, endpointPort: endpoint.port, probe: '/st/product5.htm' });
    port = varnish.port;
  });

  afterAll(async () => {
    await varnish?.stop();
    await endpoint?.close();
    if (origin) await closeServer(origin);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(skip)('fills prices per zip from the query and from the cookie', async () => {
    expect(price((await request(port, '/st/product1.htm?zip=10001')).text)).toBe('$10.00');
    expect(price((await request(port, '/st/product1.htm', { headers: { cookie: 'a=1; zip=90210' } })).text)).toBe('$12.50');
    expect(price((await request(port, '/st/product1.htm?zip=1234%20AB', { headers: { cookie: 'zip=90210' } })).text)).toBe('€9,95');
    expect(price((await request(port, '/st/product1.htm')).text)).toBe('$11.00');
    expect(price((await request(port, '/st/product4.htm?zip=%3Cscript%3E', { headers: { cookie: 'zip="><img>' } })).text)).toBe('$40.00');
    expect(price((await request(port, '/st/product3.htm')).text)).toBe('See price in cart');
    const page = await request(port, '/st/product2.htm?zip=10001');
    expect(price(page.text)).toBe('$20.00');
    expect(page.headers['cache-control']).toBe('private, no-cache');
  });

  it.skipIf(skip)('keeps the price URL internal and falls back when the endpoint fails', async () => {
    expect((await request(port, '/price?sku=SKU-1')).status).toBe(404);
    for (const [mode, zip] of /** @type {const} */ ([['down', '11111'], ['error', '22222'], ['slow', '33333']])) {
      endpoint.setMode(mode);
      const res = await request(port, `/st/product2.htm?zip=${zip}`, { timeoutMs: 3000 });
      expect(res.status).toBe(200);
      expect(price(res.text)).toBe('See price in cart');
    }
    endpoint.setMode('ok');
    endpoint.releaseHeld();
  });
});

if (!NGINX && !IN_CI) console.warn('nginx template tests skipped: nginx is not installed (apt-get install nginx); in CI they run');
if (!VARNISHD) console.warn('Varnish template tests skipped: varnishd is not installed (apt-get install varnish)');
