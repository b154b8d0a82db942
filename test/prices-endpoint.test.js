// @ts-check
/**
 * The price endpoint client under load and under faults (issue 12, defects 1
 * and 4): the timeout measures the endpoint, not the queue; a queue wait is a
 * local overload that never opens the circuit; batches with {skus}; the
 * circuit opens on endpoint errors, half-opens with one probe, and logs; only
 * text/plain or JSON answers, cleaned.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpPriceSource } from '../lib/prices/index.js';
import { cleanPriceText, readBatchAnswer, readSingleAnswer } from '../lib/prices/answer.js';
import { benchPrice, startPriceEndpoint } from '../fixtures/price-endpoint.js';
import { closeServer, listen, waitFor } from '../fixtures/serve/http.js';

/** @type {(() => Promise<unknown>)[]} */
let cleanups = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

/**
 * @param {string} template
 * @param {ConstructorParameters<typeof HttpPriceSource>[1]} [options]
 */
function open(template, options = {}) {
  /** @type {string[]} */
  const log = [];
  // Timeouts are bounds on a hang unless a test sets its own: the defaults (300 ms) fail lookups on a loaded machine.
  const source = new HttpPriceSource(template, { logger: { warn: (m) => log.push(`warn ${m}`), info: (m) => log.push(`info ${m}`) }, timeoutMs: 30_000, queueMs: 30_000, ...options });
  cleanups.push(() => source.close());
  return { source, log };
}

/** @param {Parameters<typeof startPriceEndpoint>[0]} options */
async function endpointWith(options) {
  const endpoint = await startPriceEndpoint(options);
  cleanups.push(() => endpoint.close());
  return endpoint;
}

const skus = (/** @type {number} */ n) => Array.from({ length: n }, (_, i) => `SKU-${i + 1}`);

