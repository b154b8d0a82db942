#!/usr/bin/env node
// @ts-check
/**
 * `prerender capacity` against bench/serve-bench.js, on serve-bench's tree:
 *
 *   node bench/capacity-bench.js [--rounds 3] [--duration 3] [--steps 1000,2000,4000,8000,16000]
 *
 * Each round, interleaved: serve-bench (prerender serve only, one round of
 * --duration s at 32 connections, no prices part), then `prerender capacity`
 * on the same tree and price file, every operation static (filled product
 * pages, plain pages), think time 1 s, --max-rps 20000. Its origin is a
 * second `prerender serve` of the tree, so both its tiers measure serve.
 * Prints, medians of the rounds: CPU per request of serve by each tool, the
 * operations/s each reached, and what `prerender capacity` itself spent per
 * request (its own process: the load generator).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { checkNumbers, parseBenchArgs } from './lib/args.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
const USAGE = `usage: node bench/capacity-bench.js [--rounds 3] [--duration 3] [--steps 1000,2000,4000,8000,16000]
prerender capacity against serve-bench on serve-bench's tree (run serve-bench once
first: it builds bench/results/serve-tree-2000-v2), rounds interleaved, medians.
  --rounds N     rounds (default 3)
  --duration S   seconds of each serve-bench run, capacity step and cost run (default 3)
  --steps LIST   shoppers of capacity's steps, at 1 s think time (default 1000,2000,4000,8000,16000)`;
const { values } = parseBenchArgs('capacity-bench', {
  rounds: { type: 'string', default: '3' },
  duration: { type: 'string', default: '3' },
  steps: { type: 'string', default: '1000,2000,4000,8000,16000' },
}, USAGE);
checkNumbers('capacity-bench', values, ['rounds', 'duration'], ['steps']);
const TREE = path.join(HERE, 'results', 'serve-tree-2000-v2');
const PRICES = path.join(HERE, 'results', 'serve-prices-2000.json');

/**
 * A child's stdout and stderr, once it exits.
 * @param {string[]} args
 */
function runNode(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** serve-bench, prerender only: its medians for filled and plain pages. */
async function serveBench() {
  const { stderr } = /** @type {{ stderr: string }} */ (await runNode(['bench/serve-bench.js', '--servers', 'prerender', '--rounds', '1', '--duration', String(values.duration), '--warmup', '1', '--skip-prices']));
  const file = /wrote (\S+\.json)/.exec(stderr)?.[1];
  if (!file) throw new Error(`serve-bench wrote no results:\n${stderr.slice(-2000)}`);
  const { medians } = JSON.parse(readFileSync(path.join(REPO, file), 'utf8')).speed;
  return { filled: medians.filled.prerender, plain: medians.plain.prerender };
}

/** A `prerender serve` of the tree as the "origin", its pid read. */
async function startOriginServe() {
  const child = spawn(process.execPath, ['bench/serve-servers.js', 'prerender', TREE, PRICES], { cwd: REPO, stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise((resolve) => {
    createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) }).on('line', (line) => {
      const m = /^listening on (\S+)/.exec(line);
      if (m) resolve(m[1]);
    });
  });
  return { url, pid: child.pid, stop: () => new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGTERM'); }) };
}

/** @param {string} dir */
async function capacity(dir) {
  const profile = path.join(dir, 'profile.json');
  await writeFile(profile, JSON.stringify({
    name: 'serve-bench tree', thinkTime: '1s',
    operations: [{ name: 'filled product page', weight: 1, pages: ['/st/'] }, { name: 'plain page', weight: 1, pages: ['/info/'] }],
  }));
  const origin = await startOriginServe();
  try {
    const d = `${values.duration}s`;
    const { stdout, stderr } = /** @type {{ stdout: string, stderr: string }} */ (await runNode(['bin/prerender.js', 'capacity', TREE, '--origin', origin.url, '--origin-pid', String(origin.pid),
      '--profile', profile, '--prices', PRICES, '--steps', String(values.steps), '--step-duration', d, '--operation-duration', d, '--max-rps', '20000', '--json']));
    const result = JSON.parse(stdout.split('\n').find((line) => line.startsWith('{')) ?? '{}');
    if (!result.tiers) throw new Error(`capacity failed:\n${stderr.slice(-2000)}`);
    return result;
  } finally {
    await origin.stop();
  }
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** @param {any[]} steps the most operations/s of a tier's steps within the target */
const bestRps = (steps) => Math.max(0, ...steps.filter((s) => s.over.length === 0).map((s) => s.rps));

async function main() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-capacity-bench-'));
  /** @type {Record<string, number[]>} */
  const runs = {};
  const add = (/** @type {string} */ key, /** @type {number} */ value) => { (runs[key] ??= []).push(value); };
  try {
    for (let round = 1; round <= Number(values.rounds); round++) {
      const bench = await serveBench();
      add('serve-bench filled µs', bench.filled.cpuUsPerRequest);
      add('serve-bench plain µs', bench.plain.cpuUsPerRequest);
      add('serve-bench filled req/s', bench.filled.rps);
      add('serve-bench plain req/s', bench.plain.rps);
      const result = await capacity(dir);
      for (const [tier, label] of [['static', 'capacity static tier'], ['dynamic', 'capacity origin tier']]) {
        for (const op of result.operations) {
          const figures = op[tier];
          if (!figures) continue;
          add(`${label} ${op.name.startsWith('filled') ? 'filled' : 'plain'} µs`, 1000 * figures.cpuMsPerRequest);
          add(`${label} ${op.name.startsWith('filled') ? 'filled' : 'plain'} cost-run req/s`, figures.rps);
        }
        add(`${label} steps: most ops/s within p95 500 ms`, bestRps(result.tiers[tier].steps));
      }
      add('capacity itself: CPU µs per request', 1000 * result.loadGenerator.cpuMsPerRequest);
      add('capacity itself: requests', result.loadGenerator.requests);
      add('load average', os.loadavg()[0]);
      process.stderr.write(`round ${round}: ${JSON.stringify(Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, Math.round(v[v.length - 1])])))}\n`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const lines = ['| figure | median | rounds |', '| --- | ---: | --- |'];
  for (const [key, list] of Object.entries(runs)) lines.push(`| ${key} | ${Math.round(median(list)).toLocaleString('en')} | ${list.map((x) => Math.round(x).toLocaleString('en')).join(' / ')} |`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error) => {
  process.stderr.write(`capacity-bench: ${error.stack ?? error}\n`);
  process.exitCode = 2;
});
