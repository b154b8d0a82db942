#!/usr/bin/env node
// @ts-check
/**
 * The rendered crawl benchmark: the shop of bench/spa-origin.js (every page
 * an empty shell whose script fetches JSON and builds the links and price
 * slots), crawled with --render:
 *
 *   node bench/render-bench.js [--products 2000] [--count 100]
 *       [--concurrency 1,2,4,8,16] [--wait networkidle,selector] [--isolation slot] [--reps 1] [--recycle 200] [--timeout 30000]
 *
 * For each repetition, each wait, each --render-concurrency and each
 * --render-isolation (interleaved, in that order), it runs
 *   node bin/prerender.js crawl ORIGIN/st/dir.asp -i /st/dir.asp /st/product.asp -o TMP
 *       --render --render-concurrency N --render-wait W --render-isolation I --quiet --json
 * and measures: wall time (spawn to exit) and pages/s; CPU of the crawler
 * and every browser process it started (user + sys of every process seen
 * in its tree, sampled every 250 ms by TreeSampler of bench/lib/proc.js, or
 * the cutime + cstime of a shell that ran it if larger: Chromium's renderer
 * processes are often not waited for by a process of the tree, so cutime
 * alone missed about half), and of the node process alone (its getrusage,
 * written at exit by bench/lib/rusage.js); the busy CPU time of the whole
 * machine over the run, per page (origin and this script included: a
 * cross-check on an idle machine); peak RSS of the whole process tree (node +
 * Chromium, summed VmRSS, every 250 ms) and summed Pss, which counts shared
 * pages once (every 2 s: reading it costs CPU). The origin runs in its own
 * process and is not counted in the tree. Then it checks the
 * tree (every page rendered, product pages with their placeholder and
 * relative links) and prints one line per run and a table of medians.
 *
 * Exit status: 0 every run produced a complete tree, 1 otherwise.
 */
import { spawn } from 'node:child_process';
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { checkNumbers, parseBenchArgs } from './lib/args.js';
import { TreeSampler, clockTicks, machineBusyMs } from './lib/proc.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
const BIN = path.join(REPO, 'bin/prerender.js');
const WAITS = /** @type {Record<string, string>} */ ({ networkidle: 'networkidle', selector: 'selector:[data-ready]' });

const USAGE = `usage: node bench/render-bench.js [--products 2000] [--count 100]
    [--concurrency 1,2,4,8,16] [--wait networkidle,selector] [--isolation slot] [--reps 1] [--recycle 200] [--timeout 30000]
The rendered crawl benchmark: the shop of bench/spa-origin.js crawled with --render.
For each repetition, each wait, each --render-concurrency and each
--render-isolation (interleaved, in that order), it runs
  node bin/prerender.js crawl ORIGIN/st/dir.asp -i /st/dir.asp /st/product.asp -o TMP
      --render --render-concurrency N --render-wait W --render-isolation I --quiet --json
  --products N         products in the shop (default 2000)
  --count N            products per dir.asp page (default 100)
  --concurrency LIST   --render-concurrency values (default 1,2,4,8,16)
  --wait LIST          --render-wait values: networkidle, selector (selector:[data-ready])
                       or a wait of the crawler's own (default networkidle,selector)
  --isolation LIST     --render-isolation values (default slot)
  --reps N             repetitions (default 1)
  --recycle N          --render-recycle (default 200)
  --timeout MS         --render-timeout (default 30000)
  --label TEXT         note stored with the results`;

/** @type {Set<number>} process groups of the crawls running */
const running = new Set();
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.once(signal, () => {
    for (const pid of running) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    process.exit(130);
  });
}

/** @param {number} products @param {number} count */
async function startOrigin(products, count) {
  const child = spawn(process.execPath, [path.join(HERE, 'spa-origin.js'), String(products), String(count)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) });
  const url = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', () => reject(new Error('the origin exited')));
  });
  return { url: /** @type {string} */ (url), stop: () => child.stdin?.end() };
}

/**
 * @param {{ url: string, concurrency: number, wait: string, isolation: string, recycle: number, maxPages: number, timeout: number }} run
 */
