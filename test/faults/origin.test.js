// @ts-check
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { crawl } from '../../lib/index.js';
import { startHostile } from '../../fixtures/hostile.js';
import { readManifest, tempDirs } from '../crawl-helpers.js';

/**
 * Hostile origins: what the origin does, and what the user gets (the page's
 * state in the manifest, what is in OUT, what is not).
 */

/** @type {Awaited<ReturnType<typeof startHostile>>} */
let origin;
const dirs = tempDirs();
beforeAll(async () => { origin = await startHostile(); });
afterAll(async () => {
  await origin.close();
  await dirs.cleanup();
});
beforeEach(() => origin.reset());

describe('bodies compressed although identity was asked for', () => {
  it('gzip, deflate (zlib and raw), br and two codings are decoded: written as text, their links followed', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [origin.url('/gzip/index.html')], out, retries: 0, maxPageBytes: 1024 * 1024 });
    const manifest = await readManifest(out);
    for (const name of ['gzip', 'deflate', 'deflate-raw', 'br', 'multi']) {
      const page = manifest.pages.find((p) => p.url === origin.url(`/gzip/${name}.html`));
      expect(page, name).toBeDefined();
      const text = await readFile(path.join(out, /** @type {{ file: string }} */ (page).file), 'utf8');
      expect(text).toContain(`<p>${name}</p>`);
      expect(origin.count(`/gzip/found-${name}.html`), name).toBe(1);
    }
    expect(result.failed).toBe(4);
  });

  it('a compression bomb is refused at --max-page-bytes; corrupt and unknown codings are clear failures; none is written', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl({ roots: [origin.url('/gzip/index.html')], out, retries: 0, maxPageBytes: 1024 * 1024 });
    const manifest = await readManifest(out);
    const errors = Object.fromEntries(manifest.errors.map((error) => [error.url.replace(origin.origin, ''), error]));
    expect(errors['/gzip/bomb.html']).toMatchObject({ code: 'PAGE_TOO_LARGE' });
    expect(errors['/gzip/bomb.html'].message).toMatch(/gzip-decoded body is over --max-page-bytes 1048576/);
    expect(errors['/gzip/deflate-bomb.html']).toMatchObject({ code: 'PAGE_TOO_LARGE' }); // zlib-wrapped: not retried as raw deflate
    expect(errors['/gzip/corrupt.html']).toMatchObject({ code: 'CONTENT_ENCODING' });
    expect(errors['/gzip/zstd.html']).toMatchObject({ code: 'CONTENT_ENCODING' });
    expect(errors['/gzip/zstd.html'].message).toMatch(/"zstd"/);
    for (const name of ['bomb', 'deflate-bomb', 'corrupt', 'zstd']) expect(manifest.pages.some((p) => p.url.endsWith(`/${name}.html`))).toBe(false);
    // Not gzip at all is not retried: it will not be gzip the next time either.
    expect(origin.count('/gzip/corrupt.html')).toBe(1);
  });

  it('a compressed body cut short is a truncated body: retried, then a failure that says so', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [origin.url('/gzip/cut.html'), origin.url('/gzip/cut-deflate.html')], out, retries: 1 });
    expect(result.failed).toBe(2);
    expect(origin.count('/gzip/cut.html')).toBe(2);
    expect(origin.count('/gzip/cut-deflate.html')).toBe(2);
    const errors = (await readManifest(out)).errors;
    expect(errors).toMatchObject([ // in URL order
      { code: 'CONTENT_ENCODING', message: 'cannot decode the deflate body: it is cut short' },
      { code: 'CONTENT_ENCODING', message: 'cannot decode the gzip body: it is cut short' },
    ]);
  });
});

describe('redirects that lead nowhere', () => {
  it('a redirect without a Location, or with two, is a failure that says which', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [origin.url('/status/index.html')], out, retries: 0 });
    expect(result.pages).toBe(2);
    const errors = Object.fromEntries((await readManifest(out)).errors.map((error) => [error.url.replace(origin.origin, ''), error.message]));
    expect(errors).toEqual({
      '/status/301.html': 'HTTP 301 redirect without a Location',
      '/status/302.html': 'HTTP 302 redirect with several Location headers',
    });
  });
});

describe('a URL-growing trap (every page links a URL 1,000 characters longer)', () => {
  it('stops at --max-url-length (4096 by default) with a warning: memory and disk stay small', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [origin.url('/grow/')], out, retries: 0 });
    expect(result.pages).toBeLessThanOrEqual(5);
    expect(result.tooLong).toBeGreaterThan(0);
    expect(result.complete).toBe(false);
    expect(result.failed).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.warnings).toEqual([expect.objectContaining({ code: 'MAX_URL_LENGTH' })]);
  });
});

