// @ts-check
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { crawl } from '../lib/index.js';
import { readManifest, tempDirs } from './crawl-helpers.js';

/**
 * A crawl of a small messy site (a windows-1252 page whose link has a query
 * with a non-ASCII byte and a character reference, a bare form action, two
 * roots in one directory), end to end: what the origin was asked for, each
 * written file byte for byte against the origin's body, and the manifest.
 */

/** "café" in windows-1252, then "&#38;" (an "&" written as a reference: its "#" starts no fragment) */
const QUERY = Buffer.from('q=caf\xe9&#38;n=1', 'latin1');

/** @type {Record<string, { type: string, body: Buffer }>} */
const PAGES = {
  '/s/': { type: 'text/html', body: Buffer.from('<html><body><a href="legacy.asp">s</a><form action method="post"><input name="q"></form></body></html>') },
  '/s/legacy.asp': {
    type: 'text/html; charset=windows-1252',
    body: Buffer.concat([Buffer.from('<html><body>caf\xe9 <a href="p.asp?', 'latin1'), QUERY, Buffer.from('#top">caf\xe9</a></body></html>', 'latin1')]),
  },
  '/s/p.asp?q=caf%E9&n=1': { type: 'text/html', body: Buffer.from('<html><body>p</body></html>') },
};

/** @type {http.Server} */
let server;
/** @type {string} */
let origin;
/** @type {string[]} */
const requested = [];
const dirs = tempDirs();
/** @type {string} */
let out;
/** @type {import('./crawl-helpers.js').Manifest} */
let manifest;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requested.push(req.url ?? '');
    const page = PAGES[req.url ?? ''];
    res.writeHead(page ? 200 : 404, { 'content-type': page?.type ?? 'text/plain' });
    res.end(page?.body ?? 'not found');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
  out = path.join(await dirs.make(), 'out');
  await crawl({ roots: [`${origin}/s/`, `${origin}/s/legacy.asp`], out, concurrency: 2, retries: 0, timeout: 10_000, threads: 0 });
  manifest = await readManifest(out);
});

afterAll(async () => {
  await new Promise((resolve) => server.close(() => resolve(undefined)));
  await dirs.cleanup();
});

describe('a messy site, crawled', () => {
  it('asks for a windows-1252 query in windows-1252, as a browser does, reads "&#38;" as "&", and links its file', async () => {
    expect(requested).toContain('/s/p.asp?q=caf%E9&n=1');
    expect(requested.filter((url) => url.includes('38;'))).toEqual([]);
    const page = manifest.pages.find((p) => p.url === `${origin}/s/p.asp?q=caf%E9&n=1`);
    expect(page?.file).toBeDefined();
    const written = (await readFile(path.join(out, 's/legacy.asp.html'))).toString('latin1');
    // Only the link's value changed (to the file, its fragment kept); the bytes around it are the origin's.
    const before = PAGES['/s/legacy.asp'].body.toString('latin1');
    const at = before.indexOf('p.asp?');
    expect(written.slice(0, at)).toBe(before.slice(0, at));
    expect(written.slice(written.indexOf('#top"'))).toBe(before.slice(before.indexOf('#top"')));
    // (the file's "&" written "&amp;" in the attribute, as it must be)
    expect(written).toContain(`href="${path.posix.basename(/** @type {string} */ (page?.file)).replace(/&/g, '&amp;')}#top"`);
  });

  it('gives a bare form action the live page URL', async () => {
    const written = await readFile(path.join(out, 's/index.html'), 'latin1');
    expect(written).toBe(PAGES['/s/'].body.toString('latin1').replace('<form action method', '<form action="/s/" method').replace('href="legacy.asp"', 'href="legacy.asp.html"'));
  });

  it('lists what was written, and the directory of both roots once', async () => {
    expect(manifest.scope.include).toEqual([`${origin}/s/`]);
    for (const page of manifest.pages) {
      const bytes = await readFile(path.join(out, page.file));
      expect(page.bytes).toBe(bytes.length);
      expect(page.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    }
    expect(manifest.pages.map((p) => p.url).sort()).toEqual(Object.keys(PAGES).map((p) => origin + p).sort());
  });
});