async function crawlOnce({ url, concurrency, wait, isolation, recycle, maxPages, timeout }) {
  const out = await mkdtemp(path.join(os.tmpdir(), 'prerender-render-bench-'));
  const rusageFile = path.join(out, '..', `${path.basename(out)}.rusage.json`);
  const args = ['--import', path.join(HERE, 'lib/rusage.js'), BIN, 'crawl', url, '-i', '/st/dir.asp', '/st/product.asp', '-o', out, '--render', '--render-concurrency', String(concurrency),
    '--render-wait', wait, '--render-isolation', isolation, '--render-recycle', String(recycle), '--render-timeout', String(timeout), '--max-pages', String(maxPages), '--quiet', '--json'];
  // The shell waits for node, which waits for its browsers: the shell's cutime/cstime are theirs.
  const script = '"$@"; code=$?; cat /proc/$$/stat >&2; exit $code';
  const started = performance.now();
  // A process group of its own, so that stopping this script stops the crawl and its browsers too.
  const child = spawn('sh', ['-c', script, 'sh', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, PRERENDER_BENCH_RUSAGE: rusageFile } });
  running.add(/** @type {number} */ (child.pid));
  child.once('exit', () => running.delete(/** @type {number} */ (child.pid)));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  let peakRss = 0;
  let peakPss = 0;
  /** @type {{ t: number, rssMB: number }[]} */
  const series = [];
  const sampler = new TreeSampler(/** @type {number} */ (child.pid));
  let samples = 0;
  const busyBefore = machineBusyMs();
  const sample = () => {
    const { rssKB, pssKB } = sampler.sample({ pss: samples++ % 8 === 0 }); // Pss every 2 s: reading it costs CPU
    peakRss = Math.max(peakRss, rssKB);
    if (pssKB !== null) peakPss = Math.max(peakPss, pssKB);
    series.push({ t: Math.round(performance.now() - started), rssMB: Math.round(rssKB / 1024) });
  };
  const timer = setInterval(sample, 250);
  const code = await new Promise((resolve) => child.on('close', resolve));
  clearInterval(timer);
  const wallMs = performance.now() - started;
  const machineMs = machineBusyMs() - busyBefore;
  const statLine = stderr.trim().split('\n').pop() ?? '';
  const fields = statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
  const waitedMs = ((Number(fields[13]) + Number(fields[14])) * 1000) / clockTicks(); // cutime + cstime
  // The larger of: every process seen (sampled), and what the shell's waited-for descendants reported.
  const cpuMs = Math.max(sampler.cpuMs, waitedMs);
  let result;
  try {
    result = JSON.parse(stdout.trim().split('\n').pop() ?? '');
  } catch {
    throw new Error(`the crawl printed no result (exit ${code}): ${stderr.slice(0, 2000)}`);
  }
  const problems = await check(out, result);
  await rm(out, { recursive: true, force: true });
  const usage = JSON.parse(await readFile(rusageFile, 'utf8').catch(() => '{}'));
  await rm(rusageFile, { force: true });
  const nodeCpuMs = ((usage.userCPUTime ?? NaN) + (usage.systemCPUTime ?? NaN)) / 1000;
  const reasons = (result.failures ?? []).slice(0, 3).map((/** @type {{ url: string, message: string }} */ f) => `${f.url}: ${f.message}`);
  return { code, wallMs, cpuMs, machineMs, waitedMs, nodeCpuMs, peakRssMB: peakRss / 1024, peakPssMB: peakPss / 1024, pages: result.pages, failed: result.failed, problems, reasons, series };
}

/**
 * Every page rendered; product pages have their placeholder and relative links.
 * @param {string} out
 * @param {{ pages: number, failed: number }} result
 */
