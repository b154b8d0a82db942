// @ts-check
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { preview } from '../lib/preview/index.js';
import { UsageError } from '../lib/errors.js';
import { createHttpLoader } from '../lib/fetch/index.js';
import { LocalTree } from '../lib/output/local-tree.js';
import { SitemapWriter } from '../lib/output/sitemap.js';
import { MAX_SITEMAPS, SitemapError, loadListedRoots, loadSitemaps, parseSitemap, readUrlList } from '../lib/roots/sources.js';
import { resolveCrawlOptions } from '../lib/options/crawl-options.js';
import { exists, listFiles, readManifest } from './crawl-helpers.js';
import { BIN, runNode } from './helpers/cli.js';
import { useTestDir } from './helpers/fixtures.js';

/**
 * Roots from sitemaps (index, plain and gzipped children) and URL lists (file
 * or stdin), and `crawl --write-sitemap`.
 */

/** @type {string} */
let dir;
const { cli, defer, sitemapSite, serve } = useTestDir('prerender-sources-', (made) => { dir = made; });

/**
 * The real bin in the test's dir, with `input` on its stdin; the test fails if it runs over 60 s.
 * @param {string[]} args
 * @param {string} input
 */
async function spawnBin(args, input) {
  const result = await runNode([BIN, ...args], { cwd: dir, input });
  if (result.timedOut) throw new Error(`prerender ${args.join(' ')} did not finish within 60 s; stderr: ${result.stderr}`);
  return result;
}

/**
 * A fake fetchPage over a table of URL -> body (Buffer/string) or { location }.
 * @param {Record<string, string | Buffer | { location: string } | Error>} table
 */
function fakeFetch(table) {
  /** @type {string[]} */
  const fetched = [];
  /** @param {string} url */
  const fetchPage = async (url) => {
    fetched.push(url);
    const entry = table[url];
    if (entry === undefined) throw new Error('HTTP 404');
    if (entry instanceof Error) throw entry;
    if (typeof entry === 'object' && !Buffer.isBuffer(entry)) return { url, status: 301, headers: {}, body: Buffer.alloc(0), location: entry.location };
    return { url, status: 200, headers: {}, body: Buffer.from(entry) };
  };
  return { fetchPage, fetched };
}

const urlset = (/** @type {string[]} */ urls) => `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<url><loc>${u}</loc></url>`).join('')}</urlset>`;
const sitemapIndex = (/** @type {string[]} */ urls) => `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<sitemap><loc>${u}</loc></sitemap>`).join('')}</sitemapindex>`;

