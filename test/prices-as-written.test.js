// @ts-check
/**
 * Prices are text to show: a JSON number is shown as it is written (README,
 * "Prices": "numbers are accepted and shown as written"), in a price file and
 * in an endpoint's JSON answer. And a price file that cannot be used is
 * reported with a typed error and a stable code.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FilePriceSource, HttpPriceSource, InvalidPriceAnswerError, PriceFileError, parsePriceFile } from '../lib/prices/index.js';
import * as api from '../lib/index.js';
import { readBatchAnswer, readSingleAnswer } from '../lib/prices/answer.js';
import { parseJsonNumbersAsText } from '../lib/prices/parse.js';
import { PrerenderError } from '../lib/errors.js';
import { createPriceFilter } from '../lib/serve/index.js';
import { buildServeTree } from '../fixtures/serve/tree.js';
import { closeServer, listen, nextEvent, request } from '../fixtures/serve/http.js';

/** @type {string} */
let dir;
/** @type {(() => Promise<unknown>)[]} */
let cleanups;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-prices-'));
  cleanups = [];
});
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  fs.rmSync(dir, { recursive: true, force: true });
});

const WRITTEN = ['12.50', '1e21', '12345678901234567890', '0.10', '-0', '1E+2'];

describe('JSON numbers shown as written', () => {
  it('in a price file', () => {
    const zips = ['10001', '10002', '10003', '10004', '10005', '10006'];
    const text = `{ "SKU-1": { ${WRITTEN.map((n, i) => `"${zips[i]}": ${n}`).join(', ')}, "*": "$1" } }`;
    const table = parsePriceFile(text, 'json');
    expect(zips.map((zip) => table.get('SKU-1')?.get(zip))).toEqual(WRITTEN);
    expect(table.get('SKU-1')?.get('*')).toBe('$1');
  });

  it('in an endpoint answer, one SKU or a batch', () => {
    expect(readSingleAnswer(Buffer.from('{"price": 12.50}'), 'application/json', 1024)).toBe('12.50');
    const batch = readBatchAnswer(Buffer.from('{"A": 12.50, "B": {"price": 123456789012345678901234567890}, "C": "7.00", "D": true}'), 'application/json', ['A', 'B', 'C', 'D'], 1024);
    expect(batch.get('A')).toBe('12.50');
    expect(batch.get('B')).toBe('123456789012345678901234567890');
    expect(batch.get('C')).toBe('7.00');
    expect(batch.get('D')).toBeInstanceOf(Error); // one bad value fails only its SKU
  });

  it('leaves strings alone, whatever they hold, and keeps JSON.parse errors as they were', () => {
    expect(parseJsonNumbersAsText('{"a":"x\\"1","b":[1,-2.5e3,"\\\\",3],"\\u00221":0}')).toEqual({ a: 'x"1', b: ['1', '-2.5e3', '\\', '3'], '"1': '0' });
    expect(parseJsonNumbersAsText('{"a":"12.50"}')).toEqual({ a: '12.50' });
    for (const bad of ['{"a":01}', '{"a":1.}', '{"a": 1', '{"a":"x']) {
      let expected;
      try {
        JSON.parse(bad);
      } catch (error) {
        expected = /** @type {Error} */ (error).message;
      }
      expect(() => parseJsonNumbersAsText(bad)).toThrow(expected);
    }
  });

  it('on the served page, from a JSON file and from an endpoint', async () => {
    buildServeTree(path.join(dir, 'out'));
    fs.writeFileSync(path.join(dir, 'prices.json'), '{ "SKU-1": { "*": 12.50 } }');
    const endpoint = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{ "price": 9.90 }');
    });
    const endpointPort = await listen(endpoint);
    cleanups.push(() => closeServer(endpoint));
    for (const [prices, expected] of [[path.join(dir, 'prices.json'), '12.50'], [`http://127.0.0.1:${endpointPort}/p?sku={sku}`, '9.90']]) {
      const filter = createPriceFilter({ root: path.join(dir, 'out'), prices, watch: false, logger: { warn: () => {} } });
      const server = http.createServer((req, res) => filter(req, res));
      const port = await listen(server);
      const html = (await request(port, '/st/product1.htm')).text;
      await closeServer(server);
      await filter.close();
      expect(/<span class="amount">([^<]*)<\/span>/.exec(html)?.[1]).toBe(expected);
    }
  });

  it('the HTTP source caches the text as written', async () => {
    const endpoint = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{ "A": 3.10, "B": 20 }');
    });
    const port = await listen(endpoint);
    cleanups.push(() => closeServer(endpoint));
    const source = new HttpPriceSource(`http://127.0.0.1:${port}/p?skus={skus}`, { logger: { warn: () => {} } });
    cleanups.push(() => source.close());
    expect(await Promise.all([source.lookup('A', null), source.lookup('B', null)])).toEqual(['3.10', '20']);
    expect(source.lookup('A', null)).toBe('3.10');
  });
});

describe('a price file that cannot be used', () => {
  it('both error classes are exported from the package, for instanceof', () => {
    expect(api.PriceFileError).toBe(PriceFileError);
    expect(api.InvalidPriceAnswerError).toBe(InvalidPriceAnswerError);
  });

  it.each([
    ['json', '{ nope'],
    ['json', '{ "A": { "<bad>": "1" } }'],
    ['csv', 'sku,zip,price\nA,10001\n'],
  ])('is a PriceFileError with code PRICE_FILE_INVALID (%s: %j)', (format, text) => {
    const parse = () => parsePriceFile(text, /** @type {'json' | 'csv'} */ (format));
    expect(parse).toThrow(PriceFileError);
    try {
      parse();
    } catch (error) {
      expect(error).toBeInstanceOf(PrerenderError);
      expect(/** @type {PrerenderError} */ (error).code).toBe('PRICE_FILE_INVALID');
    }
  });

  it('reaches reload-error with its code, and the last good prices stay', async () => {
    const file = path.join(dir, 'p.csv');
    fs.writeFileSync(file, 'A,*,$1\n');
    const source = new FilePriceSource(file, { watch: false, logger: { warn: () => {} } });
    cleanups.push(() => source.close());
    const failed = nextEvent(source, 'reload-error');
    fs.writeFileSync(file, 'A,<bad>,$2\n');
    await source.check();
    const [error] = await failed;
    expect(error).toBeInstanceOf(PriceFileError);
    expect(error.code).toBe('PRICE_FILE_INVALID');
    expect(error.message).toMatch(/line 1: zip "<bad>" is not a plausible zip code/);
    expect(source.lookup('A', null)).toBe('$1');
  });
});
