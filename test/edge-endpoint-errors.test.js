// @ts-check
/**
 * The edge templates when the price endpoint answers something other than a
 * price: README, "Edge mode": nginx gives "a fallback text on any error",
 * Varnish turns "errors, timeouts (300 ms) and 404s" into the fallback. An
 * endpoint's 429 or 403 page, or a redirect, must never land in the page.
 *
 * nginx and varnishd are started for real with the shipped templates. Skipped
 * only outside CI when they are absent; in CI (CI=true) a missing one fails.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderPlaceholder } from '../lib/document/placeholders.js';
import { createServer } from '../lib/serve/index.js';
import { closeServer, listen, request } from '../fixtures/serve/http.js';
import { NGINX, VARNISHD, startNginx, startVarnish } from './helpers/edge.js';

const IN_CI = process.env.CI === 'true';
const FALLBACK = 'See price in cart';

/** What the endpoint answers per SKU: status, content type, body (HTML where a real error page would be). */
const ANSWERS = /** @type {Record<string, [number, string, string]>} */ ({
  OK: [200, 'text/plain', '$1.99'],
  'E-301': [301, 'text/html', '<a href="/moved">Moved</a>'],
  'E-302': [302, 'text/html', '<a href="/login">Found</a>'],
  'E-400': [400, 'text/html', '<h1>Bad Request</h1>'],
  'E-401': [401, 'text/html', '<h1>Unauthorized</h1>'],
  'E-403': [403, 'text/html', '<h1>Forbidden</h1>'],
  'E-404': [404, 'text/plain', 'unknown sku'],
  'E-410': [410, 'text/html', '<h1>Gone</h1>'],
  'E-429': [429, 'text/html', '<h1>Too Many Requests</h1>'],
  'E-500': [500, 'text/html', '<h1>Internal Server Error</h1>'],
  'E-501': [501, 'text/html', '<h1>Not Implemented</h1>'],
  // Codes no list of "usual" errors names: a teapot, a CDN's origin error, the last one there is.
  'E-418': [418, 'text/html', '<h1>I am a teapot</h1>'],
  'E-520': [520, 'text/html', '<h1>Web server returned an unknown error</h1>'],
  'E-599': [599, 'text/html', '<h1>Network connect timeout</h1>'],
});
const ERROR_SKUS = Object.keys(ANSWERS).filter((sku) => sku !== 'OK');

/** @param {'ssi' | 'esi'} mode */
function page(mode) {
  return `<!DOCTYPE html><html><body>\n${Object.keys(ANSWERS).map((sku) => `<p data-price-sku="${sku}">${renderPlaceholder(mode, sku)}</p>`).join('\n')}\n</body></html>\n`;
}

/** Each slot's text, by SKU. @param {string} html */
function slots(html) {
  return Object.fromEntries([...html.matchAll(/<p data-price-sku="([^"]+)">([^]*?)<\/p>/g)].map((m) => [m[1], m[2]]));
}

/** @type {string} */ let dir;
/** @type {http.Server} */ let endpoint;
/** @type {number} */ let endpointPort;
/** @type {string[]} */ const asked = [];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-edge-errors-'));
  endpoint = http.createServer((req, res) => {
    const sku = new URL(req.url ?? '/', 'http://endpoint.invalid').searchParams.get('sku') ?? '';
    asked.push(sku);
    const [status, type, body] = ANSWERS[sku] ?? [404, 'text/plain', 'unknown sku'];
    res.writeHead(status, { 'content-type': type, ...(status >= 300 && status < 400 ? { location: '/elsewhere' } : {}) });
    res.end(body);
  });
  endpointPort = await listen(endpoint);
});
afterAll(async () => {
  if (endpoint) await closeServer(endpoint);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('nginx SSI template: an endpoint answer that is not a 200 is never inserted', () => {
  const skip = !NGINX && !IN_CI;
  /** @type {Awaited<ReturnType<typeof startNginx>> | null} */ let nginx = null;
  /** @type {number} */ let port;

  beforeAll(async () => {
    if (skip) return;
    const base = path.join(dir, 'nginx');
    const out = path.join(base, 'out');
    fs.mkdirSync(out, { recursive: true });
    fs.writeFileSync(path.join(out, 'prices.html'), page('ssi'));
    nginx = await startNginx({ dir: base, root: out, endpointPort, probe: '/prices.html' });
    port = nginx.port;
  });

  afterAll(async () => {
    await nginx?.stop();
  });

  it.skipIf(skip)('3xx, 4xx and 5xx answers all become the fallback text', async () => {
    const res = await request(port, '/prices.html?zip=10001');
    expect(res.status).toBe(200);
    const filled = slots(res.text);
    expect(filled.OK).toBe('$1.99');
    for (const sku of ERROR_SKUS) expect(filled[sku], sku).toBe(FALLBACK);
    expect(ERROR_SKUS.every((sku) => asked.includes(sku)), 'the endpoint was asked for each SKU').toBe(true);
  });
});

describe('Varnish ESI template: the same answers', () => {
  const skip = !VARNISHD && !IN_CI;
  /** @type {Awaited<ReturnType<typeof startVarnish>> | null} */ let varnish = null;
  /** @type {ReturnType<typeof createServer> | null} */ let origin = null;
  /** @type {number} */ let port;

  beforeAll(async () => {
    if (skip) return;
    const base = path.join(dir, 'varnish');
    const out = path.join(base, 'out');
    fs.mkdirSync(out, { recursive: true });
    fs.writeFileSync(path.join(out, 'prices.html'), page('esi'));
    origin = createServer({ root: out, logger: { warn: () => {} } });
    const originPort = await listen(origin);
    varnish = await startVarnish({ dir: base, originPort, endpointPort, probe: '/prices.html', storage: 'malloc,16m' });
    port = varnish.port;
  });

  afterAll(async () => {
    await varnish?.stop();
    if (origin) await closeServer(origin);
  });

  it.skipIf(skip)('3xx, 4xx and 5xx answers all become the fallback text', async () => {
    const res = await request(port, '/prices.html?zip=10001');
    expect(res.status).toBe(200);
    const filled = slots(res.text);
    expect(filled.OK).toBe('$1.99');
    for (const sku of ERROR_SKUS) expect(filled[sku], sku).toBe(FALLBACK);
  });
});
