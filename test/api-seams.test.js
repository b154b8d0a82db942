// @ts-check
/**
 * The crawl API's seams as an embedding build pipeline uses them, through the
 * package's entry (lib/index.js): wrong options are UsageErrors, a loader's
 * odd answers and a loader that ignores the signal, a target or transform
 * whose methods are synchronous, listeners that throw, withRetry and
 * createHttpLoader's options, and manifests that cannot be read.
 */
import http from 'node:http';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  Crawler, HttpStatusError, ListenerError, ManifestFormatError, UsageError,
  crawl, createHttpLoader, parseManifest, readManifest, withRetry,
} from '../lib/index.js';
import { tempDirs } from './crawl-helpers.js';
import { memoryTarget } from './helpers/memory-target.js';

const dirs = tempDirs();
afterAll(() => dirs.cleanup());

/** Nothing listens there: were a fake loader ever bypassed, nothing leaves the machine. */
const ROOT = 'http://127.0.0.1:1/';

/** @param {string} html */
const page = (url, html) => ({ url, status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from(`<html><body>${html}</body></html>`) });

/** The root links to /a and /b; every page answers. */
const siteLoader = {
  /** @param {string} url */
  async load(url) {
    return url === ROOT ? page(url, '<a href="/a">a</a> <a href="/b">b</a>') : page(url, 'leaf');
  },
  async close() {},
};

/**
 * `promise`, or a failure after `ms`: a run that never settles fails the test instead of hanging it.
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 */
async function within(promise, ms) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms); });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The error `call` throws or rejects with.
 * @param {() => unknown} call
 */
async function errorOf(call) {
  try {
    await call();
  } catch (error) {
    return /** @type {any} */ (error);
  }
  throw new Error('expected an error');
}

describe('crawl options checked before the run', () => {
  const loader = siteLoader;
  /** @type {[string, unknown, RegExp][]} */
  const cases = [
    ['no options at all', undefined, /crawl options must be an object/],
    ['null options', null, /crawl options must be an object/],
    ['onEvent that is not a function', { onEvent: 'log' }, /"onEvent" must be a function/],
    ['a loader without load()', { loader: {} }, /"loader" has no load\(\)/],
    ['a null loader (it used to fall back to real HTTP)', { loader: null }, /"loader" must be an object/],
    ['a loader given as a bare function', { loader: async () => ({}) }, /"loader" must be an object/],
    ['transforms that are not a list', { loader, transforms: { name: 'x', run() {} } }, /"transforms" must be a list/],
    ['a transform without run()', { loader, transforms: [{ name: 'x' }] }, /transforms\[0\] \("x"\) has no run/],
    ['a null transform', { loader, transforms: [null] }, /transforms\[0\] must be/],
    ['a transform concurrency of 0', { loader, transforms: [{ name: 'x', concurrency: 0, run() {} }] }, /"concurrency" must be a whole number, at least 1/],
    ['a target without its methods', { loader, target: {} }, /"target" has no init\(\)/],
    ['a signal that is not an AbortSignal', { loader, signal: {} }, /"signal" must be an AbortSignal/],
    ['dryRun that is not a boolean (it used to crawl for real)', { loader, dryRun: 'yes' }, /"dryRun" must be true or false/],
    ['a negative retryDelay', { loader, retryDelay: -1 }, /"retryDelay" must be a number/],
  ];
  for (const [label, extra, message] of cases) {
    it(`${label}: a UsageError from crawl() and new Crawler(), nothing created`, async () => {
      const out = path.join(await dirs.make('prerender-api-'), 'out');
      const options = extra === undefined || extra === null ? extra : { roots: [ROOT], out, threads: 0, ...extra };
      for (const start of [() => crawl(/** @type {any} */ (options)), () => new Crawler(/** @type {any} */ (options)).run()]) {
        const error = await errorOf(start);
        expect(error).toBeInstanceOf(UsageError);
        expect(error.code).toBe('USAGE');
        expect(error.message).toMatch(message);
      }
      expect(existsSync(out)).toBe(false);
    });
  }
});

