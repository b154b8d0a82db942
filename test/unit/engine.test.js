// @ts-check
import { afterAll, describe, expect, it, vi } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Crawler, crawl } from '../../lib/index.js';
import { HttpStatusError } from '../../lib/errors.js';
import { KIND_CODES, decodeLinks, decodeScan, encodeScan, resolveLinks, scanDocument } from '../../lib/document/rewrite.js';
import { MemoryFrontier } from '../../lib/store/frontier.js';
import { parseManifest } from '../../lib/output/manifest/read.js';
import { MANIFEST_NAME } from '../../lib/output/manifest/schema.js';
import { listFilesIfAny, tempDirs } from '../crawl-helpers.js';
import { memoryTarget } from '../helpers/memory-target.js';

/**
 * The engine through its seams, with no HTTP: a fake loader stands for the
 * site, an in-memory target for the tree.
 */

const dirs = tempDirs();
afterAll(() => dirs.cleanup());

const ORIGIN = 'http://shop.test';

/**
 * @typedef {{ body?: string, status?: number, headers?: Record<string, unknown>, location?: string, fail?: number }} FakePage
 */

/**
 * A fake site: path+query -> page. Answers come back in an order unrelated to
 * the order of the requests (the later request first), so nothing may depend
 * on network timing.
 * @param {Record<string, FakePage>} pages
 */
function fakeSite(pages) {
  /** @type {string[]} */
  const requests = [];
  let n = 0;
  const loader = {
    /** @param {string} url */
    async load(url) {
      requests.push(url);
      const ticks = 50 - (n++ % 50);
      for (let i = 0; i < ticks; i++) await new Promise((resolve) => setImmediate(resolve));
      const u = new URL(url);
      const spec = pages[u.pathname + u.search];
      if (!spec) throw new HttpStatusError(404);
      if (spec.fail) throw new HttpStatusError(spec.fail);
      if (spec.location) return { url, status: spec.status ?? 301, headers: { location: spec.location }, body: Buffer.alloc(0), location: spec.location };
      return {
        url,
        status: spec.status ?? 200,
        headers: /** @type {Record<string, string>} */ ({ 'content-type': 'text/html; charset=utf-8', ...spec.headers }),
        body: Buffer.from(spec.body ?? ''),
      };
    },
    async close() {},
  };
  return { loader, requests };
}

/** @param {string[]} hrefs */
const linksTo = (...hrefs) => `<html><body>${hrefs.map((href) => `<a href="${href}">${href}</a>`).join('')}</body></html>`;

/** @param {ReturnType<typeof memoryTarget>} target */
function manifestOf(target) {
  const text = target.files.get(MANIFEST_NAME);
  if (!text) throw new Error('no manifest committed');
  return parseManifest(text.toString('utf8'));
}

