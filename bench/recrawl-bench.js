#!/usr/bin/env node
// @ts-check
/**
 * The re-crawl benchmark: what a second crawl into the same OUT costs at a
 * given churn, against the first (full) crawl, in the form of the 1999
 * Content Deployment study's churn table.
 *
 *   node bench/recrawl-bench.js [--products 20000] [--rounds 3] [--settle 60] [--etag] [--resume-after S] [--prerender DIR]
 *
 * Each round: bench/origin.js serves the shop with every product unchanged;
 * a first crawl into a fresh OUT; then the origin is restarted on the same
 * port with --changed 0, 10 and 100 (that percentage of product pages gets a
 * marker naming the scenario, so each scenario changes its share of pages
 * against the one before), and the same crawl command runs again into the
 * same OUT. With --etag the origin sends ETags and answers If-None-Match with
 * 304 (conditional requests); without, every page is fetched in full and
 * unchanged ones are found by their bytes. Per run: wall time (spawn to
 * exit), crawler CPU (user + sys of the crawler process, getrusage at exit
 * through bench/lib/rusage.js), peak RSS (ru_maxrss), files and bytes written
 * (the crawl's --json churn). With --resume-after S, each round also crawls
 * into a fresh OUT, kills that crawl with SIGKILL S seconds after its start,
 * and measures the same command run again, which resumes it (issue 13's
 * "resumed" crawl). The median over rounds is reported, with each
 * re-crawl's time as a share of the first crawl's. Results go to
 * bench/results/ (git-ignored).
 *
 * Exit status: 0 all targets met, 1 a target missed, 2 the run was wrong.
 */
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { parseBenchArgs, usageError } from './lib/args.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
const SCENARIOS = [0, 10, 100];

const USAGE = `usage: node bench/recrawl-bench.js [--products 20000] [--rounds 3] [--settle 60] [--etag] [--resume-after S] [--prerender DIR]
The re-crawl benchmark: what a second crawl into the same OUT costs at a given
churn (0, 10 and 100 % of the product pages changed), against the first (full)
crawl; the median over rounds. Results go to bench/results/ (git-ignored).
  --products N   products in the shop (default 20000)
  --rounds N     rounds (default 3)
  --settle S     seconds to wait before each round's first crawl (default 60)
  --etag         the origin sends ETags and answers If-None-Match with 304
                 (conditional requests); without, every page is fetched in full
  --resume-after S  also per round: a first crawl into a fresh OUT killed with
                 SIGKILL S seconds after its start, then the same command
                 again, which resumes it (measured: the "resumed" row)
  --prerender DIR  the prerender checkout whose bin/prerender.js crawls (default:
                 this repository); the origin and this script stay this repository's`;

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
const stopAll = () => { for (const child of children) child.kill('SIGKILL'); };
process.on('SIGINT', () => { stopAll(); process.exit(130); });
process.on('exit', stopAll);

/**
 * @param {{ products: number, port: number, changed: number, etag: boolean }} options
 * @returns {Promise<{ url: string, child: import('node:child_process').ChildProcess }>}
 */
async function startOrigin({ products, port, changed, etag }) {
  const child = spawn(process.execPath, [path.join(HERE, 'origin.js'), '--products', String(products), '--port', String(port), '--changed', String(changed), ...(etag ? ['--etag'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [chunk] = await once(/** @type {import('node:stream').Readable} */ (child.stdout), 'data');
  clearTimeout(timer);
  return { url: String(chunk).trim().split('\n')[0], child };
}

/** @param {import('node:child_process').ChildProcess} child */
async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** The checkout that crawls (--prerender); set by main(). */
let prerenderDir = REPO;

/**
 * The crawl command's arguments.
 * @param {string} origin
 * @param {string} out
 * @param {number} totalPages
 */
const crawlArgs = (origin, out, totalPages) => [path.join(prerenderDir, 'bin', 'prerender.js'),
  'crawl', `${origin}/st/dir.asp`, '-i', '/st/dir.asp', '/st/product.asp', '-o', out, '--quiet', '--json', '--max-pages', String(totalPages + 10)];

/**
 * A crawl killed with SIGKILL `seconds` after its start (what a resumed crawl picks up).
 * @param {string} origin
 * @param {string} out
 * @param {number} totalPages
 * @param {number} seconds
 */
async function killedCrawl(origin, out, totalPages, seconds) {
  const child = spawn(process.execPath, crawlArgs(origin, out, totalPages), { stdio: ['ignore', 'ignore', 'inherit'] });
  children.add(child);
  const exited = once(child, 'exit');
  const timer = setTimeout(() => child.kill('SIGKILL'), seconds * 1000);
  const [code, signal] = await exited;
  clearTimeout(timer);
  children.delete(child);
  if (signal !== 'SIGKILL') throw new Error(`the crawl to kill ended by itself (exit ${code}) before ${seconds} s: give --resume-after a smaller value`);
}

/**
 * @param {string} origin
 * @param {string} out
 * @param {number} totalPages
 */
async function runCrawler(origin, out, totalPages) {
  const usageFile = path.join(path.dirname(out), 'crawler-rusage.json');
  const args = ['--import', pathToFileURL(path.join(HERE, 'lib', 'rusage.js')).href, ...crawlArgs(origin, out, totalPages)];
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, PRERENDER_BENCH_RUSAGE: usageFile } });
  children.add(child);
  let stdout = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30 * 60_000);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  children.delete(child);
  const wallMs = performance.now() - started;
  const usage = JSON.parse(readFileSync(usageFile, 'utf8'));
  const summary = JSON.parse(stdout);
  return {
    code,
    wallMs,
    cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000,
    peakRssMB: usage.maxRSS / 1024,
    pages: summary.pages,
    churn: summary.churn,
  };
}

