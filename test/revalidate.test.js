// @ts-check
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { once } from 'node:events';
import { createHttpLoader } from '../lib/fetch/http.js';
import { withRevalidation } from '../lib/fetch/revalidate.js';
import { AbortError, FetchError, HttpStatusError, TimeoutError } from '../lib/errors.js';

/**
 * The re-crawl's HTTP thread (lib/fetch/revalidate.js) against a real origin:
 * what is asked ahead, in what order, how many at once, and that answers and
 * typed errors come back as the main thread's loader gives them.
 */

/** @type {http.Server} */
let server;
let base = '';
/** @type {string[]} paths in the order requests arrived */
let arrived = [];
let inFlight = 0;
let maxInFlight = 0;
/** @type {Map<string, (res: http.ServerResponse) => void>} */
const handlers = new Map();
/** ms each request is held before its answer */
let holdMs = 0;
/**
 * The test under way: its revalidators send it in a header, and the origin
 * counts only its requests (one a thread of the test before had started may
 * arrive after that test ended).
 */
let testId = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    if (req.headers['x-test'] === String(testId)) {
      arrived.push(path);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      res.on('close', () => { inFlight--; });
    }
    const answer = () => {
      const handler = handlers.get(path.split('?')[0]);
      if (handler) return handler(res);
      if (req.headers['if-none-match'] === `"${path}"`) {
        res.writeHead(304, { etag: `"${path}"` });
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'text/html', etag: `"${path}"`, 'x-path': path });
      res.end(`<p>${path}</p>`);
    };
    if (holdMs > 0) setTimeout(answer, holdMs);
    else answer();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  base = `http://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** @type {import('../lib/fetch/revalidate.js').Revalidator[]} */
let open = [];
afterEach(async () => {
  await Promise.all(open.map((revalidator) => revalidator.close()));
  open = [];
  arrived = [];
  handlers.clear();
  holdMs = 0;
  maxInFlight = 0;
  testId++;
});

/**
 * @param {{ concurrency?: number, timeout?: number, headersFor?: (url: string) => Record<string, string> | undefined, start?: boolean }} [options]
 */
function revalidator({ concurrency = 4, timeout = 5000, headersFor = (url) => ({ 'if-none-match': `"${new URL(url).pathname}${new URL(url).search}"` }), start = true } = {}) {
  const options = { concurrency, timeout, maxPageBytes: 1024 * 1024, headers: { 'x-test': String(testId) } };
  const made = withRevalidation(createHttpLoader(options), options);
  open.push(made);
  if (start) made.start(headersFor);
  return made;
}

/**
 * Wait until the origin has seen `count` requests (bounded).
 * @param {number} count
 */
async function arrivedAtLeast(count) {
  for (let i = 0; i < 3000 && arrived.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return arrived.length;
}

/**
 * Hold the answer to `path` until the test releases it.
 * @param {string} path
 */
function hold(path) {
  /** @type {() => void} */
  let release = () => {};
  const released = new Promise((resolve) => { release = () => resolve(undefined); });
  handlers.set(path, (res) => {
    released.then(() => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<p>${path}</p>`);
    });
  });
  return release;
}

const urls = (/** @type {number} */ n, /** @type {string} */ prefix = '/p') => Array.from({ length: n }, (_, i) => `${base}${prefix}${i}`);