describe('discovery with a fake loader and no HTTP', () => {
  it('crawls, names, rewrites and commits through the seams; the manifest is in URL order', async () => {
    const { loader, requests } = fakeSite({
      '/': { body: linksTo('/b', '/a', '/c?x=1') },
      '/a': { body: linksTo('/', '/b') },
      '/b': { body: linksTo('/a'), headers: { 'x-builder-filename': 'bee.html' } },
      '/c?x=1': { body: 'plain', headers: { 'content-type': 'text/plain' } },
    });
    const target = memoryTarget();
    const result = await crawl({ roots: [`${ORIGIN}/`], loader, target, out: await dirs.make(), retries: 0 });
    expect(result).toMatchObject({ pages: 3, assets: 1, failed: 0, interrupted: false }); // pages: HTML documents; other files apart
    expect(requests.sort()).toEqual([`${ORIGIN}/`, `${ORIGIN}/a`, `${ORIGIN}/b`, `${ORIGIN}/c?x=1`]);
    const manifest = manifestOf(target);
    expect(manifest.pages.map((page) => page.url)).toEqual([`${ORIGIN}/`, `${ORIGIN}/a`, `${ORIGIN}/b`, `${ORIGIN}/c?x=1`]);
    expect(manifest.pages.map((page) => page.file)).toEqual(['index.html', 'a.html', 'bee.html', 'c@x=1.txt']);
    expect(target.files.get('index.html')?.toString()).toContain('href="bee.html"');
    expect(target.files.get('a.html')?.toString()).toContain('href="bee.html"');
    expect(target.commits).toBe(1);
  });

  it('two URLs with the same bytes share a file; when their output differs (a "?" link resolves apart), they are split apart', async () => {
    const same = linksTo('/a');
    const { loader } = fakeSite({
      '/': { body: linksTo('/index.html', '/d/', '/d/index.html') },
      '/index.html': { body: linksTo('/') },
      '/a': { body: same },
      '/d/': { body: linksTo('?p=1') },
      '/d/index.html': { body: linksTo('?p=1') },
      '/d/?p=1': { body: 'one' },
      '/d/index.html?p=1': { body: 'two' },
    });
    const target = memoryTarget();
    const result = await crawl({ roots: [`${ORIGIN}/`], loader, target, out: await dirs.make(), retries: 0 });
    expect(result.failed).toBe(0);
    const manifest = manifestOf(target);
    const files = Object.fromEntries(manifest.pages.map((page) => [new URL(page.url).pathname + new URL(page.url).search, page.file]));
    // "/" and "/index.html" differ ("/" links to /index.html and back): collision treatment.
    expect(files['/']).toBe('index.html');
    expect(files['/index.html']).toBe('index-2.html');
    // "/d/" and "/d/index.html": the same bytes, but "?p=1" leads to two different pages: split apart too.
    expect(files['/d/']).toBe('d/index.html');
    expect(files['/d/index.html']).toBe('d/index-2.html');
    expect(target.files.get('d/index.html')?.toString()).toContain('href="index@p=1.html"');
    expect(target.files.get('d/index-2.html')?.toString()).toContain('href="index.html@p=1.html"');
    expect(manifest.warnings.filter((w) => w.code === 'NAME_COLLISION').map((w) => w.url).sort()).toEqual([`${ORIGIN}/d/index.html`, `${ORIGIN}/index.html`]);
  });

  it('identical output: one file, both URLs listed with it, written once', async () => {
    const { loader } = fakeSite({
      '/': { body: linksTo('/index.html', '/b') },
      '/index.html': { body: linksTo('/index.html', '/b') },
      '/b': { body: linksTo('/') },
    });
    const target = memoryTarget();
    await crawl({ roots: [`${ORIGIN}/`], loader, target, out: await dirs.make(), retries: 0 });
    const manifest = manifestOf(target);
    expect(manifest.pages.map((page) => page.file)).toEqual(['index.html', 'b.html', 'index.html']);
    expect(manifest.pages[0].sha256).toBe(manifest.pages[2].sha256);
    expect(manifest.warnings).toEqual([]);
    expect(target.files.get('b.html')?.toString()).toContain('href="index.html"');
    expect(target.writes.filter((file) => file === 'index.html')).toHaveLength(1);
  });

  it('gives the same tree and manifest whatever order the answers come in', async () => {
    const pages = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`/p${i}`, { body: linksTo(`/p${(i * 7 + 3) % 30}`, `/p${(i * 11 + 5) % 30}`) }]));
    pages['/'] = { body: linksTo(...Array.from({ length: 30 }, (_, i) => `/p${29 - i}`)) };
    /** @type {string[]} */
    const manifests = [];
    for (const concurrency of [1, 3, 16]) {
      const target = memoryTarget();
      await crawl({ roots: [`${ORIGIN}/`], loader: fakeSite(pages).loader, target, out: await dirs.make(), concurrency });
      const manifest = manifestOf(target);
      expect(manifest.pages.map((page) => page.url)).toEqual([...manifest.pages.map((page) => page.url)].sort((a, b) => a.length - b.length || (a < b ? -1 : 1)));
      manifests.push(JSON.stringify({ ...manifest, generatedAt: '' }));
    }
    expect(new Set(manifests).size).toBe(1);
  });

  it('keeps --concurrency requests in flight while earlier pages are still in their later steps', async () => {
    const pages = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`/p${i}`, { body: linksTo('/') }]));
    pages['/'] = { body: linksTo(...Array.from({ length: 12 }, (_, i) => `/p${i}`)) };
    let loading = 0;
    let transforming = 0;
    let overlapped = 0;
    const site = fakeSite(pages);
    const loader = {
      /** @param {string} url */
      async load(url) {
        loading++;
        if (transforming > 0) overlapped++;
        try {
          return await site.loader.load(url);
        } finally {
          loading--;
        }
      },
      async close() {},
    };
    /** Let a page's slow CPU step finish only once the next request has started. */
    const transform = {
      name: 'slow',
      async run() {
        transforming++;
        for (let i = 0; i < 200 && overlapped === 0; i++) await new Promise((resolve) => setImmediate(resolve));
        transforming--;
      },
    };
    const result = await crawl({ roots: [`${ORIGIN}/`], loader, transforms: [transform], target: memoryTarget(), out: await dirs.make(), concurrency: 1 });
    expect(result.pages).toBe(13);
    // With -c 1, a request started while another page was in its transform: the slot was not held.
    expect(overlapped).toBeGreaterThan(0);
    expect(loading).toBe(0);
  });

  it('writes nothing and touches no target in a dry run; names are still given', async () => {
    const { loader } = fakeSite({ '/': { body: linksTo('/a') }, '/a': { body: 'a' } });
    const crawler = new Crawler({ roots: [`${ORIGIN}/`], loader, dryRun: true, out: path.join(await dirs.make(), 'never') });
    /** @type {string[]} */
    const named = [];
    crawler.on('named', (event) => named.push(event.file));
    const result = await crawler.run();
    expect(result).toMatchObject({ pages: 2, manifest: null });
    expect(named).toEqual(['index.html', 'a.html']);
    expect(await listFilesIfAny(path.dirname(result.out))).toEqual([]);
  });
});