it('crawl() with bad options returns a rejected promise, as its other failures do, rather than throwing', async () => {
  let returned;
  expect(() => { returned = crawl(/** @type {any} */ ({ roots: ['ftp://x/'] })); }).not.toThrow();
  await expect(returned).rejects.toBeInstanceOf(UsageError);
});

describe('a loader held to its contract', () => {
  /**
   * @param {(url: string) => unknown} answer the fake's answer for a URL other than the root
   */
  async function crawlWith(answer) {
    const out = await dirs.make('prerender-api-');
    /** @type {string[]} */
    const retries = [];
    const loader = {
      /** @param {string} url */
      async load(url) { return url === ROOT ? page(url, '<a href="/a">a</a>') : answer(url); },
      async close() {},
    };
    const result = await crawl({ roots: [ROOT], out, loader: /** @type {any} */ (loader), threads: 0, retries: 1, retryDelay: 1, onEvent: (event) => { if (event.type === 'retry') retries.push(String(event.url)); } });
    return { result, retries, manifest: await readManifest(out) };
  }

  it('an error status returned instead of thrown is the HttpStatusError it should have been (5xx retried), never a page', async () => {
    const { result, retries, manifest } = await crawlWith((url) => ({ url, status: 503, headers: {}, body: Buffer.from('down') }));
    expect(result.failures).toEqual([expect.objectContaining({ url: `${ROOT}a`, status: 503, code: 'HTTP_STATUS' })]);
    expect(retries).toEqual([`${ROOT}a`]);
    expect(manifest.pages.map((p) => p.url)).toEqual([ROOT]);
  });

  it('a redirect without a location fails like the HTTP loader\'s, not written as a page', async () => {
    const { result, manifest } = await crawlWith((url) => ({ url, status: 302, headers: {}, body: Buffer.alloc(0) }));
    expect(result.failures).toEqual([expect.objectContaining({ status: 302, code: 'HTTP_STATUS', message: 'HTTP 302 redirect without a location' })]);
    expect(manifest.pages.map((p) => p.url)).toEqual([ROOT]);
  });

  it('no body: a LOADER_RESULT failure saying so, not a TypeError message', async () => {
    const { result } = await crawlWith((url) => ({ url, status: 200, headers: { 'content-type': 'text/html' } }));
    expect(result.failures).toEqual([expect.objectContaining({ code: 'LOADER_RESULT', message: expect.stringMatching(/has no "body"/) })]);
  });

  it('a body given as a string and headers with capitals are taken as the HTTP loader gives them', async () => {
    const { result, manifest } = await crawlWith((url) => ({ url, status: 200, headers: { 'Content-Type': 'text/html' }, body: '<p>text</p>' }));
    expect(result.failed).toBe(0);
    expect(manifest.pages.find((p) => p.url === `${ROOT}a`)).toMatchObject({ file: 'a.html', contentType: 'text/html' });
  });

  it('header values that are numbers or null, and a fetch Headers object, are taken (they were before the checks)', async () => {
    const numbers = await crawlWith((url) => ({ url, status: 200, headers: { 'content-type': 'text/html', 'content-length': 11, etag: null }, body: '<p>text</p>' }));
    expect(numbers.result.failed).toBe(0);
    expect(numbers.manifest.pages.find((p) => p.url === `${ROOT}a`)).toMatchObject({ file: 'a.html' });
    const fetchHeaders = await crawlWith((url) => ({ url, status: 200, headers: new Headers({ 'Content-Type': 'text/html' }), body: '<p>text</p>' }));
    expect(fetchHeaders.result.failed).toBe(0);
    expect(fetchHeaders.manifest.pages.find((p) => p.url === `${ROOT}a`)).toMatchObject({ file: 'a.html', contentType: 'text/html' });
  });

  it('a load that ignores the signal and never settles does not keep an aborted crawl from settling', async () => {
    const out = await dirs.make('prerender-api-');
    const controller = new AbortController();
    const loader = {
      /** @param {string} url */
      load(url) {
        if (url === ROOT) return Promise.resolve(page(url, '<a href="/stuck">s</a> <a href="/b">b</a>'));
        if (url.endsWith('/b')) {
          queueMicrotask(() => controller.abort()); // once the crawl is under way
          return Promise.resolve(page(url, 'b'));
        }
        return new Promise(() => {}); // ignores its signal: never settles
      },
      async close() {},
    };
    const result = await within(crawl({ roots: [ROOT], out, loader, threads: 0, signal: controller.signal }), 10_000);
    expect(result.interrupted).toBe(true);
    const manifest = await readManifest(out);
    expect(manifest.interrupted).toBe(true);
    expect(manifest.pages.map((p) => p.url)).toContain(ROOT);
    // OUT is left to the next crawl: its lock was released.
    await expect(crawl({ roots: [ROOT], out, loader: siteLoader, threads: 0 })).resolves.toMatchObject({ pages: 3 });
  });
});

