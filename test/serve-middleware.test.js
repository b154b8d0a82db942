// @ts-check
/**
 * The price filter as an application embeds it: a (req, res, next)
 * middleware in front of the application's own routes, and the options it is
 * given by code rather than by the CLI.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPriceFilter, createServer } from '../lib/serve/index.js';
import { UsageError } from '../lib/errors.js';
import { buildServeTree } from '../fixtures/serve/tree.js';
import { closeServer, listen, request } from '../fixtures/serve/http.js';

/** @type {string} */
let dir;
/** @type {(() => Promise<unknown>)[]} */
let cleanups;
const logger = { warn: () => {}, info: () => {} };

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-middleware-'));
  cleanups = [];
  buildServeTree(path.join(dir, 'out'));
});
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * An application whose own routes come after the filter (as `app.use(filter); app.use(routes)`).
 * @param {Partial<import('../lib/serve/options.js').ServeOptionsInput>} [options]
 */
async function app(options = {}) {
  const filter = createPriceFilter({ root: path.join(dir, 'out'), prices: { 'SKU-1': { '*': '$1' } }, logger, ...options });
  cleanups.push(() => filter.close());
  /** @type {string[]} */
  const routed = [];
  const server = http.createServer((req, res) => {
    filter(req, res, () => {
      routed.push(/** @type {string} */ (req.url));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`app: ${req.url}`);
    });
  });
  const port = await listen(server);
  cleanups.push(() => closeServer(server));
  return { port, routed };
}

describe('middleware: what it does not serve goes to next()', () => {
  // Request targets that name no file of the tree; an application route may still want them.
  const targets = [
    ['an encoded slash in an id', '/api/packages/%40scope%2Fname'],
    ['an encoded backslash', '/api/files/a%5Cb'],
    ['a long token in a path segment', `/auth/callback/${'t'.repeat(300)}`],
    ['a hidden segment', '/.auth/login'],
    ['a ".." segment', '/api/../st/product1.htm'],
    ['invalid UTF-8', '/api/search/%FF'],
  ];

  it.each(targets)('hands %s to the application (%s)', async (_what, target) => {
    for (const options of [{}, { static: false }]) {
      const { port, routed } = await app(options);
      const res = await request(port, target);
      expect(res.status).toBe(200);
      expect(res.text).toBe(`app: ${target}`);
      expect(routed).toEqual([target]);
    }
  });

  it('still fills pages and serves the tree, and still refuses those targets without next()', async () => {
    const { port, routed } = await app();
    expect((await request(port, '/st/product1.htm')).text).toContain('$1');
    expect(routed).toEqual([]);
    const filter = createPriceFilter({ root: path.join(dir, 'out'), logger });
    cleanups.push(() => filter.close());
    const server = http.createServer((req, res) => filter(req, res));
    const alone = await listen(server);
    cleanups.push(() => closeServer(server));
    expect((await request(alone, '/st/%2e%2e/%2e%2e/etc/passwd')).status).toBe(400);
    expect((await request(alone, '/api/a%2Fb')).status).toBe(400);
    expect((await request(alone, '/.env')).status).toBe(404);
  });
});

describe('middleware options given by code', () => {
  it.each([
    [{ static: 'false' }, /static must be true or false/],
    [{ watch: 'no' }, /watch must be true or false/],
    [{ priceConnections: 1.5 }, /priceConnections must be a whole number/],
    [{ priceCacheSize: 0.5 }, /priceCacheSize must be a whole number/],
    [{ staticCacheControl: 'max-age=60\r\nSet-Cookie: a=b' }, /staticCacheControl must be a Cache-Control header value/],
    [{ filledCacheControl: 5 }, /filledCacheControl must be a Cache-Control header value/],
  ])('rejects %o with a UsageError at creation', (bad, message) => {
    const create = () => createPriceFilter({ root: path.join(dir, 'out'), logger, .../** @type {any} */ (bad) });
    expect(create).toThrow(UsageError);
    expect(create).toThrow(message);
  });

  it('a Cache-Control with a line break never reaches a request (it used to throw there, uncaught)', async () => {
    expect(() => createServer({ root: path.join(dir, 'out'), logger, staticCacheControl: 'no-cache\nX: y' })).toThrow(UsageError);
    const server = createServer({ root: path.join(dir, 'out'), logger, staticCacheControl: 'public, max-age=60', filledCacheControl: 'private, max-age=0' });
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    expect((await request(port, '/assets/plain.txt')).headers['cache-control']).toBe('public, max-age=60');
    expect((await request(port, '/st/product1.htm')).headers['cache-control']).toBe('private, max-age=0');
  });
});
