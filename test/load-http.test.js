// @ts-check
import http from 'node:http';
import zlib from 'node:zlib';
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpLoader } from '../lib/fetch/http.js';
import { AbortError, ContentEncodingError, FetchError, HttpStatusError, PageTooLargeError, TimeoutError } from '../lib/errors.js';

/**
 * createHttpLoader against a real node:http server: bodies, statuses,
 * limits, timeouts, broken connections, aborts, codings, request headers.
 */

const MiB = 1024 * 1024;
const CHUNKS = [Buffer.from([0x00, 0xff, 0x41]), Buffer.from('é-chunk-2\r\n'), Buffer.alloc(5000, 0x7a), Buffer.from([0xfe])];

/** @type {Map<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>} */
const routes = new Map([
  ['/chunks', (req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html', 'X-Mixed-Case': 'Yes', 'Set-Cookie': ['a=1', 'b=2'] });
    const next = (/** @type {number} */ i) => {
      if (i === CHUNKS.length) res.end();
      else res.write(CHUNKS[i], () => next(i + 1));
    };
    next(0);
  }],
  ['/304', (req, res) => { res.writeHead(304, { ETag: '"v1"' }).end(); }],
  ['/301', (req, res) => { res.writeHead(301, { Location: '/target' }).end('moved'); }],
  ['/301-no-location', (req, res) => { res.writeHead(301).end('moved'); }],
  ['/404-retry', (req, res) => { res.writeHead(404, { 'Retry-After': '7' }).end('gone'); }],
  ['/503-retry', (req, res) => { res.writeHead(503, { 'Retry-After': '7' }).end('busy'); }],
  // 1 MiB bodies nobody wants: the redirect's ends, the 404's never does (only the discard limit settles it).
  ['/301-big', (req, res) => { res.writeHead(301, { Location: '/target' }).end(Buffer.alloc(MiB, 0x61)); }],
  ['/404-big-open', (req, res) => { res.writeHead(404); res.write(Buffer.alloc(MiB, 0x61)); }],
  ['/declared-too-big', (req, res) => { res.writeHead(200, { 'Content-Length': '100000' }); res.write('x'); }],
  ['/grows-too-big', (req, res) => { res.writeHead(200); for (let i = 0; i < 5; i++) res.write(Buffer.alloc(500, 0x62)); }],
  ['/drip', (req, res) => {
    res.writeHead(200);
    const timer = setInterval(() => res.write('x'), 50);
    res.on('close', () => clearInterval(timer));
  }],
  ['/reset', (req, res) => { res.writeHead(200); res.write('part of a page', () => req.socket.destroy()); }],
  ['/short', (req, res) => {
    res.writeHead(200, { 'Content-Length': '1000' });
    res.write('0123456789', () => req.socket.end());
  }],
  // The headers give the outcome; then the body is cut off, or stalls.
  ['/404-reset', (req, res) => { res.writeHead(404, { 'Retry-After': '7' }); res.write('part of an error page', () => req.socket.destroy()); }],
  ['/301-drip', (req, res) => {
    res.writeHead(301, { Location: '/target' });
    const timer = setInterval(() => res.write('x'), 50);
    res.on('close', () => clearInterval(timer));
  }],
  ['/early-hints', (req, res) => {
    res.writeEarlyHints({ link: '</a.css>; rel=preload; as=style' });
    res.writeProcessing();
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>after hints</p>');
  }],
  ['/gzip', (req, res) => { res.writeHead(200, { 'Content-Encoding': 'gzip' }).end(zlib.gzipSync('<p>gzip page</p>')); }],
  ['/br', (req, res) => { res.writeHead(200, { 'Content-Encoding': 'br' }).end(zlib.brotliCompressSync('<p>br page</p>')); }],
  ['/compress', (req, res) => { res.writeHead(200, { 'Content-Encoding': 'compress' }).end('whatever'); }],
  ['/echo', (req, res) => { res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(req.headers)); }],
]);

/** @type {Map<string, number>} */
const hits = new Map();
/** @type {Map<string, () => void>} */
const arrivals = new Map();
/** Resolves when the server next receives a request for `path`. */
const arrived = (/** @type {string} */ path) => new Promise((resolve) => { arrivals.set(path, () => resolve(undefined)); });

const server = http.createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  hits.set(path, (hits.get(path) ?? 0) + 1);
  arrivals.get(path)?.();
  arrivals.delete(path);
  const route = routes.get(path);
  if (route) route(req, res);
  else res.writeHead(200).end(`page ${path}`);
});
let origin = '';

/** @type {import('../lib/fetch/http.js').Loader[]} */
const loaders = [];
const make = (/** @type {Partial<Parameters<typeof createHttpLoader>[0]>} */ options = {}) => {
  const loader = createHttpLoader({ concurrency: 2, timeout: 5000, maxPageBytes: 2 * MiB, ...options });
  loaders.push(loader);
  return loader;
};

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
});