describe('HttpPriceSource under load', () => {
  it('a 200-slot page on a 50 ms endpoint gets 200 prices, one SKU per request: the queue does not count against the timeout', async () => {
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 50 });
    // 4 connections: 50 rounds of 50 ms in the queue (2.5 s), more than the timeout
    const { source } = open(endpoint.template, { timeoutMs: 2000, connections: 4, queueMs: 30_000 });
    const prices = await Promise.all(skus(200).map((sku) => source.lookup(sku, '10001')));
    expect(prices.filter((p) => p === null)).toEqual([]);
    expect(prices[199]).toBe('$200.99 (10001)');
    expect(endpoint.hits.maxActive).toBeLessThanOrEqual(4);
    expect(source.stats.timeouts).toBe(0);
    expect(source.breakerState).toBe('closed');
  });

  it('with {skus}, the 200 SKUs of a page go in two requests (batch of 100) and all get their price', async () => {
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 50 });
    const { source } = open(endpoint.batchTemplate);
    const prices = await Promise.all(skus(200).map((sku) => source.lookup(sku, '90210')));
    expect(prices).toEqual(skus(200).map((sku) => benchPrice(sku, '90210')));
    expect(endpoint.hits.total).toBe(2);
    expect(endpoint.hits.urls[0]).toMatch(/^\/prices\.asp\?skus=SKU-1,SKU-2,.*&zip=90210$/);
    // cached: synchronous now
    expect(source.lookup('SKU-7', '90210')).toBe('$7.99 (90210)');
  });

  it('a burst of 3,000 lookups on a cold cache (1,000 pages, 5 zips) gets >= 99% real prices in batches', async () => {
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 50 });
    const { source } = open(endpoint.batchTemplate, { timeoutMs: 5000, queueMs: 10_000 }); // (shared machine: above the defaults)
    const zips = ['10001', '90210', '60601', '94103', '1234 AB'];
    const lookups = [];
    for (let page = 1; page <= 1000; page++) {
      const zip = zips[page % zips.length];
      lookups.push(source.lookup(`SKU-${page}`, zip), source.lookup(`SKU-${page}-CASE`, zip), source.lookup(`SKU-${(page * 7) % 1000 + 1}`, zip));
    }
    const prices = await Promise.all(lookups);
    const real = prices.filter((p) => typeof p === 'string' && p.startsWith('$')).length;
    expect(real / prices.length).toBeGreaterThanOrEqual(0.99);
    expect(endpoint.hits.total).toBeLessThan(100);
    expect(source.stats.overloaded).toBe(0);
    expect(source.breakerState).toBe('closed');
  });

  it('a lookup that waits too long for a connection is a local overload: no price, but the circuit stays closed', async () => {
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 100 });
    const { source, log } = open(endpoint.template, { timeoutMs: 1000, connections: 2, queueMs: 30, breakerThreshold: 2 });
    const prices = await Promise.all(skus(20).map((sku) => source.lookup(sku, null)));
    expect(prices.filter((p) => p !== null).length).toBe(2);
    expect(source.stats.overloaded).toBe(18);
    expect(source.stats.failures).toBe(0);
    expect(source.breakerState).toBe('closed');
    expect(log.join('\n')).toMatch(/local overload, not an endpoint error/);
    // and the endpoint is used normally afterwards
    expect(await source.lookup('SKU-3', null)).toBe('$3.99');
  });

  it('at the endpoint\'s measured pace, a lookup that could not be sent within queueMs gets no price at once (not after waiting for nothing)', async () => {
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 100 });
    const { source } = open(endpoint.template, { timeoutMs: 5000, connections: 2, queueMs: 450, breakerThreshold: 2 });
    expect(await source.lookup('SKU-100', null)).toBe('$100.99'); // the pace: ~100 ms an answer
    const lookups = skus(40).map((sku) => source.lookup(sku, null));
    // 2 sent, a few rounds of 2 queued (each round ~100 ms, within 450 ms); the rest refused at once
    expect(lookups.slice(0, 4).every((p) => p instanceof Promise)).toBe(true);
    expect(lookups[39]).toBe(null);
    const refused = lookups.filter((p) => p === null).length;
    expect(refused).toBeGreaterThanOrEqual(25);
    expect(source.stats.overloaded).toBeGreaterThanOrEqual(refused);
    const prices = await Promise.all(lookups);
    expect(prices.slice(0, 2)).toEqual(['$1.99', '$2.99']);
    expect(source.stats.failures).toBe(0);
    expect(source.breakerState).toBe('closed');
  });

  it('the local queue is bounded: past maxQueued, lookups get no price at once', async () => {
    const endpoint = await endpointWith({ prices: benchPrice });
    endpoint.setMode('slow');
    const { source } = open(endpoint.template, { connections: 1, maxQueued: 3, timeoutMs: 5000, queueMs: 5000 });
    const first = source.lookup('SKU-1', null); // sent
    const queued = ['SKU-2', 'SKU-3', 'SKU-4'].map((sku) => source.lookup(sku, null));
    expect(queued.every((p) => p instanceof Promise)).toBe(true);
    expect(source.lookup('SKU-5', null)).toBe(null); // the queue is full
    expect(source.stats.overloaded).toBe(1);
    endpoint.setMode('ok');
    endpoint.releaseHeld();
    expect(await first).toBe('$1.99');
    expect(await Promise.all(queued)).toEqual(['$2.99', '$3.99', '$4.99']);
  });

  it('the timeout starts when the request is sent: 5 lookups on one connection to a 1 s endpoint with a 3 s timeout all succeed', async () => {
    // the last one waits 4 s in the queue: more than the timeout, which must not count it; each request has 2 s of slack
    const endpoint = await endpointWith({ prices: benchPrice, delayMs: 1000 });
    const { source } = open(endpoint.template, { timeoutMs: 3000, connections: 1, queueMs: 30_000 });
    const prices = await Promise.all(skus(5).map((sku) => source.lookup(sku, null)));
    expect(prices).toEqual(['$1.99', '$2.99', '$3.99', '$4.99', '$5.99']);
    expect(source.stats.timeouts).toBe(0);
  });
});

