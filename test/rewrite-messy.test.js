// @ts-check
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { crawl } from '../lib/index.js';
import { readManifest, tempDirs } from './crawl-helpers.js';

/**
 * A crawl of a small messy site (a Shift_JIS page, a bare form action, two
 * roots in one directory), end to end: what the origin was asked for, each
 * written file byte for byte against the origin's body, and the manifest.
 */

const SJIS_SO = Buffer.from([0x83, 0x5c]); // "ソ" in Shift_JIS: its trail byte is "\"

/** @type {Record<string, { type: string, body: Buffer }>} */
const PAGES = {
  '/s/': { type: 'text/html', body: Buffer.from('<html><body><a href="sjis.asp">s</a><form action method="post"><input name="q"></form></body></html>') },
  '/s/sjis.asp': {
    type: 'text/html; charset=Shift_JIS',
    body: Buffer.concat([Buffer.from('<html><body>'), SJIS_SO, Buffer.from(' <a href="p.asp?q='), SJIS_SO, Buffer.from('">'), SJIS_SO, Buffer.from('</a></body></html>')]),
  },
  '/s/p.asp?q=%83\\': { type: 'text/html', body: Buffer.from('<html><body>p</body></html>') },
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
  await crawl({ roots: [`${origin}/s/`, `${origin}/s/sjis.asp`], out, concurrency: 2, retries: 0, timeout: 10_000, threads: 0 });
  manifest = await readManifest(out);
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server.close(() => resolve(undefined)));
  await dirs.cleanup();
});

describe('a messy site, crawled', () => {
  it('asks for a Shift_JIS query in Shift_JIS, as a browser does, and links its file', async () => {
    expect(requested).toContain('/s/p.asp?q=%83\\');
    expect(requested.filter((url) => url.includes('%E3%82%BD'))).toEqual([]);
    const page = manifest.pages.find((p) => p.url === `${origin}/s/p.asp?q=%83\\`);
    expect(page?.file).toBeDefined();
    const written = await readFile(path.join(out, 's/sjis.asp.html'));
    const link = 'p.asp@q=_83_.html'; // "%" and "\\" become "_" in a default name
    expect(page?.file).toBe(`s/${link}`);
    // Only the link's value changed; the Shift_JIS bytes around it are the origin's.
    const origin_ = PAGES['/s/sjis.asp'].body.toString('latin1');
    expect(written.toString('latin1')).toBe(origin_.replace(`p.asp?q=${SJIS_SO.toString('latin1')}`, link));
  });

  it('gives a bare form action the live page URL', async () => {
    const written = await readFile(path.join(out, 's/index.html'), 'latin1');
    expect(written).toBe(PAGES['/s/'].body.toString('latin1').replace('<form action method', '<form action="/s/" method').replace('href="sjis.asp"', 'href="sjis.asp.html"'));
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