describe('the revalidation thread', () => {
  it('asks hinted URLs ahead, once each, and hands the answers over when the crawl comes to them', async () => {
    const r = revalidator({ concurrency: 8 });
    const list = urls(20);
    r.hint(list);
    expect(await arrivedAtLeast(20)).toBe(20);
    for (const url of list) {
      const result = await r.load(url, { headers: { 'if-none-match': `"${new URL(url).pathname}"` } });
      expect(result).toMatchObject({ url, status: 304, notModified: true });
      expect(result.body.length).toBe(0);
    }
    expect(arrived).toHaveLength(20);
    expect(r.counts).toMatchObject({ askedAhead: 20, takenAhead: 20, urgent: 0, inMain: 0 });
  });

  it('an answer with a body (the page changed) comes with its bytes, headers and status', async () => {
    const r = revalidator({ headersFor: () => ({ 'if-none-match': '"old"' }) });
    r.hint([`${base}/changed`]);
    const result = await r.load(`${base}/changed`, { headers: { 'if-none-match': '"old"' } });
    expect(result.status).toBe(200);
    expect(result.notModified).toBeUndefined();
    expect(result.headers['x-path']).toBe('/changed');
    expect(result.body.toString()).toBe('<p>/changed</p>');
  });

  it('keeps to --concurrency requests in flight, however far ahead it asks', async () => {
    const list = urls(40, '/c');
    // Each answer waits until 3 requests are in flight (or none is left to come): 3 at once, never more.
    /** @type {http.ServerResponse[]} */
    let held = [];
    for (const url of list) {
      handlers.set(new URL(url).pathname, (res) => {
        held.push(res);
        if (held.length < 3 && arrived.length < list.length) return;
        for (const answer of held) answer.writeHead(200, { 'content-type': 'text/html' }).end('<p>c</p>');
        held = [];
      });
    }
    const r = revalidator({ concurrency: 3 });
    r.hint(list);
    await Promise.all(list.map((url) => r.load(url, { headers: { 'if-none-match': `"${new URL(url).pathname}"` } })));
    expect(arrived).toHaveLength(40);
    expect(maxInFlight).toBe(3);
  });

  it('asks at most its lookahead (4 × the concurrency) ahead of the crawl', async () => {
    const r = revalidator({ concurrency: 8 });
    r.hint(urls(600));
    await arrivedAtLeast(32);
    // Nothing taken: no more is asked, whatever the wait.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(arrived.length).toBe(32);
    // Each answer taken lets one more be asked.
    await r.load(`${base}/p0`, { headers: { 'if-none-match': '"/p0"' } });
    expect(await arrivedAtLeast(33)).toBe(33);
  });

  it('a page the crawl comes to whose ask has not started yet goes first', async () => {
    holdMs = 10;
    const release = hold('/p0');
    const r = revalidator({ concurrency: 1 });
    const list = urls(4);
    r.hint(list);
    await arrivedAtLeast(1);
    const taken = r.load(list[3], { headers: { 'if-none-match': '"/p3"' } });
    // /p0 answers once the thread has been told: /p3 is next, or after the one started as that word came.
    await new Promise((resolve) => setImmediate(resolve));
    release();
    const result = await taken;
    expect(result.status).toBe(304);
    expect(arrived.indexOf('/p3')).toBeLessThan(3);
    expect(r.counts).toMatchObject({ takenAhead: 1, urgent: 0 });
  });

  it('a page forgotten before its ask started is never requested', async () => {
    holdMs = 30;
    const r = revalidator({ concurrency: 1 });
    const list = urls(3);
    r.hint(list);
    r.forget(list[2]);
    await Promise.all(list.slice(0, 2).map((url) => r.load(url, { headers: { 'if-none-match': `"${new URL(url).pathname}"` } })));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(arrived).toEqual(['/p0', '/p1']);
  });

  it('an interrupted crawl: what was asked ahead and not started is not requested', async () => {
    holdMs = 20;
    const release = hold('/p0');
    const r = revalidator({ concurrency: 1 });
    const list = urls(30);
    r.hint(list);
    const controller = new AbortController();
    const first = r.load(list[0], { signal: controller.signal, headers: { 'if-none-match': '"/p0"' } });
    await arrivedAtLeast(1);
    controller.abort();
    await expect(first).rejects.toBeInstanceOf(AbortError);
    // /p0 ends after the thread was told: at most the one it started as that word came follows.
    release();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(arrived.length).toBeLessThanOrEqual(2);
  });

  it('a URL the crawl needs that was not asked ahead goes before those asked ahead', async () => {
    holdMs = 5;
    const r = revalidator({ concurrency: 1 });
    r.hint(urls(100));
    await arrivedAtLeast(1);
    const urgent = await r.load(`${base}/now`);
    expect(urgent.status).toBe(200);
    // Behind at most the requests already in flight or sent in the same turn.
    expect(arrived.indexOf('/now')).toBeLessThan(5);
    expect(r.counts.urgent).toBe(1);
  });

  it('asks again when the crawl wants other validators than those asked ahead', async () => {
    const r = revalidator();
    r.hint([`${base}/v`]);
    await arrivedAtLeast(1);
    const result = await r.load(`${base}/v`, { headers: { 'if-none-match': '"other"' } });
    expect(result.status).toBe(200);
    expect(arrived).toEqual(['/v', '/v']);
  });

  it('does not ask ahead a URL without validators, nor one the crawl already took', async () => {
    const r = revalidator({ headersFor: (url) => (url.endsWith('/none') ? undefined : { 'if-none-match': '"x"' }) });
    r.hint([`${base}/none`, `${base}/with`]);
    expect(await arrivedAtLeast(1)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(arrived).toEqual(['/with']);
  });

  it('forget() drops an answer asked ahead: a later load asks again', async () => {
    const r = revalidator();
    r.hint([`${base}/f`]);
    await arrivedAtLeast(1);
    await new Promise((resolve) => setTimeout(resolve, 30));
    r.forget(`${base}/f`);
    await r.load(`${base}/f`, { headers: { 'if-none-match': '"/f"' } });
    expect(arrived).toEqual(['/f', '/f']);
    expect(r.counts).toMatchObject({ takenAhead: 0, urgent: 1 });
  });

  it('gives the typed errors of the HTTP loader: status (with Retry-After), timeout, refused connection', async () => {
    handlers.set('/busy', (res) => { res.writeHead(503, { 'retry-after': '600' }); res.end('busy'); });
    handlers.set('/gone', (res) => { res.writeHead(410); res.end(); });
    handlers.set('/slow', () => {});
    const r = revalidator();
    r.hint([`${base}/busy`, `${base}/gone`]);
    const busy = await r.load(`${base}/busy`, { headers: { 'if-none-match': '"/busy"' } }).catch((error) => error);
    expect(busy).toBeInstanceOf(HttpStatusError);
    expect(busy).toMatchObject({ status: 503, retryable: true, message: 'HTTP 503' });
    // Seconds, counted from the answer: less by the time the answer waited to be taken.
    expect(busy.retryAfterMs).toBeGreaterThan(500_000);
    expect(busy.retryAfterMs).toBeLessThanOrEqual(600_000);
    const gone = await r.load(`${base}/gone`, { headers: { 'if-none-match': '"/gone"' } }).catch((error) => error);
    expect(gone).toBeInstanceOf(HttpStatusError);
    expect(gone).toMatchObject({ status: 410, retryable: false });
    // A short --timeout only where the answer never comes: the others stay clear of it however slow the machine.
    const short = revalidator({ timeout: 200 });
    short.hint([`${base}/slow`]);
    const slow = await short.load(`${base}/slow`, { headers: { 'if-none-match': '"/slow"' } }).catch((error) => error);
    expect(slow).toBeInstanceOf(TimeoutError);
    const closed = http.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = /** @type {import('node:net').AddressInfo} */ (closed.address()).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await r.load(`http://127.0.0.1:${port}/`).catch((error) => error);
    expect(refused).toBeInstanceOf(FetchError);
    expect(refused.code).toBe('FETCH');
    expect(refused.message).toMatch(/ECONNREFUSED/);
    expect(refused.cause?.code).toBe('ECONNREFUSED'); // what the command line's hint reads
  });

  it('a Retry-After held ahead counts from when it came, not from when the crawl takes it', async () => {
    handlers.set('/later', (res) => { res.writeHead(503, { 'retry-after': '30' }); res.end(); });
    const r = revalidator({ concurrency: 1 });
    r.hint([`${base}/later`, `${base}/marker`]);
    // One at a time, in order: once /marker's answer is taken, /later's is held in the main thread.
    await arrivedAtLeast(2);
    expect(arrived).toEqual(['/later', '/marker']);
    await r.load(`${base}/marker`, { headers: { 'if-none-match': '"/marker"' } });
    await new Promise((resolve) => setTimeout(resolve, 600));
    const error = await r.load(`${base}/later`, { headers: { 'if-none-match': '"/later"' } }).catch((e) => e);
    expect(error).toBeInstanceOf(HttpStatusError);
    expect(error.retryAfterMs).toBeLessThanOrEqual(30_000 - 600);
    expect(error.retryAfterMs).toBeGreaterThan(0);
  });

  it('before start() the wrapped loader does the work, in the main thread', async () => {
    const r = revalidator({ start: false });
    r.hint([`${base}/a`]);
    const result = await r.load(`${base}/a`);
    expect(result.status).toBe(200);
    expect(r.counts).toMatchObject({ inMain: 1, askedAhead: 0 });
    expect(r.started).toBe(false);
  });

  it('stop() ends the thread: later requests are made in the main thread', async () => {
    const r = revalidator();
    expect((await r.load(`${base}/s1`)).status).toBe(200);
    await r.stop();
    expect(r.started).toBe(false);
    expect((await r.load(`${base}/s2`)).status).toBe(200);
    expect(r.counts).toMatchObject({ urgent: 1, inMain: 1 });
  });

  it('an interrupted crawl: a waiting load rejects with AbortError; close() ends the rest', async () => {
    handlers.set('/hang', () => {});
    const r = revalidator();
    const controller = new AbortController();
    const waiting = r.load(`${base}/hang`, { signal: controller.signal });
    await arrivedAtLeast(1);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortError);
    const other = r.load(`${base}/hang?2`).catch((error) => error);
    await arrivedAtLeast(2);
    await r.close();
    expect(await other).toBeInstanceOf(AbortError);
  });
});
