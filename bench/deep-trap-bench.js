#!/usr/bin/env node
// @ts-check
/**
 * The deep-path trap (FAULTS.md): every /deep/a/…/ page links "a/", one level
 * deeper. Crawls n pages of it with --max-depth raised out of the way and
 * prints the time, to show that it grows linearly with the pages.
 *
 *   node bench/deep-trap-bench.js [1000,2000,4000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHostile } from '../fixtures/hostile.js';
import { crawl } from '../lib/index.js';
import { parseBenchArgs, usageError } from './lib/args.js';

const USAGE = `usage: node bench/deep-trap-bench.js [1000,2000,4000]
The deep-path trap (FAULTS.md): every /deep/a/…/ page links "a/", one level
deeper. Crawls n pages of it, for each n of the comma-separated list
(default 1000,2000,4000), with --max-depth raised out of the way and prints
the time, to show that it grows linearly with the pages.`;

const { positionals } = parseBenchArgs('deep-trap-bench', {}, USAGE, { allowPositionals: true });
const sizes = (positionals[0] ?? '1000,2000,4000').split(',').map(Number);
if (!sizes.every((n) => Number.isSafeInteger(n) && n >= 1)) usageError('deep-trap-bench', `the page counts must be positive whole numbers separated by commas, got ${JSON.stringify(positionals[0])}`);
const origin = await startHostile();
try {
  for (const pages of sizes) {
    const out = mkdtempSync(path.join(os.tmpdir(), 'prerender-deep-'));
    const started = performance.now();
    const result = await crawl({ roots: [origin.url('/deep/')], out, maxPages: pages, maxDepth: pages + 10, retries: 0 });
    const seconds = (performance.now() - started) / 1000;
    process.stdout.write(`${pages} pages: ${result.pages} written, ${result.failed} failed, ${seconds.toFixed(2)} s (${((seconds / pages) * 1000).toFixed(2)} ms/page)\n`);
    rmSync(out, { recursive: true, force: true, maxRetries: 2 });
  }
} finally {
  await origin.close();
}
