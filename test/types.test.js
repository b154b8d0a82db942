// @ts-check
/**
 * The shipped type declarations (generated from lib/'s JSDoc, as `prepack`
 * does), compiled against two TypeScript programs under strict:
 * - the serve API as the README uses it: non-default option values, a custom
 *   price source, the results read;
 * - the crawl API as the README documents it: every option, a custom loader
 *   (redirect, 304, typed throws), withRetry, an output target, a transform,
 *   the Crawler's events, the manifest readers and the typed errors; and the
 *   mistakes the runtime checks refuse too (each line marked
 *   @ts-expect-error must fail to compile).
 * One generation and one compile for both: each costs seconds. The same
 * declarations, packed as npm packs the package, are the package's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PREPACK, compileAgainstTypes, generateTypes, packedFiles } from './helpers/types.js';

/** A consumer of the serve declarations, as the README's middleware and API sections use them. */
const SERVE_CONSUMER = `
import http from 'node:http';
import { createPriceFilter, createServer, runServeCommand, UsageError } from './types/index.js';

const filter = createPriceFilter({
  root: './out', prices: 'http://shop/price.asp?sku={sku}&zip={zip}', fallback: 'See price in cart',
  zipParam: 'postcode', zipCookie: 'pc', defaultZip: '10001', static: false, watch: false,
  priceTimeoutMs: 500, priceQueueMs: 1000, priceConnections: 8, pageCacheBytes: 64 * 1024 * 1024, maxRssBytes: null,
});
http.createServer((req, res) => filter(req, res, () => { res.statusCode = 404; res.end(); }));
filter.events.on('prices-breaker', (state: string) => state);
const size: number = filter.cache.calculatedSize;

const server = createServer({
  root: './out', host: '0.0.0.0', port: 0, prices: { 'SKU-1': { '*': '$1', '10001': 2 } },
  staticCacheControl: 'public, max-age=60', filledCacheControl: 'private, max-age=0', logger: { warn: console.warn },
});
const custom = createServer({ root: './out', prices: { lookup: async (sku: string, zip: string | null) => (zip ? sku : null) } });
const drained: Promise<{ cut: number }> = server.drain(100);
const count: number = custom.inFlight();
const done: Promise<void> = runServeCommand('./out', { port: 8081, fallback: 'call us' }, { stdout: process.stdout, stderr: process.stderr });
const usage: string = new UsageError('x').code;
void [size, drained, count, done, usage];
`;

