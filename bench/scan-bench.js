#!/usr/bin/env node
// @ts-check
/**
 * The HTML scanner's micro-benchmark (lib/document/scan-html.js, on the crawl's hot path):
 *
 *   node bench/scan-bench.js [--pages 3000] [--passes 5] [--rounds 5] [--baseline DIR]
 *
 * PAGES product pages of bench/origin.js (~15 KB) and their directory pages,
 * scanned as the crawler does (latin1 text). Each run is a process of its
 * own: a warm-up pass, then PASSES passes timed in CPU time (user + sys: a
 * busy machine's waits left out); it reports the median pass and a digest
 * of every result. With --baseline DIR (another checkout),
 * runs alternate between this checkout and DIR, ROUNDS each, and the digests
 * must agree. Prints the median pass and pages per CPU second per checkout.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseBenchArgs } from './lib/args.js';
import { dirPage, productPage } from './origin.js';

const USAGE = 'node bench/scan-bench.js [--pages 3000] [--passes 5] [--rounds 5] [--baseline DIR]';
const HERE = path.resolve(fileURLToPath(new URL('..', import.meta.url)));

/** @param {number[]} values */
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * One run, in this process: the scanner of `root` over the pages.
 * @param {string} root
 * @param {number} count
 * @param {number} passes
 */
async function child(root, count, passes) {
  const { scanHtml } = await import(pathToFileURL(path.join(root, 'lib/document/scan-html.js')).href);
  const pages = [];
  for (let n = 1; n <= count; n++) pages.push(productPage(n, count, 1000).toString('latin1'));
  for (let start = 1; start <= count; start += 1000) pages.push(dirPage(start, 1000, count).toString('latin1'));
  const digest = createHash('sha256');
  for (const page of pages) digest.update(JSON.stringify(scanHtml(page, 'utf-8')));
  const times = [];
  for (let pass = 0; pass < passes; pass++) {
    const started = process.cpuUsage();
    for (const page of pages) scanHtml(page, 'utf-8');
    const used = process.cpuUsage(started);
    times.push((used.user + used.system) / 1000);
  }
  process.stdout.write(JSON.stringify({ ms: median(times), pages: pages.length, digest: digest.digest('hex') }));
}

const { values } = parseBenchArgs('scan-bench', {
  pages: { type: 'string', default: '3000' },
  passes: { type: 'string', default: '5' },
  rounds: { type: 'string', default: '5' },
  baseline: { type: 'string' },
  child: { type: 'string' },
}, USAGE);
const count = Number(values.pages);
const passes = Number(values.passes);
if (values.child) {
  await child(values.child, count, passes);
} else {
  const roots = { this: HERE, ...(values.baseline ? { baseline: path.resolve(values.baseline) } : {}) };
  /** @type {Record<string, { ms: number, pages: number, digest: string }[]>} */
  const runs = Object.fromEntries(Object.keys(roots).map((name) => [name, []]));
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [name, root] of Object.entries(roots)) {
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', root, '--pages', String(count), '--passes', String(passes)]);
      runs[name].push(JSON.parse(out.toString()));
    }
  }
  const digests = new Set(Object.values(runs).flat().map((run) => run.digest));
  for (const [name, list] of Object.entries(runs)) {
    const ms = median(list.map((run) => run.ms));
    console.log(`${name}: median pass ${ms.toFixed(1)} CPU ms over ${list[0].pages} pages (${Math.round(list[0].pages / ms * 1000)} pages per CPU second); passes ${list.map((run) => run.ms.toFixed(1)).join(', ')}`);
  }
  console.log(digests.size === 1 ? 'results: identical' : 'results: DIFFER');
  process.exitCode = digests.size === 1 ? 0 : 1;
}
