#!/usr/bin/env node
// @ts-check
/**
 * Same output before and after a change (issue 38): runs the same crawls
 * with two checkouts of prerender and compares what they write, byte for byte.
 *
 *   node bench/same-output.js --a /work/wt-baseline --b /work/main [--scenario all|first|recrawl|resume|render|shared|carried] [--keep DIR]
 *
 * Each side is its checkout's bin/prerender.js, run with `node` in a
 * directory of its own. Per scenario both sides crawl the same origin
 * instance, A then B at each step, into OUTs of their own (under /dev/shm
 * when it exists, else the system's temp directory; under DIR with --keep,
 * which is then left in place). Scenarios (bench/lib/same-output/scenarios.js):
 *   first    the README's worked example on fixtures/shop.js (header naming, price slots)
 *   recrawl  a first crawl of bench/origin.js, 10 % of the products change, a re-crawl
 *            into the same OUT; without validators and with ETags (304)
 *   resume   a crawl stopped with SIGINT at a fixed page (the origin holds the next
 *            request, -c 1), then the same command with --resume
 *   render   --render of fixtures/spa-shop.js in /usr/bin/chromium
 *   shared   `crawl --frontier` plus one `prerender worker` on a real redis-server,
 *            against each other and against a single-process crawl
 *   carried  a first crawl, 10 % of the products change, then `--fresh ... forever`,
 *            then `--changed LIST --with-referrers`, into the same OUT
 *
 * Compared per OUT: the tree (sha256 of each file outside .prerender/ but the
 * manifest, with its path, sorted), prerender-manifest.json,
 * .prerender/state.ndjson, the names of the other .prerender/ files (the blob
 * store's bytes follow fetch order) and the --json summary. Normalised, and
 * nothing else (see NORMALISED in bench/lib/same-output/snapshot.js):
 *   manifest "generatedAt"; manifest pages[].renderMs; state header
 *   "finishedAt"; state "renderMs" and "fetched"; --json "durationMs" and "threads"; the
 *   OUT path. The version string is in no file compared: not normalised.
 *
 * Exit status: 0 all the same, 1 something differs (the first difference of
 * each item is shown), 2 a crawl did not run as the scenario needs.
 */
import { existsSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseBenchArgs, usageError } from './lib/args.js';
import { sideOf } from './lib/same-output/run.js';
import { SCENARIOS } from './lib/same-output/scenarios.js';
import { ITEMS, NORMALISED, NOT_NORMALISED, digestOf, firstDifference } from './lib/same-output/snapshot.js';

const USAGE = `usage: node bench/same-output.js --a DIR --b DIR [--scenario all|first|recrawl|resume|render|shared|carried] [--keep DIR]
Runs the same crawls with two checkouts of prerender (each through its own
bin/prerender.js, against the same origin) and compares the trees, manifests,
states and --json summaries byte for byte, but for run-to-run fields.
  --a DIR        the checkout of side A (the commit before the change)
  --b DIR        the checkout of side B (the change)
  --scenario S   all (default), first, recrawl, resume, render, shared or carried; repeatable
  --keep DIR     write the OUTs under DIR and leave them there
Exit status: 0 the same, 1 something differs, 2 a crawl did not run as needed.`;

const NAMES = /** @type {(keyof typeof SCENARIOS)[]} */ (Object.keys(SCENARIOS));

const { values } = parseBenchArgs('same-output', {
  a: { type: 'string' },
  b: { type: 'string' },
  scenario: { type: 'string', multiple: true },
  keep: { type: 'string' },
}, USAGE);
if (!values.a || !values.b) usageError('same-output', 'needs --a DIR and --b DIR');
const asked = (values.scenario ?? ['all']).flatMap((name) => name.split(','));
for (const name of asked) {
  if (name !== 'all' && !NAMES.includes(/** @type {keyof typeof SCENARIOS} */ (name))) usageError('same-output', `--scenario must be all or one of ${NAMES.join(', ')}, got "${name}"`);
}
const chosen = asked.includes('all') ? NAMES : NAMES.filter((name) => asked.includes(name));
/** @type {import('./lib/same-output/run.js').Side[]} */
const sides = [];
for (const [name, repo] of /** @type {const} */ ([['A', values.a], ['B', values.b]])) {
  if (!existsSync(path.join(/** @type {string} */ (repo), 'bin', 'prerender.js'))) usageError('same-output', `--${name.toLowerCase()} ${repo} has no bin/prerender.js`);
  sides.push(sideOf(name, /** @type {string} */ (repo)));
}

const base = values.keep ? path.resolve(values.keep) : existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
await mkdir(base, { recursive: true });
const dir = values.keep ? base : await mkdtemp(path.join(base, 'same-output-'));
const log = (/** @type {string} */ line) => process.stderr.write(`${line}\n`);
// Ctrl-C: the children are killed (run.js), then the OUTs go unless kept.
process.once('SIGINT', () => process.exit(130));
process.once('exit', () => { if (!values.keep) rmSync(dir, { recursive: true, force: true }); });

log(`A: ${sides[0].repo} (prerender ${sides[0].version})`);
log(`B: ${sides[1].repo} (prerender ${sides[1].version})`);
log(`OUTs under ${dir}${values.keep ? ' (kept)' : ''}`);
log('normalised, and nothing else:');
for (const field of NORMALISED) log(`  - ${field}`);
log(`(${NOT_NORMALISED})`);

/** @type {string[][]} */
const rows = [];
/** @type {string[]} */
const differences = [];
/** @type {string[]} */
const broken = [];
for (const name of chosen) {
  log(`\n${name}: running`);
  const started = Date.now();
  try {
    const comparisons = await SCENARIOS[name]({ sides, dir, log });
    for (const comparison of comparisons) compare(comparison);
  } catch (error) {
    broken.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    rows.push([name, '(did not run)', '', '', 'ERROR']);
  }
  log(`${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

printTable(['scenario', 'item', 'A', 'B', 'same?'], rows);
for (const line of differences) process.stdout.write(`${line}\n`);
for (const line of broken) process.stdout.write(`\nERROR ${line}\n`);
process.exitCode = broken.length > 0 ? 2 : differences.length > 0 ? 1 : 0;

/**
 * One row per item of a comparison, and the first difference of each that differs.
 * @param {import('./lib/same-output/scenarios.js').Comparison} comparison
 */
function compare({ label, left, right, a, b, items = ITEMS }) {
  for (const item of items) {
    const key = /** @type {(typeof ITEMS)[number]} */ (item);
    const [digestA, digestB] = [digestOf(a[key]), digestOf(b[key])];
    const difference = firstDifference(a[key], b[key]);
    const column = (/** @type {string} */ side, /** @type {string} */ digest) => `${side === 'A' || side === 'B' ? '' : `${side}: `}${digest.slice(0, 16)}`;
    rows.push([label, item, column(left, digestA), column(right, digestB), difference === null ? 'same' : 'DIFFERS']);
    if (difference !== null) differences.push(`\n${label} / ${item} (${left} vs ${right}): ${difference}`);
  }
}

/**
 * @param {string[]} header
 * @param {string[][]} body
 */
function printTable(header, body) {
  const widths = header.map((title, i) => Math.max(title.length, ...body.map((row) => (row[i] ?? '').length)));
  const line = (/** @type {string[]} */ cells) => `| ${cells.map((cell, i) => (cell ?? '').padEnd(widths[i])).join(' | ')} |`;
  process.stdout.write(`\n${line(header)}\n|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|\n`);
  for (const row of body) process.stdout.write(`${line(row)}\n`);
}