describe('run state belongs to the run', () => {
  it('runs two crawls at once in one process without mixing them', async () => {
    const one = fakeSite({ '/': { body: linksTo('/only-one') }, '/only-one': { body: 'one' } });
    const two = fakeSite({ '/': { body: linksTo('/only-two', '/also-two') }, '/only-two': { body: 'two' }, '/also-two': { body: 'two' } });
    const [outOne, outTwo] = [await dirs.make(), await dirs.make()];
    const [a, b] = await Promise.all([
      crawl({ roots: [`${ORIGIN}/`], loader: one.loader, out: outOne }),
      crawl({ roots: [`${ORIGIN}/`], loader: two.loader, out: outTwo }),
    ]);
    expect([a.pages, b.pages]).toEqual([2, 3]);
    expect(await listFilesIfAny(outOne)).toEqual(['index.html', 'only-one.html', MANIFEST_NAME].sort());
    expect(await listFilesIfAny(outTwo)).toEqual(['also-two.html', 'index.html', 'only-two.html', MANIFEST_NAME].sort());
    expect(JSON.parse(await readFile(path.join(outOne, MANIFEST_NAME), 'utf8')).pages).toHaveLength(2);
  });

  it('starts every run() of one Crawler from zero', async () => {
    const { loader } = fakeSite({ '/': { body: linksTo('/a') }, '/a': { body: 'a' } });
    const crawler = new Crawler({ roots: [`${ORIGIN}/`], loader, out: await dirs.make() });
    const first = await crawler.run();
    const second = await crawler.run();
    expect(first.pages).toBe(2);
    expect(second.pages).toBe(2);
    expect(crawler.stats).toMatchObject({ fetched: 2, written: 2, failed: 0 });
  });

  it('delivers events to onEvent given to new Crawler()', async () => {
    const { loader } = fakeSite({ '/': { body: linksTo('/a', '/missing') }, '/a': { body: 'a' } });
    /** @type {string[]} */
    const types = [];
    await new Crawler({ roots: [`${ORIGIN}/`], loader, out: await dirs.make(), retries: 0, onEvent: (event) => types.push(event.type) }).run();
    expect(types.filter((type) => type === 'page')).toHaveLength(2);
    expect(types.filter((type) => type === 'written')).toHaveLength(2);
    expect(types).toContain('failure');
  });
});

describe('--max-pages counts pages only', () => {
  it('does not count redirects and failures against the limit', async () => {
    const { loader } = fakeSite({
      '/': { body: linksTo('/moved', '/gone', '/broken', '/p1', '/p2', '/p3') },
      '/moved': { location: '/p1' },
      '/broken': { fail: 500 },
      '/p1': { body: 'p1' },
      '/p2': { body: 'p2' },
      '/p3': { body: 'p3' },
    });
    const target = memoryTarget();
    const result = await crawl({ roots: [`${ORIGIN}/`], loader, target, out: await dirs.make(), maxPages: 4, retries: 0 });
    expect(result.pages).toBe(4);
    expect(result.notCrawled).toBe(0);
    expect(result.failed).toBe(2);
    expect(manifestOf(target).pages.map((page) => page.url)).toEqual([`${ORIGIN}/`, `${ORIGIN}/p1`, `${ORIGIN}/p2`, `${ORIGIN}/p3`]);
  });

  it('still stops a trap: pages past the limit are counted as not crawled', async () => {
    const pages = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`/t${i}`, { body: linksTo(`/t${i + 1}`, `/u${i}`) }]));
    for (let i = 0; i < 20; i++) pages[`/u${i}`] = { body: 'u' };
    const result = await crawl({ roots: [`${ORIGIN}/t0`], include: ['/'], loader: fakeSite(pages).loader, target: memoryTarget(), out: await dirs.make(), maxPages: 5 });
    expect(result.pages).toBe(5);
    expect(result.notCrawled).toBeGreaterThan(0);
  });
});