async function check(out, result) {
  const problems = [];
  if (result.failed > 0) problems.push(`${result.failed} pages failed`);
  const manifest = JSON.parse(await readFile(path.join(out, 'prerender-manifest.json'), 'utf8'));
  const notRendered = manifest.pages.filter((/** @type {{ rendered?: boolean }} */ page) => page.rendered !== true).length;
  if (notRendered > 0) problems.push(`${notRendered} pages not rendered`);
  const product = await readFile(path.join(out, 'st/product2.htm'), 'utf8').catch(() => '');
  if (!product.includes('<!--prerender:price sku=SKU-2-->')) problems.push('product2.htm has no price placeholder');
  if (!product.includes('href="product3.htm"')) problems.push('product2.htm does not link product3.htm');
  return problems;
}

/** @param {number[]} values */
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const { values } = parseBenchArgs('render-bench', {
    products: { type: 'string', default: '2000' },
    count: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '1,2,4,8,16' },
    wait: { type: 'string', default: 'networkidle,selector' },
    isolation: { type: 'string', default: 'slot' },
    reps: { type: 'string', default: '1' },
    recycle: { type: 'string', default: '200' },
    timeout: { type: 'string', default: '30000' },
    label: { type: 'string', default: '' },
  }, USAGE);
  checkNumbers('render-bench', values, ['products', 'count', 'reps', 'recycle', 'timeout'], ['concurrency']);
  const products = Number(values.products);
  const count = Number(values.count);
  const pages = products + Math.ceil(products / count);
  const concurrencies = values.concurrency.split(',').map(Number);
  const waits = values.wait.split(',');
  const isolations = values.isolation.split(',');
  const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(`render bench: ${products} products (${pages} pages), CPU ${cpuModel}, ${os.cpus().length} cores, load average at start ${load}`);
  const origin = await startOrigin(products, count);
  /** @type {Record<string, any[]>} */
  const runs = {};
  let ok = true;
  try {
    for (let rep = 0; rep < Number(values.reps); rep++) {
      for (const waitName of waits) {
        for (const concurrency of concurrencies) {
          for (const isolation of isolations) {
            const run = await crawlOnce({ url: origin.url, concurrency, wait: WAITS[waitName] ?? waitName, isolation, recycle: Number(values.recycle), maxPages: pages + 10, timeout: Number(values.timeout) });
            const key = `${waitName} c=${concurrency}${isolations.length > 1 ? ` ${isolation}` : ''}`;
            (runs[key] ??= []).push(run);
            const loadNow = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
            console.log(`${key.padEnd(20)} ${run.pages} pages  ${(run.pages / (run.wallMs / 1000)).toFixed(1)} pages/s  ${(run.cpuMs / run.pages).toFixed(1)} ms CPU/page (node ${(run.nodeCpuMs / run.pages).toFixed(1)}; machine ${(run.machineMs / run.pages).toFixed(1)})  peak RSS ${run.peakRssMB.toFixed(0)} MB (PSS ${run.peakPssMB.toFixed(0)} MB)  load ${loadNow}${run.problems.length ? '  PROBLEMS: ' + run.problems.join('; ') : ''}`);
            for (const reason of run.reasons) console.log(`    failed: ${reason}`);
            if (run.problems.length > 0 || run.pages !== pages) ok = false;
          }
        }
      }
    }
  } finally {
    origin.stop();
  }
  console.log('\nmedians: wait, --render-concurrency | pages/s | CPU ms/page | of which node | machine busy ms/page | peak RSS MB (tree) | peak PSS MB');
  for (const [key, list] of Object.entries(runs)) {
    console.log(`| ${key} | ${median(list.map((r) => r.pages / (r.wallMs / 1000))).toFixed(1)} | ${median(list.map((r) => r.cpuMs / r.pages)).toFixed(1)} | ${median(list.map((r) => r.nodeCpuMs / r.pages)).toFixed(1)} | ${median(list.map((r) => r.machineMs / r.pages)).toFixed(1)} | ${median(list.map((r) => r.peakRssMB)).toFixed(0)} | ${median(list.map((r) => r.peakPssMB)).toFixed(0)} |`);
  }
  const dir = path.join(HERE, 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `render-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ products, pages, cpuModel, label: values.label, runs }, null, 1));
  console.log(`results: ${file}`);
  process.exitCode = ok ? 0 : 1;
}

await main();