/** @param {number[]} values */
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function cpuModel() {
  try {
    return execFileSync('lscpu', { encoding: 'utf8' }).match(/Model name:\s*(.+)/)?.[1]?.trim() ?? os.cpus()[0]?.model;
  } catch {
    return os.cpus()[0]?.model;
  }
}

/** @param {string} dir */
function commitOf(dir) {
  try {
    return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

async function main() {
  const { values } = parseBenchArgs('recrawl-bench', {
    products: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    settle: { type: 'string', default: '60' },
    etag: { type: 'boolean', default: false },
    'resume-after': { type: 'string', default: '0' },
    prerender: { type: 'string', default: REPO },
  }, USAGE);
  prerenderDir = path.resolve(values.prerender);
  const products = Number(values.products);
  const rounds = Number(values.rounds);
  const settle = Number(values.settle);
  for (const [name, value] of /** @type {const} */ ([['products', products], ['rounds', rounds]])) {
    if (!(Number.isInteger(value) && value > 0)) usageError('recrawl-bench', `--${name} must be a whole number > 0, got ${JSON.stringify(values[name])}`);
  }
  if (!(settle >= 0)) usageError('recrawl-bench', `--settle must be a number of seconds >= 0, got ${JSON.stringify(values.settle)}`);
  const resumeAfter = Number(values['resume-after']);
  if (!(resumeAfter >= 0)) usageError('recrawl-bench', `--resume-after must be a number of seconds >= 0, got ${JSON.stringify(values['resume-after'])}`);
  const totalPages = products + Math.ceil(products / 1000);
  const base = await mkdtemp(path.join(os.tmpdir(), 'prerender-recrawl-bench-'));
  /** @type {Record<string, ReturnType<typeof runCrawler> extends Promise<infer R> ? R[] : never>} */
  const runs = { first: [], ...Object.fromEntries(SCENARIOS.map((churn) => [`${churn}%`, []])), ...(resumeAfter > 0 ? { resumed: [] } : {}) };
  try {
    for (let round = 1; round <= rounds; round++) {
      const out = path.join(base, `round-${round}`, 'out');
      mkdirSync(path.dirname(out), { recursive: true });
      let origin = await startOrigin({ products, port: 0, changed: 0, etag: values.etag === true });
      const port = Number(new URL(origin.url).port);
      if (settle > 0) {
        process.stderr.write(`bench: round ${round}: settling ${settle} s before the first crawl...\n`);
        await delay(settle * 1000);
      }
      const first = await runCrawler(origin.url, out, totalPages);
      if (first.code !== 0) throw new Error(`the first crawl exited ${first.code}`);
      runs.first.push(first);
      process.stderr.write(`bench: round ${round}: first crawl ${(first.wallMs / 1000).toFixed(1)} s\n`);
      for (const churn of SCENARIOS) {
        await stop(origin.child);
        origin = await startOrigin({ products, port, changed: churn, etag: values.etag === true });
        const again = await runCrawler(origin.url, out, totalPages);
        if (again.code !== 0) throw new Error(`the re-crawl at ${churn}% churn exited ${again.code}`);
        runs[`${churn}%`].push(again);
        process.stderr.write(`bench: round ${round}: ${churn}% churn ${(again.wallMs / 1000).toFixed(1)} s, ${again.churn.filesWritten} files written\n`);
      }
      if (resumeAfter > 0) {
        await stop(origin.child);
        origin = await startOrigin({ products, port, changed: 0, etag: values.etag === true });
        const killedOut = path.join(base, `round-${round}`, 'resumed', 'out');
        mkdirSync(path.dirname(killedOut), { recursive: true });
        await killedCrawl(origin.url, killedOut, totalPages, resumeAfter);
        const resumed = await runCrawler(origin.url, killedOut, totalPages);
        if (resumed.code !== 0) throw new Error(`the resumed crawl exited ${resumed.code}`);
        runs.resumed.push(resumed);
        process.stderr.write(`bench: round ${round}: killed at ${resumeAfter} s, resumed in ${(resumed.wallMs / 1000).toFixed(1)} s, ${resumed.churn.filesWritten} files written\n`);
        await rm(path.dirname(killedOut), { recursive: true, force: true });
      }
      await stop(origin.child);
    }
  } finally {
    await rm(base, { recursive: true, force: true });
  }

  const firstWall = median(runs.first.map((run) => run.wallMs));
  const rows = Object.entries(runs).map(([scenario, list]) => ({
    scenario,
    wallS: median(list.map((run) => run.wallMs)) / 1000,
    share: median(list.map((run) => run.wallMs)) / firstWall,
    cpuMsPerPage: median(list.map((run) => run.cpuMs)) / totalPages,
    peakRssMB: median(list.map((run) => run.peakRssMB)),
    filesWritten: median(list.map((run) => run.churn.filesWritten)),
    changed: median(list.map((run) => run.churn.changed)),
    notModified: median(list.map((run) => run.churn.notModified)),
    sameBytes: median(list.map((run) => run.churn.sameBytes)),
  }));
  const report = { date: new Date().toISOString(), cpu: cpuModel(), node: process.version, prerender: { dir: prerenderDir, commit: commitOf(prerenderDir) }, products, rounds, etag: values.etag === true, rows };
  const lines = [
    `prerender re-crawl benchmark, ${report.date.slice(0, 10)}, ${os.cpus().length} x ${report.cpu}, Node ${report.node}`,
    `prerender: ${prerenderDir}${report.prerender.commit ? ` @ ${report.prerender.commit}` : ''}`,
    `shop: ${products} products (${totalPages} pages), validators: ${report.etag ? 'ETag (conditional requests)' : 'none (unchanged pages found by their bytes)'}, median of ${rounds}`,
    '',
    '| crawl | changed | 304 | same bytes | files written | time | % of first crawl | CPU ms/page | peak RSS |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((row) => `| ${row.scenario === 'first' ? 'first (full)' : row.scenario === 'resumed' ? `resumed (killed at ${resumeAfter} s)` : `again, ${row.scenario} churn`} | ${row.changed} | ${row.notModified} | ${row.sameBytes} | ${row.filesWritten} | ${row.wallS.toFixed(1)} s | ${(row.share * 100).toFixed(0)} % | ${row.cpuMsPerPage.toFixed(3)} | ${row.peakRssMB.toFixed(0)} MB |`),
  ];
  const at = (/** @type {string} */ scenario) => /** @type {typeof rows[number]} */ (rows.find((row) => row.scenario === scenario));
  const targets = [
    { target: '0% churn writes no file', pass: at('0%').filesWritten === 0 },
    { target: '0% churn takes at most 25% of the first crawl', pass: at('0%').share <= 0.25 },
    { target: '10% churn takes at most 35% of the first crawl', pass: at('10%').share <= 0.35 },
    { target: 'peak RSS under 400 MB', pass: rows.every((row) => row.peakRssMB < 400) },
  ];
  lines.push('', ...targets.map((t) => `${t.pass ? 'PASS' : 'FAIL'}  ${t.target}`));
  process.stdout.write(lines.join('\n') + '\n');
  mkdirSync(path.join(HERE, 'results'), { recursive: true });
  writeFileSync(path.join(HERE, 'results', `recrawl-${products}-${report.date.replace(/[:.]/g, '-')}.json`), JSON.stringify({ ...report, targets, runs }, null, 2));
  return targets.every((t) => t.pass) ? 0 : 1;
}

main().then((code) => { process.exitCode = code; }, (error) => {
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  process.exitCode = 2;
});