describe('the frontier', () => {
  it('gives a slot back when a URL does not become a page, to the first URL refused', async () => {
    const frontier = new MemoryFrontier({ maxPages: 2 });
    const item = (/** @type {string} */ key) => ({ key, kind: /** @type {const} */ ('navigation'), referrer: null });
    expect(await frontier.add([item('a'), item('b'), item('c'), item('d'), item('a')])).toEqual(['added', 'added', 'limit', 'limit', 'known']);
    expect(await frontier.take(10)).toEqual(['a', 'b']);
    expect(await frontier.done('a', { page: true })).toEqual([]);
    expect(await frontier.done('b', { page: false })).toEqual([item('c')]);
    expect(await frontier.take(10)).toEqual(['c']);
    expect(frontier.counts()).toMatchObject({ queued: 0, inFlight: 1, overLimit: 1 });
    await frontier.retry('c');
    expect(await frontier.take(10)).toEqual(['c']);
  });

  it('lets its URLs go once the crawl phase is over: the summary still counts what it refused', async () => {
    const release = vi.spyOn(MemoryFrontier.prototype, 'release');
    try {
      const { loader } = fakeSite({ '/': { body: linksTo('/a', '/b', '/c') }, '/a': { body: 'a' }, '/b': { body: 'b' }, '/c': { body: 'c' } });
      const target = memoryTarget();
      const result = await crawl({ roots: [`${ORIGIN}/`], loader, target, out: await dirs.make(), maxPages: 2 });
      expect(release).toHaveBeenCalledTimes(1);
      const frontier = /** @type {MemoryFrontier} */ (release.mock.contexts[0]);
      expect(frontier.states.size).toBe(0);
      expect(frontier.counts()).toMatchObject({ queued: 0, known: 0, overLimit: 0 });
      expect(result.pages).toBe(2);
      expect(result.notCrawled).toBe(2);
      expect(manifestOf(target).warnings.map((warning) => warning.code)).toContain('MAX_PAGES');
    } finally {
      release.mockRestore();
    }
  });
});

describe('names and failures', () => {
  it('a name header that breaks the naming code fails the page instead of passing as an unsafe name', async () => {
    // A transform (as a render step does) hands the engine such a result; a caller's loader has its numbers taken as text.
    const { loader } = fakeSite({ '/': { body: linksTo('/odd') }, '/odd': { body: 'x' } });
    const odd = {
      name: 'odd-header',
      run: (/** @type {any} */ page) => {
        if (page.key === `${ORIGIN}/odd`) page.result.headers['x-builder-filename'] = 42;
      },
    };
    const target = memoryTarget();
    const result = await crawl({ roots: [`${ORIGIN}/`], loader, target, transforms: [odd], out: await dirs.make() });
    const manifest = manifestOf(target);
    expect(result.failed).toBe(1);
    expect(manifest.errors.map((error) => error.url)).toEqual([`${ORIGIN}/odd`]);
    expect(manifest.warnings.filter((warning) => warning.code === 'UNSAFE_NAME')).toEqual([]);
  });

  it('an unsafe name header is a warning with its code, and the default name is used', async () => {
    const { loader } = fakeSite({ '/': { body: linksTo('/odd') }, '/odd': { body: 'x', headers: { 'x-builder-filename': '../../etc/passwd' } } });
    const target = memoryTarget();
    await crawl({ roots: [`${ORIGIN}/`], loader, target, out: await dirs.make() });
    const manifest = manifestOf(target);
    expect(manifest.warnings.map((warning) => warning.code)).toEqual(['UNSAFE_NAME']);
    expect(manifest.pages.map((page) => page.file)).toEqual(['index.html', 'odd.html']);
  });

  it('never links to a page that failed to be written, even from pages written before it', async () => {
    const { loader } = fakeSite({
      '/': { body: linksTo('/a', '/z') },
      '/a': { body: linksTo('/z') },
      '/z': { body: linksTo('/a'), headers: { 'x-builder-filename': 'zed.html' } },
    });
    const target = memoryTarget({ failOn: (file) => file === 'zed.html' });
    const result = await crawl({ roots: [`${ORIGIN}/`], loader, target, out: await dirs.make() });
    expect(result.failed).toBe(1);
    expect(result.pages).toBe(2);
    for (const file of ['index.html', 'a.html']) {
      const html = target.files.get(file)?.toString() ?? '';
      expect(html).not.toContain('zed.html');
      expect(html).toContain('href="/z"');
    }
    expect([...target.files.keys()].sort()).toEqual(['a.html', 'index.html', MANIFEST_NAME]);
    const manifest = manifestOf(target);
    expect(manifest.errors).toEqual([expect.objectContaining({ url: `${ORIGIN}/z`, code: 'ENAMETOOLONG' })]);
    expect(target.commits).toBe(1);
  });

  it('a 304 without an earlier copy is a recorded failure with its own code, not an HTTP error', async () => {
    const loader = {
      /** @param {string} url */
      async load(url) {
        if (url.endsWith('/')) return { url, status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from(linksTo('/same')) };
        return { url, status: 304, headers: {}, body: Buffer.alloc(0), notModified: true };
      },
      async close() {},
    };
    const target = memoryTarget();
    const result = await crawl({ roots: [`${ORIGIN}/`], loader, target, out: await dirs.make() });
    expect(result.failures).toEqual([expect.objectContaining({ url: `${ORIGIN}/same`, code: 'NOT_MODIFIED' })]);
  });
});

