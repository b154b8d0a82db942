// @ts-check
/**
 * The shipped type declarations (generated from lib/'s JSDoc, as `prepack`
 * does) accept the serve API as the README uses it: a TypeScript program
 * that passes non-default option values, a custom price source and reads
 * the results compiles under strict.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

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
    execFileSync(process.execPath, [TSC, '-p', 'tsconfig.types.json', '--outDir', path.join(dir, 'types')], { cwd: ROOT, stdio: 'pipe' });
    fs.writeFileSync(path.join(dir, 'consumer.ts'), CONSUMER);
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022',
        // The declarations import undici, lru-cache...: not resolvable from a temporary directory, and not what is tested.
        skipLibCheck: true, types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')],
      },
      files: ['consumer.ts'],
    }));
    let output = '';
    try {
      execFileSync(process.execPath, [TSC, '-p', dir], { stdio: 'pipe', encoding: 'utf8' });
    } catch (error) {
      output = String(/** @type {{ stdout?: string }} */ (error).stdout ?? error);
    }
    expect(output).toBe('');
  }, 60_000);
});
