// @ts-check
/**
 * The shipped type declarations (generated from lib/'s JSDoc, as `prepack`
 * does) accept the serve API as the README uses it: a TypeScript program
 * that passes non-default option values, a custom price source and reads
 * the results compiles under strict.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileAgainstTypes } from './helpers/types.js';


/** A consumer of the declarations, as the README's middleware and API sections use them. */
const CONSUMER = `
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

/** @type {string} */
let dir;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-types-'));
});
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('type declarations of the serve API', () => {
  it('accept the options and results the README documents', () => {
    const output = compileAgainstTypes(dir, 'consumer.ts', CONSUMER);
    expect(output).toBe('');
  }, 60_000);
});