describe('HttpPriceSource circuit breaker', () => {
  it('opens on endpoint errors, half-opens with one probe after the cooldown, closes on its success, and logs each transition', async () => {
    let now = 0;
    const endpoint = await endpointWith({ prices: benchPrice });
    endpoint.setMode('error');
    const { source, log } = open(endpoint.template, { breakerThreshold: 3, breakerCooldownMs: 1000, negativeTtlMs: 0, now: () => now });
    for (const sku of skus(3)) expect(await source.lookup(sku, null)).toBe(null);
    expect(source.breakerState).toBe('open');
    expect(log.join('\n')).toMatch(/circuit open \(3 endpoint errors in a row, last: HTTP 500\)/);
    expect(source.lookup('SKU-9', null)).toBe(null); // at once, nothing sent
    expect(endpoint.hits.total).toBe(3);
    now += 1000;
    endpoint.setMode('slow');
    const probe = source.lookup('SKU-1', null);
    expect(source.breakerState).toBe('half-open');
    expect(source.lookup('SKU-2', null)).toBe(null); // only one probe
    await waitFor(() => endpoint.hits.total === 4, { what: 'the probe' });
    endpoint.setMode('ok');
    endpoint.releaseHeld();
    expect(await probe).toBe('$1.99');
    expect(source.breakerState).toBe('closed');
    expect(log.filter((l) => /circuit/.test(l))).toEqual([
      expect.stringMatching(/^warn .*circuit open/),
      expect.stringMatching(/^warn .*circuit half-open, sending one probe/),
      expect.stringMatching(/^info .*circuit closed, the endpoint answers again/),
    ]);
  });

  it('a failed probe opens the circuit again', async () => {
    let now = 0;
    const endpoint = await endpointWith({ prices: benchPrice });
    endpoint.setMode('down');
    const { source, log } = open(endpoint.template, { breakerThreshold: 2, breakerCooldownMs: 500, negativeTtlMs: 0, now: () => now });
    for (const sku of skus(2)) expect(await source.lookup(sku, null)).toBe(null);
    now += 500;
    expect(await source.lookup('SKU-5', null)).toBe(null);
    expect(source.breakerState).toBe('open');
    expect(log.join('\n')).toMatch(/circuit open \(the probe failed/);
  });

  it('answers that are not prices (HTML) fail the lookup but do not open the circuit', async () => {
    const endpoint = await endpointWith({ prices: benchPrice });
    endpoint.setMode('html');
    const { source, log } = open(endpoint.template, { breakerThreshold: 2, negativeTtlMs: 0 });
    for (const sku of skus(4)) expect(await source.lookup(sku, null)).toBe(null);
    expect(source.breakerState).toBe('closed');
    expect(source.stats.invalid).toBe(4);
    expect(log.join('\n')).toMatch(/"text\/html", not text\/plain or JSON/);
  });

  it('a stale price is served past its TTL while the endpoint is down, up to the max staleness', async () => {
    let now = 0;
    const endpoint = await endpointWith({ prices: benchPrice });
    const { source } = open(endpoint.template, { ttlMs: 100, staleMs: 1000, now: () => now });
    expect(await source.lookup('SKU-1', null)).toBe('$1.99');
    endpoint.setMode('error');
    now += 500;
    expect(source.lookup('SKU-1', null)).toBe('$1.99'); // stale, refresh fails in the background
    await waitFor(() => source.stats.failures === 1, { what: 'the failed refresh' });
    expect(source.lookup('SKU-1', null)).toBe('$1.99');
    now += 700; // past TTL + max staleness
    expect(await source.lookup('SKU-1', null)).toBe(null);
  });

  it('with the endpoint down, lookups settle fast and the circuit opens', async () => {
    const endpoint = await endpointWith({ prices: benchPrice });
    const port = endpoint.port;
    await endpoint.close(); // nothing listens there now: connections refused
    // long timeouts: refused connections must settle lookups without waiting for them
    const { source } = open(`http://127.0.0.1:${port}/price.asp?sku={sku}`, { timeoutMs: 600_000, queueMs: 600_000 });
    const started = performance.now();
    const prices = await Promise.all(skus(100).map((sku) => source.lookup(sku, null)));
    expect(performance.now() - started).toBeLessThan(60_000); // not the timeout's 10 min
    expect(prices.every((p) => p === null)).toBe(true);
    expect(source.breakerState).toBe('open');
  });
});

describe('price answers', () => {
  it('strips control characters and invalid UTF-8 from an endpoint answer', async () => {
    const endpoint = await endpointWith({ prices: benchPrice });
    endpoint.setMode('control');
    const { source } = open(endpoint.template);
    const price = await source.lookup('SKU-1', null);
    expect(price).toBe('$1[31m.99 X-Injected: 1!');
  });

  it.each([
    ['text/html', '<b>$1</b>'],
    [undefined, '$1'],
    ['application/octet-stream', '$1'],
    ['text/plain; charset=x-unknown', '$1'],
  ])('refuses an answer of type %j', (type, body) => {
    expect(() => readSingleAnswer(Buffer.from(body), type, 100)).toThrow(/not text\/plain or JSON|charset/);
  });

  it('reads text, JSON and latin-1 answers', () => {
    expect(readSingleAnswer(Buffer.from(' $1.99\r\n'), 'text/plain', 100)).toBe('$1.99');
    expect(readSingleAnswer(Buffer.from('{"price": 2}'), 'application/json; charset=utf-8', 100)).toBe('2');
    expect(readSingleAnswer(Buffer.from('12,50 \xa4', 'latin1'), 'text/plain; charset=iso-8859-15', 100)).toBe('12,50 €');
    expect(readSingleAnswer(Buffer.from(''), 'text/plain', 100)).toBe(null);
    expect(() => readSingleAnswer(Buffer.from('9'.repeat(101)), 'text/plain', 100)).toThrow(/longer than 100/);
  });

  it('cleans price text: NUL, ESC, CR/LF, C1 and bidi overrides', () => {
    expect(cleanPriceText('\u0000$1\u001b.99\r\n\u0085\u202e!', 100)).toBe('$1.99 !');
    expect(cleanPriceText('\u0000 \r\n', 100)).toBe(null);
  });

  it('reads a batch answer; one bad value fails only its SKU', () => {
    const answer = readBatchAnswer(Buffer.from('{"A": "$1", "B": 2, "C": null, "D": {"price": "$4"}, "E": [1]}'), 'application/json', ['A', 'B', 'C', 'D', 'E', 'F'], 100);
    expect([...answer.entries()].map(([k, v]) => [k, v instanceof Error ? 'error' : v])).toEqual([['A', '$1'], ['B', '2'], ['C', null], ['D', '$4'], ['E', 'error'], ['F', null]]);
    expect(() => readBatchAnswer(Buffer.from('$1'), 'text/plain', ['A'], 100)).toThrow(/JSON object by SKU/);
  });

  it('a batch answer over HTTP with SKUs that need encoding', async () => {
    const server = http.createServer((req, res) => {
      const list = /skus=([^&]*)/.exec(req.url ?? '')?.[1]?.split(',').map(decodeURIComponent) ?? [];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(Object.fromEntries(list.map((s) => [s, `price of ${s}`]))));
    });
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    const { source } = open(`http://127.0.0.1:${port}/p?skus={skus}`);
    expect(await Promise.all(['a,b', 'c&d', 'é'].map((s) => source.lookup(s, null)))).toEqual(['price of a,b', 'price of c&d', 'price of é']);
  });
});