describe('scans kept between the phases', () => {
  it('keep every field of every link, the attribute name included', () => {
    const body = Buffer.from('<a href="/x">x</a><img src="/i.png" srcset="/i2.png 2x"><div style="background:url(/b.png)"></div><base href="/d/">');
    const scan = scanDocument(body, 'html', 'utf-8');
    resolveLinks(scan, new URL(`${ORIGIN}/page`));
    const back = decodeScan(encodeScan(scan));
    expect(back.links).toEqual(scan.links.map((link) => ({ start: link.start, end: link.end, kind: link.kind, attr: link.attr, value: link.value, key: link.key, hash: link.hash })));
    expect(back.links.map((link) => link.attr)).toEqual(scan.links.map((link) => link.attr));
    expect(back.base).toEqual(scan.base);
  });

  it('give a page carried over just its links, and read the JSON form of older runs', () => {
    const body = Buffer.from('<meta name="robots" content="nofollow"><a href="/x?a=1#h">x</a><a href="mailto:a@b">m</a><form action="/s"></form>'
      + '<link rel="canonical" href="/c"><img src="/caf\u00e9.png"><span data-price-sku="A">1</span>');
    const scan = scanDocument(body, 'html', 'utf-8');
    resolveLinks(scan, new URL(`${ORIGIN}/page`));
    const bytes = encodeScan(scan);
    const keyed = scan.links.map((link) => ({ key: link.key, kind: link.kind }));
    // Every field a link keeps between the phases (the tag name is not one).
    const kept = { ...scan, links: scan.links.map((link) => ({ start: link.start, end: link.end, kind: link.kind, attr: link.attr, value: link.value, key: link.key, hash: link.hash })), nofollow: true };
    expect(decodeLinks(bytes)).toEqual({ links: keyed, nofollow: true });
    expect(decodeScan(bytes)).toEqual(kept);
    expect(keyed.map((link) => link.kind)).toEqual(['navigation', 'navigation', 'form', 'canonical', 'requisite']);
    expect(keyed[1].key).toBeNull();
    // A scan without links, and one that follows.
    const empty = scanDocument(Buffer.from('<p>none</p>'), 'html', 'utf-8');
    expect(decodeLinks(encodeScan(empty))).toEqual({ links: [], nofollow: false });
    expect(decodeScan(encodeScan(empty))).toEqual({ ...empty, nofollow: false });
    // Scans staged by older runs are JSON: a re-crawl after an upgrade still reads them.
    const old = Buffer.from(JSON.stringify([
      scan.links.map((link) => [link.start, link.end, KIND_CODES.indexOf(link.kind), link.attr ?? '', link.value, link.key ?? null, link.hash ?? '']),
      scan.base, scan.slots.map((slot) => [slot.start, slot.end, slot.sku]), scan.metaSku, scan.unclosedSlots, 1,
    ]));
    expect(decodeScan(old)).toEqual(kept);
    expect(decodeLinks(old).links.map((link) => ({ key: link.key, kind: link.kind }))).toEqual(keyed);
    expect(decodeLinks(old).nofollow).toBe(true);
  });
});