describe('targets and transforms with synchronous methods', () => {
  it('a target whose abort() is synchronous: the run rejects with the target\'s error and leaves OUT unlocked', async () => {
    const out = await dirs.make('prerender-api-');
    const target = memoryTarget();
    const failing = { ...target, location: 'memory:', commit: async () => { throw new Error('commit refused'); }, abort: () => {} };
    const error = await errorOf(() => crawl({ roots: [ROOT], out, loader: siteLoader, threads: 0, target: /** @type {any} */ (failing) }));
    expect(error.message).toBe('commit refused');
    expect(target.files.size).toBe(0); // nothing committed
    await expect(crawl({ roots: [ROOT], out, loader: siteLoader, threads: 0, target: memoryTarget() })).resolves.toMatchObject({ pages: 3 });
  });

  it('a transform whose close() is synchronous, in a run that fails: the run\'s error, and OUT unlocked', async () => {
    const out = await dirs.make('prerender-api-');
    const transforms = [
      { name: 'sync-close', run() {}, close() {} },
      { name: 'open-fails', run() {}, async open() { throw new Error('no browser here'); } },
    ];
    const error = await errorOf(() => crawl({ roots: [ROOT], out, loader: siteLoader, threads: 0, transforms: /** @type {any} */ (transforms) }));
    expect(error.message).toBe('no browser here');
    await expect(crawl({ roots: [ROOT], out, loader: siteLoader, threads: 0 })).resolves.toMatchObject({ pages: 3 });
  });
});

describe('listeners that throw', () => {
  for (const event of ['page', 'written']) {
    it(`a "${event}" listener that throws changes nothing in the crawl; run() then rejects with a ListenerError carrying the result`, async () => {
      const out = await dirs.make('prerender-api-');
      /** @type {string[]} */
      const seen = [];
      const crawler = new Crawler({ roots: [ROOT], out, loader: siteLoader, threads: 0, onEvent: (e) => { if (e.type === event) throw new Error('listener bug'); } });
      crawler.on(event, (e) => { seen.push(e.url); }); // registered after the one that throws: still called
      const error = await errorOf(() => crawler.run());
      expect(error).toBeInstanceOf(ListenerError);
      expect(error.code).toBe('LISTENER');
      expect(error.cause.message).toBe('listener bug');
      expect(error.result).toMatchObject({ pages: 3, failed: 0, complete: true });
      expect(seen).toHaveLength(3);
      const manifest = await readManifest(out);
      expect(manifest.pages).toHaveLength(3);
      expect(manifest.errors).toEqual([]);
    });
  }
});

