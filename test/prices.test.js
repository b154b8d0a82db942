// @ts-check
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FilePriceSource, HttpPriceSource, TtlCache, normalizeZip, parsePriceFile, classifyPriceSpec } from '../lib/prices/index.js';
import { parseCsv } from '../lib/prices/parse.js';
import { encodePriceText, isUtf8Type } from '../lib/serve/escape.js';
import { readCookie, zipFromRequest } from '../lib/serve/request-zip.js';
import { startPriceEndpoint } from '../fixtures/price-endpoint.js';
import { closeServer, listen, nextEvent, waitFor } from '../fixtures/serve/http.js';

describe('zip plausibility', () => {
  it.each([
    ['12345', '12345'],
    [' 1234 ab ', '1234 AB'],
    ['SW1A 1AA', 'SW1A 1AA'],
    ['k1a-0b1', 'K1A-0B1'],
    ['123', '123'],
    ['1234567890', '1234567890'],
  ])('accepts %j as %j', (input, expected) => expect(normalizeZip(input)).toBe(expected));

  it.each(['', '12', '12345678901', '-1234', '1234-', '12<34', '12"34', "12'34", '12;34', '123\n45', 'ñ1234', null, 12345, '1'.repeat(40)])(
    'rejects %j',
    (input) => expect(normalizeZip(input)).toBe(null),
  );
});

describe('zip from the request', () => {
  const names = { zipParam: 'zip', zipCookie: 'zip' };
  it.each([
    ['/p?zip=10001', undefined, '10001'],
    ['/p?a=1&zip=1234+ab', undefined, '1234 AB'],
    ['/p?zip=<x>', 'zip=90210', '90210'],
    ['/p', 'other=1; zip=90210', '90210'],
    ['/p', 'zipx=1; xzip=2; zip="10001"', '10001'],
    ['/p', 'zip=1234%20AB', '1234 AB'],
    ['/p', 'zip=%E0%A4%A', null],
    ['/p', 'zip', null],
    ['/p', '', null],
    ['/p?zip=', 'zip=;', null],
  ])('%s with cookie %j -> %j', (url, cookie, expected) => {
    expect(zipFromRequest(url, cookie, names)).toBe(expected);
  });

  it('reads the first cookie of that name', () => {
    expect(readCookie('a=1; zip=2; zip=3', 'zip')).toBe('2');
    expect(readCookie('a=1;zip=2', 'zip')).toBe('2');
    expect(readCookie('a=1', 'zip')).toBe(null);
  });
});

describe('price text encoding', () => {
  it('escapes HTML and makes non-ASCII safe for non-UTF-8 pages', () => {
    expect(encodePriceText(`<a href="x">'&'</a>`, false).toString()).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    expect(encodePriceText('12,50 €', true).toString('latin1')).toBe('12,50 &#8364;');
    expect(encodePriceText('12,50 €', false).toString('utf8')).toBe('12,50 €');
    expect(encodePriceText('😀', true).toString('latin1')).toBe('&#128512;');
    expect(isUtf8Type('text/html; charset=UTF-8')).toBe(true);
    expect(isUtf8Type('text/html; charset="utf8"')).toBe(true);
    expect(isUtf8Type('text/html; charset=windows-1252')).toBe(false);
    expect(isUtf8Type('text/html')).toBe(false);
  });
});