/** A consumer of the crawl declarations, as the README's API section uses them (compiled, never run). */
const CRAWL_CONSUMER = `import {
  crawl, Crawler, createHttpLoader, withRetry, LocalTree, readManifest, parseManifest, MANIFEST_NAME, WARNING_CODES,
  resolveCrawlOptions, CRAWL_OPTIONS, UsageError, HttpStatusError, TimeoutError, AbortError, LockedError, PrerenderError,
  ListenerError, LoaderResultError, ManifestFormatError, MANIFEST_VERSION,
  type CrawlResult, type Loader, type LoadResult, type OutputTarget, type Manifest, type CrawlerOptions,
} from './types/index.js';

const fake: Loader = {
  async load(url, { signal, headers } = {}) {
    void signal; void headers;
    if (url.endsWith('/old')) return { url, status: 301, headers: {}, body: Buffer.alloc(0), location: '/new' };
    if (url.endsWith('/same')) return { url, status: 304, headers: {}, body: Buffer.alloc(0), notModified: true };
    if (url.endsWith('/gone')) throw new HttpStatusError(410);
    if (url.endsWith('/slow')) throw new TimeoutError('slow');
    return { url, status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from('<p>x</p>') };
  },
  async close() {},
};
const retried: Loader = withRetry(fake, { retries: 3, retryDelay: 100, maxRetryAfter: 5000, onRetry: ({ url, attempt, delayMs, error }) => console.log(url, attempt, delayMs, error.message) });
const http: Loader = createHttpLoader({ concurrency: 4, timeout: 1000, maxPageBytes: 1 << 20, headers: { cookie: 'a=b' } });

const files = new Map<string, string>();
const target: OutputTarget = {
  location: 'memory:',
  async init() {},
  async write(file, data) {
    if (typeof data === 'string') files.set(file, data);
    else if (data instanceof Uint8Array) files.set(file, Buffer.from(data).toString());
    else { let s = ''; for await (const c of data) s += typeof c === 'string' ? c : Buffer.from(c).toString(); files.set(file, s); }
  },
  async remove(file) { files.delete(file); },
  async commit() {},
  async abort() {},
};

const controller = new AbortController();
const options: CrawlerOptions = {
  roots: ['http://shop.example/st/dir.asp'], out: 'out', include: ['/st/dir.asp', '/st/product.asp'], exclude: ['/st/cart'],
  concurrency: 4, threads: 0, maxPages: 100, maxDepth: 5, maxUrlLength: 2048, timeout: 1000, retries: 1, maxRedirects: 3,
  dynamicBase: 'https://shop.example/', assets: true, assetsOrigins: ['https://cdn.example'], relativeLinks: false,
  name: [['/doku.php?id=*', '{query.id}.html']], rate: 2, delay: 10, robots: true, maxPageBytes: 1000, placeholders: 'ssi',
  pricePath: '/price', header: ['Cookie: a=b'], sitemap: ['http://shop.example/sitemap.xml'], urls: 'urls.txt', writeSitemap: true,
  siteUrl: 'https://static.example/', full: true, precompress: 'gzip,br', resume: false, ignore: ['generated at .*'], pruneMax: '5%', force: false,
  render: false, renderOnly: ['/st/'], renderWait: ['networkidle'], onRenderTimeout: 'save',
  signal: controller.signal, dryRun: false,
  onEvent: (event) => console.log(event.type, event.url),
  loader: retried, target, transforms: [{ name: 'upper', concurrency: 2, run: (page) => { void page; } }],
};
const result: CrawlResult = await crawl(options);
console.log(result.pages, result.failed, result.manifest, result.failures[0]?.code, result.churn.filesWritten, result.interrupted);

const crawler = new Crawler({ roots: ['http://shop.example/'], out: 'out2' });
crawler.on('page', (e: { url: string, status: number, contentType: string, bytes: number }) => console.log(e.url, e.status));
crawler.on('written', (e: { url: string, file: string, bytes: number, placeholders: number }) => console.log(e.file));
crawler.on('retry', (e: { url: string, attempt: number, delayMs: number, message: string }) => console.log(e.attempt));
crawler.on('failure', (e: { url: string, status?: number, message: string, code?: string }) => console.log(e.code));
crawler.on('warning', (e: { url: string, code: string, message: string }) => console.log(e.code));
crawler.on('link', (e: { from: string | null, url: string, kind: string, decision: string, pattern?: string, followed: boolean }) => console.log(e.followed));
crawler.once('redirect', (e: unknown) => console.log(e));
const fetched: number = crawler.stats.fetched;
const r2: CrawlResult = await crawler.run();
void [r2, fetched, http, LocalTree, new LocalTree('out')];

const m: Manifest = await readManifest('out');
const m2: Manifest = parseManifest('{}');
console.log(m.pages[0]?.file, m2.version, MANIFEST_NAME, WARNING_CODES);
const resolved = resolveCrawlOptions({ roots: ['http://x/'] });
console.log(resolved.concurrency, CRAWL_OPTIONS[0].name);
try { await crawl({ roots: [] }); } catch (error) {
  if (error instanceof UsageError) console.log(error.code);
  if (error instanceof LockedError || error instanceof AbortError) console.log(error.code);
  if (error instanceof PrerenderError) console.log(error.retryable);
  if (error instanceof ListenerError) console.log(error.result.pages, error.cause);
  if (error instanceof LoaderResultError || error instanceof ManifestFormatError) console.log(error.code, MANIFEST_VERSION);
}
const defaults: Loader = createHttpLoader();
void defaults;
const lr: LoadResult = await fake.load('http://x/');
void lr;

// What must not compile.
// @ts-expect-error concurrency is a number
crawl({ roots: ['http://x/'], concurrency: '4' });
// @ts-expect-error a loader needs load and close
crawl({ roots: ['http://x/'], loader: {} });
// @ts-expect-error a transform needs run
crawl({ roots: ['http://x/'], transforms: [{ name: 'x' }] });
// @ts-expect-error unknown option
crawl({ roots: ['http://x/'], foo: 1 });
// @ts-expect-error a target needs its methods
crawl({ roots: ['http://x/'], target: { location: 'x' } });
// @ts-expect-error dryRun is a boolean
crawl({ roots: ['http://x/'], dryRun: 'yes' });
// @ts-expect-error onEvent is a function
new Crawler({ roots: ['http://x/'], onEvent: 'x' });
// @ts-expect-error retries is required
withRetry({ async load(url: string) { return { url, status: 200, headers: {}, body: Buffer.alloc(0) }; }, async close() {} }, {});
// @ts-expect-error no options
crawl();
`;

/** @type {string} */
let dir;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-types-'));
  generateTypes(dir); // once for both tests: it costs seconds (over 90 s on a heavily shared machine)
});
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('type declarations', () => {
  it('accept the serve and crawl APIs as the README documents them, and refuse the mistakes the runtime refuses', () => {
    // .mts: an ES module, so that the crawl program may await at its top level as the README's example does.
    expect(compileAgainstTypes(dir, { 'serve.ts': SERVE_CONSUMER, 'crawl.mts': CRAWL_CONSUMER })).toBe('');
  });

  it('are packed with bin, lib, templates and README (prepack makes them), and no tests or fixtures', () => {
    const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(pkg.scripts.prepack).toBe(PREPACK); // what generateTypes() runs, into types/
    const files = packedFiles(dir);
    expect(files).toContain('bin/prerender.js');
    expect(files).toContain('lib/index.js');
    expect(files).toContain('types/index.d.ts');
    expect(files).toContain('types/crawler/index.d.ts');
    expect(files).toContain('templates/prerender.config.mjs');
    expect(files).toContain('README.md');
    expect(files.some((file) => file.startsWith('test/') || file.startsWith('fixtures/') || file.startsWith('bench/'))).toBe(false);
    expect(pkg.exports['.']).toEqual({ types: './types/index.d.ts', default: './lib/index.js' });
    const declarations = fs.readFileSync(path.join(dir, 'types', 'index.d.ts'), 'utf8');
    for (const name of ['crawl', 'Crawler', 'preview', 'createServer', 'readManifest', 'LocalTree']) expect(declarations).toMatch(new RegExp(`\\b${name}\\b`));
    for (const type of ['CrawlerOptions', 'CrawlResult', 'Loader', 'OutputTarget', 'Manifest']) expect(declarations).toContain(`export type ${type} =`);
    // The options are typed, not Record<string, any>.
    expect(fs.readFileSync(path.join(dir, 'types', 'crawler', 'index.d.ts'), 'utf8')).toMatch(/constructor\(options: CrawlerOptions\)/);
  });
});