describe('async listeners', () => {
  it('one that rejects while the crawl runs makes run() reject; one that rejects after it ended is a warning, and never counts against the next run', async () => {
    const out = await dirs.make('prerender-api-');
    const crawler = new Crawler({ roots: [ROOT], out, loader: siteLoader, threads: 0 });
    let late = true;
    /** @type {(() => void)[]} */
    const releases = [];
    crawler.on('page', async () => {
      if (!late) throw new Error('async listener bug');
      await new Promise((resolve) => { releases.push(() => resolve(undefined)); });
      throw new Error('late listener bug');
    });
    /** @type {string[]} */
    const warned = [];
    const onWarning = (/** @type {Error & { code?: string }} */ warning) => { if (warning.code === 'PRERENDER_LISTENER') warned.push(warning.message); };
    process.on('warning', onWarning);
    try {
      const first = await crawler.run(); // its listeners are still waiting: nothing thrown yet
      expect(first.pages).toBe(3);
      late = false;
      const second = await errorOf(() => crawler.run());
      expect(second).toBeInstanceOf(ListenerError);
      expect(second.cause.message).toBe('async listener bug');
      for (const release of releases) release(); // the first run's listeners reject now, after it ended
      for (let waited = 0; warned.length < 3 && waited < 2000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(warned).toHaveLength(3);
      expect(warned[0]).toMatch(/rejected after the crawl ended: late listener bug/);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('null is "not given" for the options that take objects (signal: null), and withRetry takes retries: Infinity', async () => {
    const out = await dirs.make('prerender-api-');
    const result = await crawl({ roots: [ROOT], out, loader: siteLoader, threads: 0, signal: /** @type {any} */ (null) });
    expect(result.pages).toBe(3);
    expect(() => withRetry(siteLoader, { retries: Infinity })).not.toThrow();
    expect((await errorOf(() => withRetry(siteLoader, { retries: NaN }))).message).toMatch(/got NaN/);
  });
});

describe('withRetry and createHttpLoader options', () => {
  it('withRetry without "retries" is a UsageError (it used to retry for ever)', async () => {
    let calls = 0;
    const failing = { async load() { calls++; throw new HttpStatusError(503); }, async close() {} };
    const error = await errorOf(() => withRetry(failing, /** @type {any} */ ({ retryDelay: 0 })));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(/"retries" must be a whole number/);
    expect(calls).toBe(0);
    expect(await errorOf(() => withRetry(/** @type {any} */ (null), { retries: 1 }))).toBeInstanceOf(UsageError);
  });

  it('createHttpLoader() takes the crawl\'s defaults; a bad value is a UsageError', async () => {
    const server = http.createServer((req, res) => { res.setHeader('content-type', 'text/html'); res.end('<p>hi</p>'); });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
    const loader = createHttpLoader();
    try {
      const result = await within(loader.load(`http://127.0.0.1:${port}/`), 10_000);
      expect(result.status).toBe(200);
      expect(result.body.toString()).toBe('<p>hi</p>');
    } finally {
      await loader.close();
      server.close();
    }
    const error = await errorOf(() => createHttpLoader({ timeout: 0 }));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(/"timeout" must be a whole number, at least 1/);
  });
});

describe('manifests that cannot be read', () => {
  it('parseManifest on text that is not JSON: ManifestFormatError (exported), not a SyntaxError', () => {
    for (const text of ['not json', '', '{"version": 1, "pages": [']) {
      let error;
      try { parseManifest(text); } catch (caught) { error = /** @type {any} */ (caught); }
      expect(error).toBeInstanceOf(ManifestFormatError);
      expect(error.code).toBe('MANIFEST_FORMAT');
      expect(error.message).toMatch(/^not valid JSON: /);
    }
    expect(() => parseManifest(JSON.stringify({ version: 2, pages: [] }))).toThrow(/unsupported manifest version 2/);
  });

  it('readManifest on a garbled file names the file', async () => {
    const out = await dirs.make('prerender-api-');
    await mkdir(out, { recursive: true });
    await writeFile(path.join(out, 'prerender-manifest.json'), '{"version": 1, "pag');
    const error = await errorOf(() => readManifest(out));
    expect(error).toBeInstanceOf(ManifestFormatError);
    expect(error.message).toContain(path.join(out, 'prerender-manifest.json'));
  });
});