describe('a deep-path trap (every page links "a/", one level deeper)', () => {
  it('stops at --max-depth (64 by default) with a warning, quickly', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [origin.url('/deep/')], out, retries: 0 });
    expect(result.pages).toBe(65);
    expect(result.failed).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.warnings).toEqual([expect.objectContaining({ code: 'MAX_DEPTH' })]);
    expect(origin.count(`/deep/${'a/'.repeat(65)}`)).toBe(0);
  });

  it('past --max-depth raised, every page is written: paths are capped under 1,024 bytes, names stay unique', async () => {
    const out = path.join(await dirs.make(), 'out');
    // 700 levels: past 512, "a/" segments alone make a path over 1,024 bytes.
    const result = await crawl({ roots: [origin.url('/deep/')], out, retries: 0, maxDepth: 5000, maxPages: 700 });
    expect(result.failed).toBe(0);
    expect(result.pages).toBe(700);
    const manifest = await readManifest(out);
    const files = manifest.pages.map((page) => page.file);
    expect(new Set(files).size).toBe(700);
    expect(Math.max(...files.map((file) => Buffer.byteLength(file)))).toBeLessThanOrEqual(1024);
    const deepest = manifest.pages.find((page) => page.url === origin.url(`/deep/${'a/'.repeat(699)}`));
    expect(deepest?.file).toMatch(/^deep\/(a\/)+_[0-9a-f]{20}\/index\.html$/);
    expect((await readFile(path.join(out, /** @type {string} */ (deepest?.file)), 'utf8'))).toContain('deeper');
  });
});

describe('names that must survive every file system', () => {
  it('device names, .htaccess and trailing dots are refused as header names and made safe as URL names; UTF-8 header bytes are read as UTF-8', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [origin.url('/names/index.html')], out, retries: 0 });
    expect(result.failed).toBe(0);
    const manifest = await readManifest(out);
    const file = (/** @type {string} */ name) => manifest.pages.find((page) => page.url === origin.url(`/names/${name}`))?.file;
    expect(file('utf8.asp')).toBe('names/café.htm');
    expect(file('ok.asp')).toBe('names/fine.htm');
    expect(file('con.asp')).toBe('names/_con.asp.html');
    expect(file('htaccess.asp')).toBe('names/htaccess.asp.html');
    expect(file('dotdir.asp')).toBe('names/dotdir.asp.html');
    expect(file('aux')).toBe('names/_aux.html');
    expect(file('LPT1.txt')).toBe('names/_LPT1.txt.html');
    expect(file('.htpasswd')).toBe('names/_.htpasswd.html');
    expect(file('trail.')).toBe('names/trail..html');
    const refused = manifest.warnings.filter((warning) => warning.code === 'UNSAFE_NAME').map((warning) => warning.url.replace(origin.origin, '')).sort();
    expect(refused).toEqual(['/names/con.asp', '/names/dotdir.asp', '/names/htaccess.asp']);
    for (const page of manifest.pages) {
      for (const segment of page.file.split('/')) {
        expect(segment).not.toMatch(/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i);
        expect(segment).not.toMatch(/^\.ht|[. ]$/i);
      }
    }
  });

  it('a byte order mark decides the encoding over a <meta charset> that disagrees', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl({ roots: [origin.url('/bom.html')], out, retries: 0, include: ['/'] });
    expect(origin.count('/caf%C3%A9.html')).toBe(1);
  });
});

describe('slow, broken and huge answers', () => {
  it('a drip that never ends fails on --timeout; a reset mid-body and a 50 MiB page are recorded failures; the rest is written', async () => {
    const out = path.join(await dirs.make(), 'out');
    // 3 s: the drip fails on it; the 50 MiB page passes --max-page-bytes (10 MiB) well before it, even on a busy machine.
    const result = await crawl({ roots: [origin.url('/drip.html'), origin.url('/reset.html'), origin.url('/huge.html'), origin.url('/gzip/gzip.html')], include: ['/'], out, retries: 0, timeout: 3000 });
    const manifest = await readManifest(out);
    const errors = Object.fromEntries(manifest.errors.map((error) => [error.url.replace(origin.origin, ''), error]));
    expect(errors['/drip.html']).toMatchObject({ code: 'TIMEOUT' });
    expect(errors['/reset.html']).toMatchObject({ code: 'FETCH' });
    expect(errors['/huge.html']).toMatchObject({ code: 'PAGE_TOO_LARGE' });
    expect(result.failed).toBe(3);
    expect(manifest.pages.map((page) => page.url)).toContain(origin.url('/gzip/gzip.html'));
  });
});

describe('pages that stress the parser', () => {
  it('a page with 200,000 links is scanned and written, every out-of-scope link kept as written', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [origin.url('/many/links.html')], out, retries: 0 });
    expect(result.failed).toBe(0);
    const text = await readFile(path.join(out, 'many/links.html'), 'utf8');
    expect(text.match(/href="\/elsewhere\/\d+"/g)).toHaveLength(200_000);
    expect(text).toContain('href="malformed.html"');
  });

  it('malformed HTML (100,000 open tags, invalid UTF-8, broken tags) keeps every byte but the one link it must change', async () => {
    const { MALFORMED } = await import('../../fixtures/hostile.js');
    const out = path.join(await dirs.make(), 'out');
    await crawl({ roots: [origin.url('/many/malformed.html')], out, retries: 0 });
    const written = await readFile(path.join(out, 'many/malformed.html'));
    // broken.asp is written as broken.asp.html: only that attribute value changes.
    const expected = Buffer.from(MALFORMED.toString('latin1').replace("href='broken.asp'", "href='broken.asp.html'"), 'latin1');
    expect(expected.equals(MALFORMED)).toBe(false);
    expect(written.equals(expected)).toBe(true);
  });
});