describe('price files', () => {
  it('parses JSON', () => {
    const table = parsePriceFile('\ufeff{"A": {"10001": "$1", "*": 2}}', 'json');
    expect(table.get('A')?.get('10001')).toBe('$1');
    expect(table.get('A')?.get('*')).toBe('2');
  });

  it.each([
    ['[1]', /top level/],
    ['{"A": "x"}', /expected an object/],
    ['{"A": {"<x>": "1"}}', /not a plausible zip/],
    ['{"A": {"10001": null}}', /price must be text/],
    ['{"A": {"10001": "' + 'x'.repeat(2000) + '"}}', /more than the 1024 allowed/],
    ['{"A": ', /JSON|Unexpected/],
  ])('rejects JSON %#', (text, message) => {
    expect(() => parsePriceFile(text, 'json')).toThrow(message);
  });

  it('parses CSV with a header, quotes, CRLF and blank lines', () => {
    const table = parsePriceFile('sku,zip,price\r\nA,10001,"$1,000.00"\r\n\r\nA,*,"say ""hi"""\nB,1234 ab,3\n', 'csv');
    expect(table.get('A')?.get('10001')).toBe('$1,000.00');
    expect(table.get('A')?.get('*')).toBe('say "hi"');
    expect(table.get('B')?.get('1234 AB')).toBe('3');
  });

  it.each([
    ['A,10001\n', /line 1: expected 3 fields/],
    ['sku,zip,price\nA,10001,1\nA,1,2\n', /line 3/],
    ['A,10001,"open\n', /unterminated/],
    ['A,10001,x"y\n', /stray quote/],
  ])('rejects CSV %j', (text, message) => {
    expect(() => parsePriceFile(text, 'csv')).toThrow(message);
  });

  it('CSV fields may hold newlines inside quotes', () => {
    expect(parseCsv('a,"b\nc",d\ne,f,g')).toEqual([
      { fields: ['a', 'b\nc', 'd'], line: 1 },
      { fields: ['e', 'f', 'g'], line: 3 },
    ]);
  });

  it('classifies --prices values', () => {
    expect(classifyPriceSpec('p.json').kind).toBe('file');
    expect(classifyPriceSpec('P.CSV').kind).toBe('file');
    expect(classifyPriceSpec('https://shop/p?sku={sku}').kind).toBe('http');
    expect(classifyPriceSpec('p.xml').kind).toBe('invalid');
  });
});

describe('FilePriceSource', () => {
  /** @type {string} */
  let dir;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-prices-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('looks up zip, then default, then null; reloads on change; keeps good prices on a broken file', async () => {
    const file = path.join(dir, 'p.json');
    fs.writeFileSync(file, JSON.stringify({ A: { '10001': '1', '*': 'd' } }));
    /** @type {string[]} */
    const warnings = [];
    const source = new FilePriceSource(file, { pollIntervalMs: 50, logger: { warn: (m) => warnings.push(m) } });
    try {
      expect(source.lookup('A', '10001')).toBe('1');
      expect(source.lookup('A', '99999')).toBe('d');
      expect(source.lookup('A', null)).toBe('d');
      expect(source.lookup('B', '10001')).toBe(null);

      const reloaded = nextEvent(source, 'reload');
      fs.writeFileSync(`${file}.new`, JSON.stringify({ A: { '10001': '2' } }));
      fs.renameSync(`${file}.new`, file);
      await reloaded;
      expect(source.lookup('A', '10001')).toBe('2');
      expect(source.lookup('A', null)).toBe(null);

      // Written in place (not renamed): still noticed.
      const failed = nextEvent(source, 'reload-error');
      fs.writeFileSync(file, '{ nope');
      await failed;
      expect(source.lookup('A', '10001')).toBe('2');
      expect(warnings.join('\n')).toMatch(/could not reload .*p\.json: .*keeping the prices loaded at/);

      const deleted = nextEvent(source, 'reload-error');
      fs.rmSync(file);
      await deleted;
      expect(source.lookup('A', '10001')).toBe('2');
    } finally {
      await source.close();
    }
  });
});