describe('parseSitemap', () => {
  it('reads the <loc> of a urlset in order: entities decoded, CDATA unwrapped, whitespace trimmed', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://shop.example/st/dir.asp</loc><lastmod>2024-01-01</lastmod></url>
  <url>
    <loc>
      http://shop.example/st/dir.asp?Start=11&amp;Count=10
    </loc>
  </url>
  <url><loc><![CDATA[http://shop.example/st/product.asp?a=1&b=2]]></loc></url>
  <url><loc>http://shop.example/caf&#233;/</loc></url>
  <url><loc>   </loc></url>
</urlset>`;
    expect(parseSitemap(xml)).toMatchObject({
      index: false,
      locs: [
        'http://shop.example/st/dir.asp',
        'http://shop.example/st/dir.asp?Start=11&Count=10',
        'http://shop.example/st/product.asp?a=1&b=2',
        'http://shop.example/café/',
      ],
    });
  });

  it('tells a sitemap index from a urlset, with or without a namespace prefix', () => {
    expect(parseSitemap(sitemapIndex(['http://a.example/s1.xml', 'http://a.example/s2.xml.gz']))).toMatchObject({ index: true, locs: ['http://a.example/s1.xml', 'http://a.example/s2.xml.gz'] });
    const prefixed = '<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:sitemap><sm:loc>http://a.example/s.xml</sm:loc></sm:sitemap></sm:sitemapindex>';
    expect(parseSitemap(prefixed)).toMatchObject({ index: true, locs: ['http://a.example/s.xml'] });
    const prefixedSet = '<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:url><sm:loc>http://a.example/p</sm:loc></sm:url></sm:urlset>';
    expect(parseSitemap(prefixedSet)).toMatchObject({ index: false, locs: ['http://a.example/p'] });
    expect(parseSitemap('<urlset></urlset>')).toMatchObject({ index: false, locs: [] });
    expect(parseSitemap('<html><body>Not found</body></html>')).toMatchObject({ index: false, locs: [] });
  });
});

describe('loadSitemaps', () => {
  it('follows a sitemap index to a plain and a gzipped child, through a real server', async () => {
    const site = await sitemapSite();
    const fetcher = createHttpLoader({ concurrency: 2, timeout: 5000, retries: 0, maxPageBytes: 1024 * 1024 });
    defer(() => fetcher.close());
    /** @type {string[]} */
    const warnings = [];
    const urls = await loadSitemaps([site.url], { fetchPage: (url) => fetcher.load(url), onWarning: (_url, message) => warnings.push(message) });
    expect(warnings).toEqual([]);
    expect(urls.sort()).toEqual([...site.listed].sort());
    expect(urls).toContain(site.product(6)); // only in the gzipped child
    expect(urls).toContain(`${site.origin}/info/privacy.asp`); // only in the plain child
    expect(site.hits.get('/sitemaps/products.xml.gz')).toBe(1);
    expect(site.hits.get('/sitemaps/pages.xml')).toBe(1);
    expect(site.hits.get('/sitemap.xml')).toBe(1);
    // Reading sitemaps fetches no page.
    expect([...site.hits.keys()].filter((key) => !key.includes('sitemap'))).toEqual([]);
  });

  it('detects gzip by its bytes, not by the name', async () => {
    const { fetchPage } = fakeFetch({
      'http://a.example/index.xml': sitemapIndex(['http://a.example/really-gzipped.xml', 'http://a.example/not-gzipped.xml.gz']),
      'http://a.example/really-gzipped.xml': zlib.gzipSync(urlset(['http://a.example/one'])),
      'http://a.example/not-gzipped.xml.gz': urlset(['http://a.example/two']),
    });
    expect(await loadSitemaps(['http://a.example/index.xml'], { fetchPage })).toEqual(['http://a.example/one', 'http://a.example/two']);
    // A gzipped top-level urlset, too.
    const gz = fakeFetch({ 'http://a.example/s.xml.gz': zlib.gzipSync(urlset(['http://a.example/three'])) });
    expect(await loadSitemaps(['http://a.example/s.xml.gz'], { fetchPage: gz.fetchPage })).toEqual(['http://a.example/three']);
  });

  it('an index trap (every index lists 50 new indexes) stops at MAX_SITEMAPS sitemaps read, with a warning', async () => {
    let fetched = 0;
    const fetchPage = async (/** @type {string} */ url) => {
      fetched++;
      const here = new URL(url).pathname;
      const body = sitemapIndex(Array.from({ length: 50 }, (_, i) => `http://a.example${here.replace(/\.xml$/, '')}-${i}.xml`));
      return { url, status: 200, headers: {}, body: Buffer.from(body) };
    };
    /** @type {string[]} */
    const warnings = [];
    await loadSitemaps(['http://a.example/i.xml'], { fetchPage, onWarning: (_url, message) => warnings.push(message) });
    expect(fetched).toBe(MAX_SITEMAPS);
    expect(warnings.filter((message) => /no more sitemaps are read: 1000 sitemaps were read/.test(message))).toHaveLength(1);
  });

  it('no more sitemaps are read once they list --max-pages URLs', async () => {
    const { fetchPage, fetched } = fakeFetch({
      'http://a.example/index.xml': sitemapIndex(['http://a.example/s1.xml', 'http://a.example/s2.xml']),
      'http://a.example/s1.xml': urlset(['http://a.example/1', 'http://a.example/2', 'http://a.example/3']),
      'http://a.example/s2.xml': urlset(['http://a.example/4']),
    });
    /** @type {string[]} */
    const warnings = [];
    let cut = 0;
    // Every URL of a sitemap read (the crawl's --max-pages decides what is crawled), none of one not read; and it says so.
    expect(await loadSitemaps(['http://a.example/index.xml'], { fetchPage, maxUrls: 2, onWarning: (_url, message) => warnings.push(message), onCut: () => cut++ }))
      .toEqual(['http://a.example/1', 'http://a.example/2', 'http://a.example/3']);
    expect(fetched).toEqual(['http://a.example/index.xml', 'http://a.example/s1.xml']);
    expect(warnings).toEqual([expect.stringMatching(/they list 2 URLs already \(--max-pages\); the URLs of those not read are not crawled, and nothing is removed/)]);
    expect(cut).toBe(1);
  });

  it('a re-crawl that did not read every sitemap removes nothing: the pages of the sitemaps not read are kept', async () => {
    const server = http.createServer((req, res) => {
      const base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
      const xml = (/** @type {string} */ body) => { res.writeHead(200, { 'content-type': 'application/xml' }); res.end(body); };
      if (req.url === '/sitemap.xml') return xml(sitemapIndex([`${base}/s1.xml`, `${base}/s2.xml`]));
      if (req.url === '/s1.xml') return xml(urlset([1, 2, 3].map((n) => `${base}/p${n}`)));
      if (req.url === '/s2.xml') return xml(urlset([4, 5].map((n) => `${base}/p${n}`)));
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(`<html><body>${req.url}</body></html>`);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-sitemap-cut-'));
    try {
      const root = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
      const crawl = async (/** @type {string} */ maxPages) => {
        const result = await runNode([BIN, 'crawl', '--sitemap', `${root}/sitemap.xml`, '-o', path.join(dir, 'out'), '--max-pages', maxPages, '--json', '--prune-max', '100%'], { cwd: dir });
        return JSON.parse(result.stdout);
      };
      expect((await crawl('10')).pages).toBe(5);
      const cut = await crawl('3');
      expect(cut).toMatchObject({ complete: false, sitemapsCut: true, churn: expect.objectContaining({ removed: 0 }) });
      expect((await listFiles(path.join(dir, 'out'))).filter((file) => /^p\d/.test(file)).sort()).toEqual(['p1.html', 'p2.html', 'p3.html', 'p4.html', 'p5.html']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a URL list of 150,000 URLs is read whole (a spread of them overflowed the call stack)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-urls-'));
    try {
      const list = path.join(dir, 'urls.txt');
      await writeFile(list, Array.from({ length: 150_000 }, (_, i) => `http://a.example/p/${i}`).join('\n'));
      const options = resolveCrawlOptions({ urls: list, out: path.join(dir, 'out') });
      const listed = await loadListedRoots(options, () => {});
      expect(listed).toHaveLength(150_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('returns canonical URLs once, however often they are listed', async () => {
    const { fetchPage } = fakeFetch({
      'http://a.example/s1.xml': urlset(['http://a.example/p?id=1#top', 'http://a.example:80/p?id=1', 'http://A.EXAMPLE/p?id=%7e2']),
      'http://a.example/s2.xml': urlset(['http://a.example/p?id=1']),
    });
    expect(await loadSitemaps(['http://a.example/s1.xml', 'http://a.example/s2.xml'], { fetchPage })).toEqual(['http://a.example/p?id=1', 'http://a.example/p?id=~2']);
  });

  it('reads each sitemap once when an index lists itself', async () => {
    const site = await sitemapSite();
    const fetcher = createHttpLoader({ concurrency: 1, timeout: 5000, retries: 0, maxPageBytes: 1024 * 1024 });
    defer(() => fetcher.close());
    const urls = await loadSitemaps([`${site.origin}/sitemap-loop.xml`], { fetchPage: (url) => fetcher.load(url) });
    expect(urls.sort()).toEqual(site.listed.filter((url) => /\/(catalog\/index|info\/)/.test(url)).sort());
    expect(site.hits.get('/sitemap-loop.xml')).toBe(1);
  });

  it('warns about a child that fails and reads the others; a failing top-level sitemap is an error', async () => {
    const site = await sitemapSite();
    const fetcher = createHttpLoader({ concurrency: 1, timeout: 5000, retries: 0, maxPageBytes: 1024 * 1024 });
    defer(() => fetcher.close());
    /** @type {[string, string][]} */
    const warnings = [];
    const urls = await loadSitemaps([`${site.origin}/sitemap-broken.xml`], { fetchPage: (url) => fetcher.load(url), onWarning: (url, message) => warnings.push([url, message]) });
    expect(urls).toHaveLength(4);
    expect(warnings).toEqual([[`${site.origin}/sitemaps/missing.xml`, `cannot fetch sitemap ${site.origin}/sitemaps/missing.xml: HTTP 404`]]);

    const error = await loadSitemaps([`${site.origin}/no-sitemap-here.xml`], { fetchPage: (url) => fetcher.load(url) }).catch((e) => e);
    expect(error).toBeInstanceOf(SitemapError);
    expect(error.code).toBe('SITEMAP');
    expect(error.message).toBe(`cannot fetch sitemap ${site.origin}/no-sitemap-here.xml: HTTP 404`);
  });

  it('warns about a corrupt gzipped child, a non-http entry and an index nested too deep', async () => {
    const table = /** @type {Record<string, string | Buffer>} */ ({
      'http://a.example/top.xml': sitemapIndex(['http://a.example/bad.xml.gz', 'http://a.example/s0.xml']),
      'http://a.example/bad.xml.gz': Buffer.concat([zlib.gzipSync(urlset(['http://a.example/never'])).subarray(0, 20)]),
    });
    // s0 -> s1 -> ... each index listing its own urlset u<n> and the next index.
    for (let n = 0; n < 7; n++) {
      table[`http://a.example/s${n}.xml`] = sitemapIndex([`http://a.example/u${n}.xml`, `http://a.example/s${n + 1}.xml`]);
      table[`http://a.example/u${n}.xml`] = urlset([`http://a.example/page${n}`, 'mailto:shop@example.com']);
    }
    const { fetchPage, fetched } = fakeFetch(table);
    /** @type {string[]} */
    const warnings = [];
    const urls = await loadSitemaps(['http://a.example/top.xml'], { fetchPage, onWarning: (_url, message) => warnings.push(message) });
    // top is depth 0, s0 depth 1 ... s3 depth 4: the children of s3 are the last read.
    expect(urls).toEqual(['http://a.example/page0', 'http://a.example/page1', 'http://a.example/page2']);
    expect(fetched).not.toContain('http://a.example/s4.xml');
    expect(warnings.filter((w) => w.startsWith('cannot read sitemap http://a.example/bad.xml.gz: '))).toHaveLength(1);
    expect(warnings.filter((w) => w === 'sitemap entry is not an http(s) URL: "mailto:shop@example.com"')).toHaveLength(3);
    expect(warnings).toContain('sitemap index nested deeper than 4: http://a.example/u3.xml skipped');
    expect(warnings).toContain('sitemap index nested deeper than 4: http://a.example/s4.xml skipped');
  });

  it('follows a redirect of a sitemap', async () => {
    const { fetchPage } = fakeFetch({
      'http://a.example/sitemap.xml': { location: '/new/sitemap.xml' },
      'http://a.example/new/sitemap.xml': urlset(['http://a.example/moved']),
    });
    expect(await loadSitemaps(['http://a.example/sitemap.xml'], { fetchPage })).toEqual(['http://a.example/moved']);
  });
});

describe('loadSitemaps: what is not a sitemap, and relative entries', () => {
  it('names the root element, and none for a body without one', () => {
    expect(parseSitemap(urlset(['http://a.example/p'])).root).toBe('urlset');
    expect(parseSitemap('<sm:sitemapindex xmlns:sm="s"></sm:sitemapindex>').root).toBe('sm:sitemapindex');
    expect(parseSitemap('<!DOCTYPE html><html><body>Shop</body></html>').root).toBe('html');
    expect(parseSitemap('http://a.example/p\n').root).toBeNull();
  });

  it('an HTML page (or a body with no XML element) answered for the sitemap given is an error, not an empty sitemap', async () => {
    const { fetchPage } = fakeFetch({
      'http://a.example/sitemap.xml': '<!DOCTYPE html><html><body><h1>Welcome</h1></body></html>',
      'http://a.example/urls.txt': 'http://a.example/p\n',
    });
    const error = await loadSitemaps(['http://a.example/sitemap.xml'], { fetchPage }).catch((e) => e);
    expect(error).toBeInstanceOf(SitemapError);
    expect(error.message).toBe('http://a.example/sitemap.xml is not a sitemap: its root element is <html>, not <urlset> or <sitemapindex>');
    const text = await loadSitemaps(['http://a.example/urls.txt'], { fetchPage }).catch((e) => e);
    expect(text).toBeInstanceOf(SitemapError);
    expect(text.message).toBe('http://a.example/urls.txt is not a sitemap: it holds no XML element, not <urlset> or <sitemapindex>');
  });

  it('an HTML page listed in an index is a warning, and the other children are read', async () => {
    const { fetchPage } = fakeFetch({
      'http://a.example/index.xml': sitemapIndex(['http://a.example/login', 'http://a.example/s.xml']),
      'http://a.example/login': '<html><body><form></form></body></html>',
      'http://a.example/s.xml': urlset(['http://a.example/p']),
    });
    /** @type {string[]} */
    const warnings = [];
    expect(await loadSitemaps(['http://a.example/index.xml'], { fetchPage, onWarning: (_url, message) => warnings.push(message) })).toEqual(['http://a.example/p']);
    expect(warnings).toEqual(['http://a.example/login is not a sitemap: its root element is <html>, not <urlset> or <sitemapindex>']);
  });

  it('reads relative entries against where the sitemap was found in the end (after its redirects), and takes entries of any origin', async () => {
    const { fetchPage } = fakeFetch({
      'http://a.example/sitemap.xml': { location: 'https://a.example/sitemap.xml' },
      'https://a.example/sitemap.xml': urlset(['https://a.example/p', 'relative', 'https://cdn.example/q']),
    });
    expect(await loadSitemaps(['http://a.example/sitemap.xml'], { fetchPage })).toEqual(['https://a.example/p', 'https://a.example/relative', 'https://cdn.example/q']);
  });
});

describe('readUrlList', () => {
  const text = '\uFEFF# products to render\r\nhttp://shop.example/st/product.asp?SKUSetID=1\r\n\r\n   http://shop.example/st/product.asp?SKUSetID=2#reviews   \n# another comment\nhttp://SHOP.example:80/st/product.asp?SKUSetID=1\n\t\nhttps://shop.example/st/dir.asp';
  const expected = [
    'http://shop.example/st/product.asp?SKUSetID=1',
    'http://shop.example/st/product.asp?SKUSetID=2',
    'https://shop.example/st/dir.asp',
  ];

  it('reads one URL per line from a file: comments, blank lines, CRLF, a BOM and duplicates handled', async () => {
    const file = path.join(dir, 'urls.txt');
    await writeFile(file, text);
    expect(await readUrlList(file)).toEqual(expected);
  });

  it('reads "-" from stdin', async () => {
    expect(await readUrlList('-', { stdin: Readable.from([Buffer.from(text.slice(0, 30)), Buffer.from(text.slice(30))]) })).toEqual(expected);
    expect(await readUrlList('-', { stdin: Readable.from([]) })).toEqual([]);
  });

  it('refuses a line that is not an absolute http(s) URL, naming the file and the line', async () => {
    const file = path.join(dir, 'urls.txt');
    await writeFile(file, 'http://shop.example/a\n# ok\nshop.example/b\n');
    const error = await readUrlList(file).catch((e) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(`${file}:3: not an absolute http(s) URL: "shop.example/b"`);
    const fromStdin = await readUrlList('-', { stdin: Readable.from(['ftp://x.example/\n']) }).catch((e) => e);
    expect(fromStdin.message).toBe('stdin:1: not an absolute http(s) URL: "ftp://x.example/"');
  });

  it('reports a file it cannot read as a usage error', async () => {
    const error = await readUrlList(path.join(dir, 'missing.txt')).catch((e) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(/^cannot read --urls .*missing\.txt: ENOENT/);
  });
});

describe('crawl --sitemap', () => {
  it('renders a catalogue from a sitemap index with a gzipped child, without a root page', async () => {
    const site = await sitemapSite();
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', '--sitemap', site.url, '--retries', '0', '-o', out, '-q']);
    expect(result.code).toBe(1); // product 13 fails
    const manifest = await readManifest(out);
    expect(manifest.roots).toEqual([]);
    expect(manifest.sources).toEqual({ sitemaps: [site.url], listedUrls: site.listed.length });
    expect(Object.fromEntries(manifest.pages.map((/** @type {any} */ p) => [p.url.slice(site.origin.length), p.file]))).toEqual({
      '/catalog/index.asp': 'catalog/index.asp.html',
      '/info/about.asp': 'info/about.asp.html',
      '/info/privacy.asp': 'info/privacy.asp.html',
      '/catalog/product.asp?id=1': 'catalog/product1.htm',
      '/catalog/product.asp?id=2': 'catalog/product2.htm',
      '/catalog/product.asp?id=3': 'catalog/product3-2.htm',
      '/catalog/product.asp?id=4': 'catalog/product4.htm',
      '/catalog/product.asp?id=5': 'catalog/product 5 (red).htm',
      '/catalog/product.asp?id=6': 'catalog/product6.htm',
      '/catalog/legacy.asp?id=3': 'catalog/product3.htm',
      '/catalog/unsafe.asp': 'catalog/unsafe.asp.html',
    });
    expect(manifest.errors.map((/** @type {any} */ e) => [e.url, e.message])).toEqual([[site.product(13), 'HTTP 500']]);
    expect(manifest.redirects.map((/** @type {any} */ r) => [r.url, r.location]).sort()).toEqual([
      [`${site.origin}/catalog/old.asp?id=2`, site.product(2)],
      [`${site.origin}/info/old-terms.asp`, `${site.origin}/info/terms.asp`],
    ]);
    // Listed URLs are in scope themselves, not their directories: what they link stays dynamic.
    for (const unlisted of ['/catalog/spec.pdf', '/info/terms.asp', '/cart.asp', '/checkout/', '/search.asp']) {
      expect(site.hits.has(unlisted), unlisted).toBe(false);
    }
    expect(site.hits.get('/catalog/product.asp?id=2')).toBe(1); // listed and a redirect target: fetched once
  });

  it('lets an exclude win over a listed URL, and adds listed URLs to the roots and their scope', async () => {
    const site = await sitemapSite();
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', `${site.origin}/info/about.asp`, '--sitemap', site.url, '-x', '/catalog/product.asp?id=4', '/catalog/product.asp?id=13', '-o', out, '-q']);
    expect(result.code).toBe(0);
    const manifest = await readManifest(out);
    const urls = manifest.pages.map((/** @type {any} */ p) => p.url);
    expect(urls).not.toContain(site.product(4));
    expect(site.hits.has('/catalog/product.asp?id=4')).toBe(false);
    expect(site.hits.has('/catalog/product.asp?id=13')).toBe(false);
    // The root brings its directory into scope: the redirect target /info/terms.asp is written now.
    expect(urls).toContain(`${site.origin}/info/terms.asp`);
    expect(urls).toContain(site.product(6));
    expect(manifest.roots).toEqual([`${site.origin}/info/about.asp`]);
    expect(manifest.sources.listedUrls).toBe(site.listed.length);
  });

  it('records a child sitemap that fails as a warning and goes on', async () => {
    const site = await sitemapSite();
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', '--sitemap', `${site.origin}/sitemap-broken.xml`, '-o', out, '-q']);
    expect(result.code).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.warnings).toContainEqual({ code: 'SITEMAP', url: `${site.origin}/sitemaps/missing.xml`, message: `cannot fetch sitemap ${site.origin}/sitemaps/missing.xml: HTTP 404` });
    expect(manifest.pages.map((/** @type {any} */ p) => p.file).sort()).toEqual(['catalog/index.asp.html', 'info/about.asp.html', 'info/privacy.asp.html']);
  });

  it('fails with exit 2, writing nothing, when the sitemap given cannot be fetched', async () => {
    const site = await sitemapSite();
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', '--sitemap', `${site.origin}/nope.xml`, '--retries', '0', '-o', out, '-q']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`prerender: cannot fetch sitemap ${site.origin}/nope.xml: HTTP 404\n`);
    expect(await exists(out)).toBe(false);
    const bad = await cli(['crawl', '--sitemap', 'sitemap.xml', '-o', out]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('prerender: --sitemap must be an absolute http(s) URL, got "sitemap.xml"\n');
  });

  it('a --sitemap that answers an HTML page is exit 2 with one line (and the --json error), even with a root given', async () => {
    const origin = await serve((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!DOCTYPE html><html><body><a href="/a.html">a</a></body></html>');
    });
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', `${origin}/`, '--sitemap', `${origin}/sitemap.xml`, '-o', out, '--json']);
    expect(result.code).toBe(2);
    const message = `${origin}/sitemap.xml is not a sitemap: its root element is <html>, not <urlset> or <sitemapindex>`;
    expect(result.stderr).toBe(`prerender: ${message}\n`);
    expect(JSON.parse(result.stdout).error).toEqual({ code: 'SITEMAP', message });
    expect(await exists(path.join(out, 'prerender-manifest.json'))).toBe(false);
  });

  it('preview --sitemap: listed URLs are crawled (reason: listed), what they link but is not listed stays dynamic', async () => {
    const site = await sitemapSite();
    /** @type {any[]} */
    const lines = (await cli(['preview', '--sitemap', site.url, '--retries', '0', '--json'])).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const totals = lines.at(-1);
    expect(totals.type).toBe('totals');
    expect(totals).toMatchObject({ pagesInScope: 11, failed: 1, collisions: 1, unsafeNames: 1 });
    expect(lines.find((row) => row.url === site.product(4))).toMatchObject({ decision: 'crawl', file: 'catalog/product4.htm', reason: 'listed in a sitemap or URL list', pattern: 'listed' });
    expect(lines.find((row) => row.url === `${site.origin}/catalog/spec.pdf`)).toMatchObject({ decision: 'dynamic', reason: 'out of scope' });
  });
});

describe('crawl --urls', () => {
  it('reads the URL list from stdin (the real bin) and exits 1 when one of them fails', async () => {
    const site = await sitemapSite();
    const input = `# two products and a broken one\n${site.product(1)}\n\n${site.product(2)}\r\n${site.product(13)}\n${site.product(1)}\n`;
    const result = await spawnBin(['crawl', '--urls', '-', '--retries', '0', '-o', 'out', '-q'], input);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(1);
    const manifest = await readManifest(path.join(dir, 'out'));
    expect(manifest.sources).toEqual({ urlList: 'stdin', listedUrls: 3 });
    expect(manifest.pages.map((/** @type {any} */ p) => [p.url, p.file])).toEqual([
      [site.product(1), 'catalog/product1.htm'],
      [site.product(2), 'catalog/product2.htm'],
    ]);
    expect(manifest.errors.map((/** @type {any} */ e) => e.url)).toEqual([site.product(13)]);
    expect(site.hits.get('/catalog/product.asp?id=1')).toBe(1);
    expect(site.hits.has('/catalog/index.asp')).toBe(false); // linked, but not listed: dynamic
  });

  it('previews a URL list from stdin (the real bin)', async () => {
    const site = await sitemapSite();
    const result = await spawnBin(['preview', '--urls', '-', '--json'], `${site.product(4)}\n${site.product(5)}\n`);
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.at(-1)).toMatchObject({ type: 'totals', pagesInScope: 2, failed: 0 });
    expect(await readdir(dir)).toEqual([]);
  });

  it('reads a URL list file and stdin given to run()', async () => {
    const site = await sitemapSite();
    const file = path.join(dir, 'urls.txt');
    await writeFile(file, `${site.product(3)}\n${site.catalog}\n`);
    const out = path.join(dir, 'from-file');
    expect((await cli(['crawl', '--urls', file, '-o', out, '-q'])).code).toBe(0);
    const fromFile = await readManifest(out);
    expect(fromFile.sources).toEqual({ urlList: file, listedUrls: 2 });
    expect(fromFile.pages.map((/** @type {any} */ p) => p.file).sort()).toEqual(['catalog/index.asp.html', 'catalog/product3.htm']);

    const stdin = new PassThrough();
    stdin.end(`${site.product(6)}\n`);
    const out2 = path.join(dir, 'from-stdin');
    expect((await cli(['crawl', '--urls', '-', '-o', out2, '-q'], { stdin })).code).toBe(0);
    expect((await readManifest(out2)).pages.map((/** @type {any} */ p) => p.url)).toEqual([site.product(6)]);
  });

  it('exits 2, fetching nothing, on a line that is not a URL', async () => {
    const site = await sitemapSite();
    const file = path.join(dir, 'urls.txt');
    await writeFile(file, `${site.product(1)}\n127.0.0.1/catalog/product.asp?id=2\n`);
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', '--urls', file, '-o', out]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`prerender: ${file}:2: not an absolute http(s) URL: "127.0.0.1/catalog/product.asp?id=2"\n`);
    expect(site.hits.size).toBe(0);
    expect(await exists(out)).toBe(false);
  });
});

describe('crawl --write-sitemap', () => {
  it('writes sitemap.xml listing every HTML page written, at --site-url, with encoded file paths', async () => {
    const site = await sitemapSite();
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', site.catalog, '--retries', '0', '-o', out, '-q', '--write-sitemap', '--site-url', 'https://static.example/shop']);
    expect(result.code).toBe(1);
    const manifest = await readManifest(out);
    const xml = await readFile(path.join(out, 'sitemap.xml'), 'utf8');
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')).toBe(true);
    const { index, locs } = parseSitemap(xml);
    expect(index).toBe(false);
    const html = manifest.pages.filter((/** @type {any} */ p) => p.contentType.startsWith('text/html'));
    expect(html.length).toBe(manifest.pages.length - 1); // spec.pdf is not HTML
    expect(locs.sort()).toEqual(html.map((/** @type {any} */ p) => `https://static.example/shop/${p.file.split('/').map(encodeURIComponent).join('/').replace(/[()]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())}`).sort());
    expect(locs).toContain('https://static.example/shop/catalog/product%205%20%28red%29.htm');
    expect(locs).toContain('https://static.example/shop/catalog/product3-2.htm');
    expect(locs.some((loc) => loc.includes('spec.pdf'))).toBe(false);
    expect(locs.some((loc) => loc.includes('product.asp'))).toBe(false); // the failed page
    // The sitemap is not a page, and no temp file is left.
    expect(manifest.pages.map((/** @type {any} */ p) => p.file)).not.toContain('sitemap.xml');
    expect(await listFiles(out)).toEqual([...manifest.pages.map((/** @type {any} */ p) => p.file), 'prerender-manifest.json', 'sitemap.xml'].sort());
  });

  it('is a usage error (exit 2) without --site-url, or with one that is not a URL; nothing is fetched or written', async () => {
    const site = await sitemapSite();
    const out = path.join(dir, 'out');
    const missing = await cli(['crawl', site.catalog, '--write-sitemap', '-o', out]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('prerender: --write-sitemap needs --site-url <url>: a sitemap lists absolute URLs\n');
    const bad = await cli(['crawl', site.catalog, '--write-sitemap', '--site-url', 'static.example', '-o', out]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('prerender: --site-url must be an absolute http(s) URL, got "static.example"\n');
    expect(site.hits.size).toBe(0);
    expect(await exists(out)).toBe(false);
  });

  it('writes no sitemap without --write-sitemap', async () => {
    const site = await sitemapSite();
    const out = path.join(dir, 'out');
    await cli(['crawl', site.catalog, '--retries', '0', '-o', out, '-q', '--site-url', 'https://static.example/']);
    expect(await exists(path.join(out, 'sitemap.xml'))).toBe(false);
    expect(await exists(path.join(out, 'prerender-manifest.json'))).toBe(true);
  });
});

describe('SitemapWriter', () => {
  /**
   * @param {string[]} files
   * @param {number} limit
   */
  async function writeSitemap(files, limit) {
    const target = new LocalTree(dir);
    await target.init();
    const writer = new SitemapWriter(target, new URL('https://static.example/'), { limit });
    for (const file of files) await writer.add(file);
    const written = await writer.finish();
    await target.commit();
    /** @type {Record<string, { index: boolean, locs: string[] }>} */
    const parsed = {};
    for (const name of written) parsed[name] = parseSitemap(await readFile(path.join(dir, name), 'utf8'));
    return { written, parsed, tree: await listFiles(dir) };
  }

  it('splits past the limit into sitemap-N.xml parts with sitemap.xml as their index', async () => {
    const files = ['a.html', 'b/c.html', 'd e.htm', 'f@x=1&y=2.html', 'g.html'];
    const { written, parsed, tree } = await writeSitemap(files, 2);
    expect(written).toEqual(['sitemap.xml', 'sitemap-1.xml', 'sitemap-2.xml', 'sitemap-3.xml']);
    expect(tree).toEqual(['sitemap-1.xml', 'sitemap-2.xml', 'sitemap-3.xml', 'sitemap.xml']);
    expect(parsed['sitemap.xml']).toEqual({ index: true, root: 'sitemapindex', locs: ['https://static.example/sitemap-1.xml', 'https://static.example/sitemap-2.xml', 'https://static.example/sitemap-3.xml'], lastmods: [undefined, undefined, undefined] });
    expect(parsed['sitemap-1.xml'].locs).toEqual(['https://static.example/a.html', 'https://static.example/b/c.html']);
    expect(parsed['sitemap-2.xml'].locs).toEqual(['https://static.example/d%20e.htm', 'https://static.example/f@x=1&y=2.html']);
    expect(parsed['sitemap-3.xml'].locs).toEqual(['https://static.example/g.html']);
  });

  it('writes one sitemap.xml up to the limit, and an empty urlset for no pages', async () => {
    const exact = await writeSitemap(['a.html', 'b.html'], 2);
    expect(exact.written).toEqual(['sitemap.xml']);
    expect(exact.parsed['sitemap.xml']).toEqual({ index: false, root: 'urlset', locs: ['https://static.example/a.html', 'https://static.example/b.html'], lastmods: [undefined, undefined] });
    await rm(path.join(dir, 'sitemap.xml'));
    const none = await writeSitemap([], 2);
    expect(none.written).toEqual(['sitemap.xml']);
    expect(none.parsed['sitemap.xml']).toEqual({ index: false, root: 'urlset', locs: [], lastmods: [] });
    expect(none.tree).toEqual(['sitemap.xml']);
  });
});

describe('parseSitemap reads XML as XML', () => {
  it.each([
    ['CDATA and entities', '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc><![CDATA[http://a/x?b=1&c=2]]></loc></url><url><loc>http://a/y?b=1&amp;c=&#50;</loc></url></urlset>', ['http://a/x?b=1&c=2', 'http://a/y?b=1&c=2']],
    ['a <loc> inside a comment is no entry', '<urlset><!-- <loc>http://a/hidden</loc> --><url><loc> http://a/shown </loc></url></urlset>', ['http://a/shown']],
    ['extensions are not pages', '<urlset xmlns:image="x" xmlns:video="y"><url><loc>http://a/p</loc><image:image><image:loc>http://a/i.png</image:loc></image:image><video:video><video:loc>http://a/v</video:loc></video:video></url></urlset>', ['http://a/p']],
    ['a prefixed document uses its own prefix', '<?xml version="1.0"?><sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="x"><sm:url><sm:loc>http://a/1</sm:loc><image:loc>http://a/i.png</image:loc><loc>http://a/not-sm</loc></sm:url></sm:urlset>', ['http://a/1']],
    ['an empty <loc> is skipped', '<urlset><url><loc>  </loc></url><url><loc>http://a/2</loc></url></urlset>', ['http://a/2']],
  ])('%s', (_name, xml, locs) => {
    expect(parseSitemap(xml)).toMatchObject({ index: false, locs });
  });

  it('tells an index by its root element, prefixed or not', () => {
    expect(parseSitemap('<sitemapindex><sitemap><loc>http://a/s1.xml</loc></sitemap></sitemapindex>')).toMatchObject({ index: true, locs: ['http://a/s1.xml'] });
    expect(parseSitemap('<x:sitemapindex xmlns:x="s"><x:sitemap><x:loc>http://a/s2.xml</x:loc></x:sitemap></x:sitemapindex>')).toMatchObject({ index: true, locs: ['http://a/s2.xml'] });
  });
});

describe('--write-sitemap with the site\'s own sitemap in scope', () => {
  it('finishes when the site has its own /sitemap.xml in scope (the name is taken, so the page gets another)', async () => {
    const origin = await serve((req, res) => {
      if (req.url === '/sitemap.xml') {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>');
      } else {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<a href="/sitemap.xml">sitemap</a>');
      }
    });
    // A child process: the hang is a synchronous loop that no in-process timeout could stop.
    const result = await runNode([BIN, 'crawl', `${origin}/`, '--write-sitemap', '--site-url', 'https://static.example/', '-o', 'out', '-q'], { cwd: dir, limitMs: 60_000 });
    expect(result.timedOut, 'prerender crawl was still running after 60 s').toBe(false);
    expect(result.code).toBe(0);
    const manifest = await readManifest(path.join(dir, 'out'));
    const page = manifest.pages.find((/** @type {any} */ p) => p.url === `${origin}/sitemap.xml`);
    expect(page.file).not.toMatch(/^sitemap(-\d+)?\.xml$/);
  });
});

describe('sitemaps as they come', () => {
  it('takes only the page <loc> of a sitemap with the Google image extension, not <image:loc>', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>https://shop.example/st/product.asp?SKUSetID=1</loc>
    <image:image><image:loc>https://shop.example/img/product1.jpg</image:loc></image:image>
  </url>
</urlset>`;
    expect(parseSitemap(xml).locs).toEqual(['https://shop.example/st/product.asp?SKUSetID=1']);
  });

  it('reads a valid uncompressed sitemap of 50,000 URLs (over 10 MiB) with the default options', async () => {
    let origin = '';
    let body = '';
    origin = await serve((req, res) => {
      if (req.url === '/sitemap.xml') {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(body);
      } else {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<p>product</p>');
      }
    });
    const entries = [];
    for (let n = 0; n < 50_000; n++) {
      entries.push(`<url><loc>${origin}/catalogue/garden-and-outdoor/furniture/product-with-a-long-descriptive-slug-${n}.html</loc><lastmod>2024-01-01T00:00:00+00:00</lastmod><changefreq>weekly</changefreq><priority>0.5</priority></url>`);
    }
    body = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${entries.join('\n')}\n</urlset>\n`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(10 * 1024 * 1024); // protocol limit: 50,000 URLs and 50 MB
    const { totals } = await preview({ sitemap: [`${origin}/sitemap.xml`], limit: 1, retries: 0 });
    expect(totals.pagesInScope).toBe(1);
  });
});