afterAll(async () => {
  await Promise.all(loaders.map((loader) => loader.close().catch(() => {})));
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/**
 * Run `promise`; its outcome and how long it took.
 * @param {Promise<unknown>} promise
 */
async function timed(promise) {
  const start = performance.now();
  try {
    return { value: await promise, error: undefined, ms: performance.now() - start };
  } catch (error) {
    return { value: undefined, error, ms: performance.now() - start };
  }
}

/**
 * The error `promise` rejects with; fails the test when it resolves.
 * @param {Promise<unknown>} promise
 * @returns {Promise<any>}
 */
async function failure(promise) {
  const { value, error } = await timed(promise);
  if (error === undefined) throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
  return error;
}

describe('createHttpLoader', () => {
  it('a 200 in several chunks: the exact bytes, the status, lower-case headers, a repeated header as an array', async () => {
    const page = await make().load(`${origin}/chunks`);
    expect(page.url).toBe(`${origin}/chunks`);
    expect(page.status).toBe(200);
    expect(Buffer.isBuffer(page.body)).toBe(true);
    expect(page.body.equals(Buffer.concat(CHUNKS))).toBe(true);
    expect(page.headers['transfer-encoding']).toBe('chunked');
    expect(page.headers['content-type']).toBe('text/html');
    expect(page.headers['x-mixed-case']).toBe('Yes');
    expect(page.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(page.location).toBeUndefined();
    expect(page.notModified).toBeUndefined();
  });

  it('304 is notModified with an empty body; 301 gives its location; 301 without one is HttpStatusError 301', async () => {
    const loader = make();
    const notModified = await loader.load(`${origin}/304`);
    expect(notModified).toMatchObject({ status: 304, notModified: true });
    expect(notModified.body.length).toBe(0);
    expect(notModified.headers.etag).toBe('"v1"');
    const redirect = await loader.load(`${origin}/301`);
    expect(redirect).toMatchObject({ status: 301, location: '/target' });
    expect(redirect.body.length).toBe(0);
    const error = await failure(loader.load(`${origin}/301-no-location`));
    expect(error).toBeInstanceOf(HttpStatusError);
    expect(error.status).toBe(301);
  });

  it.each([[404, false], [503, true]])('%i with Retry-After: 7 is HttpStatusError with retryAfterMs 7000', async (status, retryable) => {
    const error = await failure(make().load(`${origin}/${status}-retry`));
    expect(error).toBeInstanceOf(HttpStatusError);
    expect(error.status).toBe(status);
    expect(error.retryAfterMs).toBe(7000);
    expect(error.retryable).toBe(retryable);
  });

  it('1 MiB bodies of a redirect and of a 404 (one never ending) settle promptly; the loader goes on', async () => {
    // Bodies that never end (and a timeout longer than the test): each must settle from its headers.
    const loader = make({ concurrency: 1, timeout: 600_000 });
    const redirect = await timed(loader.load(`${origin}/301-big`));
    expect(redirect.error).toBeUndefined();
    expect(redirect.value).toMatchObject({ status: 301, location: '/target' });
    expect(/** @type {any} */ (redirect.value).body.length).toBe(0);
    expect(redirect.ms).toBeLessThan(60_000);
    const notFound = await timed(loader.load(`${origin}/404-big-open`));
    expect(notFound.error).toBeInstanceOf(HttpStatusError);
    expect(/** @type {any} */ (notFound.error).status).toBe(404);
    expect(notFound.ms).toBeLessThan(60_000);
    const next = await loader.load(`${origin}/after-big`);
    expect(next.status).toBe(200);
    expect(next.body.toString()).toBe('page /after-big');
  });

  it('Content-Length over maxPageBytes is PageTooLargeError without waiting for the body; so is a chunked body growing past it', async () => {
    const loader = make({ maxPageBytes: 1000, timeout: 600_000 });
    const declared = await timed(loader.load(`${origin}/declared-too-big`));
    expect(declared.error).toBeInstanceOf(PageTooLargeError);
    expect(/** @type {Error} */ (declared.error).message).toContain('100000');
    expect(declared.ms).toBeLessThan(60_000);
    const grown = await timed(loader.load(`${origin}/grows-too-big`));
    expect(grown.error).toBeInstanceOf(PageTooLargeError);
    expect(grown.ms).toBeLessThan(60_000);
    expect((await loader.load(`${origin}/small`)).body.toString()).toBe('page /small');
  });

  it('headers then a body dripping forever: TimeoutError after the timeout, not never', async () => {
    // 2 s: the headers come well before it, however busy the machine. Timed from before the load starts its clock.
    const started = performance.now();
    const { error } = await timed(make({ timeout: 2000 }).load(`${origin}/drip`));
    const ms = performance.now() - started;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(ms).toBeGreaterThanOrEqual(1950);
    expect(ms).toBeLessThan(20_000);
  });

  it('an outcome the headers gave stands when the unwanted body is cut off (404) or stalls past the timeout (301)', async () => {
    const error = await failure(make().load(`${origin}/404-reset`));
    expect(error).toBeInstanceOf(HttpStatusError);
    expect(error).toMatchObject({ status: 404, retryAfterMs: 7000, retryable: false });
    const { value, ms } = await timed(make({ timeout: 2000 }).load(`${origin}/301-drip`));
    expect(value).toMatchObject({ status: 301, location: '/target' });
    expect(ms).toBeLessThan(20_000);
  });

  it('interim answers (103 Early Hints, 102 Processing) are passed over for the page that follows; a URL not http(s) is a FetchError', async () => {
    const page = await make().load(`${origin}/early-hints`);
    expect(page).toMatchObject({ status: 200 });
    expect(page.body.toString()).toBe('<p>after hints</p>');
    const error = await failure(make().load('ftp://127.0.0.1/x'));
    expect(error).toBeInstanceOf(FetchError);
    expect(error.message).toMatch(/not an http\(s\) URL/);
  });

  it('an HTTP/1.0 answer without Content-Length, its body ended by the close, and a 204, are pages like any other', async () => {
    // Old ASP servers answer so: a raw socket server, as node:http would add a length or chunks.
    const raw = net.createServer((socket) => {
      socket.once('data', (request) => {
        const noContent = request.toString('latin1').startsWith('GET /204 ');
        socket.end(noContent
          ? 'HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n'
          : `HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nX-Builder-FileName: old.htm\r\n\r\n<p>${'x'.repeat(70_000)}</p>`);
      });
    });
    raw.listen(0, '127.0.0.1');
    await once(raw, 'listening');
    const rawOrigin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (raw.address()).port}`;
    try {
      const loader = make({ concurrency: 1 });
      const page = await loader.load(`${rawOrigin}/old.asp`);
      expect(page).toMatchObject({ status: 200, headers: { 'x-builder-filename': 'old.htm' } });
      expect(page.body.length).toBe(70_007);
      expect((await loader.load(`${rawOrigin}/204`)).body.length).toBe(0);
      expect((await loader.load(`${rawOrigin}/again.asp`)).body.length).toBe(70_007); // a new connection after each close
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  it.each(['/reset', '/short'])('%s (socket destroyed mid-body / shorter than Content-Length) is FetchError', async (path) => {
    const error = await failure(make().load(`${origin}${path}`));
    expect(error).toBeInstanceOf(FetchError);
    expect(error.retryable).toBe(true);
  });

  it('a signal aborted before load: AbortError at once, no request sent', async () => {
    const controller = new AbortController();
    controller.abort();
    const { error, ms } = await timed(make({ timeout: 600_000 }).load(`${origin}/never-asked`, { signal: controller.signal }));
    expect(error).toBeInstanceOf(AbortError);
    expect(ms).toBeLessThan(60_000); // not the timeout's 10 min
    expect(hits.get('/never-asked')).toBeUndefined();
  });

  it('a signal aborted while the response is in flight: AbortError promptly', async () => {
    const controller = new AbortController();
    const hit = arrived('/drip');
    const request = timed(make({ timeout: 600_000 }).load(`${origin}/drip`, { signal: controller.signal }));
    await hit;
    const start = performance.now();
    controller.abort();
    const { error } = await request;
    expect(error).toBeInstanceOf(AbortError);
    expect(performance.now() - start).toBeLessThan(60_000); // not the timeout's 10 min
  });

  it('gzip and br bodies are decoded; an unknown coding is ContentEncodingError', async () => {
    const loader = make();
    expect((await loader.load(`${origin}/gzip`)).body.toString()).toBe('<p>gzip page</p>');
    expect((await loader.load(`${origin}/br`)).body.toString()).toBe('<p>br page</p>');
    const error = await failure(loader.load(`${origin}/compress`));
    expect(error).toBeInstanceOf(ContentEncodingError);
    expect(error.message).toContain('"compress"');
  });

  it('sends a prerender user-agent, accept-encoding identity and the per-call headers', async () => {
    const page = await make().load(`${origin}/echo`, { headers: { 'if-none-match': '"v1"' } });
    const received = JSON.parse(page.body.toString());
    expect(received['user-agent']).toMatch(/^prerender\//);
    expect(received['accept-encoding']).toBe('identity');
    expect(received['if-none-match']).toBe('"v1"');
  });
});