describe('TtlCache', () => {
  it('expires, serves stale within the grace period, and evicts the least recently used', () => {
    let now = 1000;
    const cache = new TtlCache({ max: 2, now: () => now });
    cache.set('a', 1, 100, 50);
    cache.set('b', 2, 100);
    expect(cache.get('a')).toEqual({ value: 1, stale: false });
    cache.set('c', 3, 100); // evicts b (a was used more recently)
    expect(cache.get('b')).toBeUndefined();
    now += 120;
    expect(cache.get('a')).toEqual({ value: 1, stale: true });
    expect(cache.get('c')).toBeUndefined();
    now += 100;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});

describe('HttpPriceSource', () => {
  /** @type {(() => Promise<unknown>)[]} */
  let cleanups = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups = [];
  });
  /** @param {ConstructorParameters<typeof HttpPriceSource>[1]} options @param {string} template */
  function open(template, options = {}) {
    // 10 s unless a test sets it: the default 300 ms is too short for a busy machine's first answer.
    const source = new HttpPriceSource(template, { logger: { warn: () => {} }, timeoutMs: 10_000, ...options });
    cleanups.push(() => source.close());
    return source;
  }
  const PRICES = { A: { '10001': '$1', '*': '$9' }, B: { '*': '{"not": "json"}' } };

  it('answers from the cache synchronously after the first lookup', async () => {
    const endpoint = await startPriceEndpoint({ prices: PRICES });
    cleanups.push(() => endpoint.close());
    const source = open(endpoint.template);
    const first = source.lookup('A', '10001');
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBe('$1');
    expect(source.lookup('A', '10001')).toBe('$1');
    expect(await source.lookup('A', null)).toBe('$9');
    expect(await source.lookup('missing', '10001')).toBe(null);
    expect(source.lookup('missing', '10001')).toBe(null); // negative answer cached
    expect(endpoint.hits.urls).toEqual(['/price.asp?sku=A&zip=10001', '/price.asp?sku=A&zip=', '/price.asp?sku=missing&zip=10001']);
  });

  it('encodes SKU and zip into the URL', async () => {
    const endpoint = await startPriceEndpoint({ prices: { 'a&b=c/d': { '1234 AB': 'ok' } } });
    cleanups.push(() => endpoint.close());
    const source = open(endpoint.template);
    expect(await source.lookup('a&b=c/d', '1234 AB')).toBe('ok');
    expect(endpoint.hits.urls[0]).toBe('/price.asp?sku=a%26b%3Dc%2Fd&zip=1234%20AB');
  });

  it('coalesces identical lookups in flight', async () => {
    const endpoint = await startPriceEndpoint({ prices: PRICES });
    cleanups.push(() => endpoint.close());
    endpoint.setMode('slow');
    const source = open(endpoint.template, { timeoutMs: 5000 });
    const all = Array.from({ length: 20 }, () => source.lookup('A', '10001'));
    const other = source.lookup('A', '90210');
    await waitFor(() => endpoint.hits.total === 2, { what: 'two requests' });
    endpoint.setMode('ok');
    endpoint.releaseHeld();
    expect(new Set(await Promise.all(all))).toEqual(new Set(['$1']));
    expect(await other).toBe('$9');
    expect(endpoint.hits.total).toBe(2);
    expect(source.stats.coalesced).toBe(19);
  });

  it('an endpoint that hangs: the lookups queued behind the first requests get the fallback when those time out, not one timeout later', async () => {
    const endpoint = await startPriceEndpoint({ prices: PRICES });
    cleanups.push(() => endpoint.close());
    endpoint.setMode('slow'); // accepts and never answers
    const source = open(endpoint.template, { timeoutMs: 1000, connections: 8, breakerThreshold: 5 });
    const started = performance.now();
    const times = await Promise.all(Array.from({ length: 40 }, (_, i) => Promise.resolve(source.lookup(`S${i}`, '10001')).then((price) => {
      expect(price).toBe(null);
      return performance.now() - started;
    })));
    // The 8 sent time out together; their failures open the circuit before anything else is sent.
    expect(endpoint.hits.total).toBe(8);
    // All settle together, once the first 8 time out: a second timeout would end a whole timeout (1 s) after the
    // first ones. Measured between the lookups, so that a busy machine's late timers shift both ends.
    expect(Math.max(...times) - Math.min(...times)).toBeLessThan(900);
  });

  it('gives up after the timeout with null, never rejecting', async () => {
    const endpoint = await startPriceEndpoint({ prices: PRICES });
    cleanups.push(() => endpoint.close());
    endpoint.setMode('slow');
    const source = open(endpoint.template, { timeoutMs: 80 });
    expect(await source.lookup('A', '10001')).toBe(null);
    expect(source.stats.timeouts).toBe(1);
  });

  it.each([
    ['500', (/** @type {http.ServerResponse} */ res) => { res.writeHead(500); res.end('boom'); }],
    ['reset', (/** @type {http.ServerResponse} */ res) => res.destroy()],
    ['a huge body', (/** @type {http.ServerResponse} */ res) => { res.writeHead(200); res.end('9'.repeat(100_000)); }],
    ['a too-long price', (/** @type {http.ServerResponse} */ res) => { res.writeHead(200); res.end('9'.repeat(2000)); }],
    ['bad JSON', (/** @type {http.ServerResponse} */ res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"price": '); }],
    ['JSON without text price', (/** @type {http.ServerResponse} */ res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"price": {"a": 1}}'); }],
    ['a redirect', (/** @type {http.ServerResponse} */ res) => { res.writeHead(302, { location: 'http://example.com/' }); res.end(); }],
  ])('answers null when the endpoint gives %s', async (_label, handler) => {
    const server = http.createServer((_req, res) => handler(res));
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    /** @type {string[]} */
    const warnings = [];
    const source = open(`http://127.0.0.1:${port}/p?sku={sku}`, { logger: { warn: (m) => warnings.push(m) } });
    expect(await source.lookup('A', '10001')).toBe(null);
    expect(warnings).toHaveLength(1);
  });

  it('reads numbers and JSON answers, and an empty answer is "no price"', async () => {
    const answers = { '/p?sku=n': '{"price": 12.5}', '/p?sku=e': '', '/p?sku=j': '{"price": " $3 "}', '/p?sku=null': '{"price": null}' };
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(answers[/** @type {keyof typeof answers} */ (req.url)]);
    });
    const port = await listen(server);
    cleanups.push(() => closeServer(server));
    const source = open(`http://127.0.0.1:${port}/p?sku={sku}`);
    expect(await source.lookup('n', null)).toBe('12.5');
    expect(await source.lookup('e', null)).toBe(null);
    expect(await source.lookup('j', null)).toBe('$3');
    expect(await source.lookup('null', null)).toBe(null);
  });

  it('opens a breaker after repeated failures, then answers at once with one probe at a time', async () => {
    let now = 0;
    const endpoint = await startPriceEndpoint({ prices: PRICES });
    cleanups.push(() => endpoint.close());
    endpoint.setMode('error');
    const source = open(endpoint.template, { breakerThreshold: 3, breakerCooldownMs: 1000, negativeTtlMs: 0, now: () => now });
    for (let i = 0; i < 3; i++) expect(await source.lookup(`S${i}`, null)).toBe(null);
    expect(endpoint.hits.total).toBe(3);
    endpoint.setMode('slow');
    expect(source.lookup('P', null)).toBe(null); // open: no price, at once
    expect(endpoint.hits.total).toBe(3);
    now += 1000; // cooldown over: half-open
    const probe = source.lookup('P', null); // the one probe
    expect(source.lookup('Q', null)).toBe(null); // short-circuited at once while the probe is out
    expect(await source.lookup('Q', null)).toBe(null); // short-circuited while the probe runs
    expect(source.stats.shortCircuited).toBeGreaterThan(0);
    await waitFor(() => endpoint.hits.total === 4, { what: 'the probe' });
    endpoint.setMode('ok');
    endpoint.releaseHeld();
    expect(await probe).toBe(null); // "P" is unknown: 404, a success that closes the breaker
    now += 10;
    expect(await source.lookup('A', '10001')).toBe('$1');
  });

  it('serves a stale answer while refreshing it in the background', async () => {
    let now = 0;
    const prices = { A: { '*': '$1' } };
    const endpoint = await startPriceEndpoint({ prices });
    cleanups.push(() => endpoint.close());
    const source = open(endpoint.template, { ttlMs: 100, staleMs: 1000, now: () => now });
    expect(await source.lookup('A', null)).toBe('$1');
    prices.A['*'] = '$2';
    now += 150;
    expect(source.lookup('A', null)).toBe('$1'); // stale, refresh started
    await waitFor(() => source.lookup('A', null) === '$2', { what: 'the refresh' });
    expect(endpoint.hits.total).toBe(2);
  });

  it('refreshes stale answers in the background at most `connections` at a time', async () => {
    let now = 0;
    const endpoint = await startPriceEndpoint({ prices: { A: { '*': '$1' }, B: { '*': '$2' }, C: { '*': '$3' }, D: { '*': '$4' } } });
    cleanups.push(() => endpoint.close());
    const source = open(endpoint.template, { ttlMs: 100, staleMs: 10_000, connections: 2, timeoutMs: 5000, now: () => now });
    for (const sku of ['A', 'B', 'C', 'D']) expect(await source.lookup(sku, null)).toMatch(/^\$/);
    endpoint.setMode('slow');
    now += 200;
    for (const sku of ['A', 'B', 'C', 'D']) expect(source.lookup(sku, null)).toMatch(/^\$/); // stale, served at once
    expect(source.stats.requests).toBe(6); // 4 first answers + 2 refreshes, not 4
    await waitFor(() => endpoint.hits.total === 6, { what: 'two refreshes' });
    expect(source.stats.stale).toBe(4);
    endpoint.setMode('ok');
    endpoint.releaseHeld();
    await waitFor(() => source.lookup('A', null) === '$1' && source.stats.hits > 4, { what: 'a fresh answer' });
    expect(endpoint.hits.total).toBeLessThanOrEqual(8);
  });

  it('rejects templates without {sku} or with other schemes', () => {
    expect(() => new HttpPriceSource('http://x/p')).toThrow(/\{sku\}/);
    expect(() => new HttpPriceSource('file:///p?{sku}')).toThrow(/http/);
  });
});
