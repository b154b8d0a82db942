// @ts-check
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crawl } from '../lib/index.js';
import { fileOf, readManifest, tempDirs } from './crawl-helpers.js';

// "/" and "/index.html" send the same bytes, so they first share index.html;
// but a query-only link ("?p=2") leads from each to a different page, so their
// outputs differ and the second is split apart into a file of its own.
const SAME = '<!doctype html><title>home</title><a id="next" href="?p=2">next</a> <a id="alias" href="/index.html">again</a>';

/** @type {http.Server} */
let server;
let origin = '';
const dirs = tempDirs();

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    const body = url.search === '?p=2' ? `<!doctype html><title>two of ${url.pathname}</title>` : SAME;
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(() => resolve(undefined)));
  await dirs.cleanup();
});

describe('an alias whose output differs from its first URL\'s', () => {
  it('gets a file of its own, and each page links to the right one', async () => {
    const out = await dirs.make();
    const result = await crawl({ roots: [`${origin}/`], out, retries: 0, retryDelay: 1 });
    expect(result.failed).toBe(0);
    const manifest = await readManifest(out);
    const home = fileOf(manifest, `${origin}/`);
    const alias = fileOf(manifest, `${origin}/index.html`);
    expect(home).toBe('index.html');
    expect(alias).not.toBe(home);
    expect(manifest.warnings.filter((warning) => warning.code === 'NAME_COLLISION')).toHaveLength(1);
    const nextOfHome = fileOf(manifest, `${origin}/?p=2`);
    const nextOfAlias = fileOf(manifest, `${origin}/index.html?p=2`);
    expect(nextOfHome).not.toBe(nextOfAlias);
    const homeHtml = await readFile(path.join(out, home), 'utf8');
    const aliasHtml = await readFile(path.join(out, alias), 'utf8');
    expect(homeHtml).toContain(`id="next" href="${nextOfHome}"`);
    expect(aliasHtml).toContain(`id="next" href="${nextOfAlias}"`);
    // every page written once, under the names in the manifest
    expect(new Set(manifest.pages.map((page) => page.file)).size).toBe(manifest.pages.length);
  });
});
