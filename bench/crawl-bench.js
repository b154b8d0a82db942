#!/usr/bin/env node
// @ts-check
/**
 * The crawl benchmark (`npm run bench`):
 *
 *   node bench/crawl-bench.js [--products 20000] [--wget] [--concurrency N] [--ceiling]
 *
 * 1. starts bench/origin.js as a child process (the shop: /st/dir.asp lists
 *    1,000 products a page, /st/product.asp?SKUSetID=N is ~15 KB and names
 *    itself productN.htm);
 * 2. runs the crawler as another child process,
 *      node bin/prerender.js crawl ORIGIN/st/dir.asp -i /st/dir.asp /st/product.asp -o TMP --quiet --json
 *    and measures its wall time (spawn to exit), its CPU (user + sys of that
 *    process only: getrusage(RUSAGE_SELF) written at exit by the preloaded
 *    bench/lib/rusage.js) and its peak RSS (ru_maxrss from the same call,
 *    cross-checked with VmHWM sampled from /proc);
 * 3. checks the tree (N product files, relative links, live cart/checkout/
 *    search, placeholders, manifest without errors);
 * 4. with --wget, mirrors the same origin with Debian's wget and compares;
 * 5. prints the figures and the pass/fail of each target, writes them as JSON
 *    to bench/results/ (git-ignored), removes its temp folders.
 *
 * Exit status: 0 all targets met, 1 a target missed, 2 the run was wrong or crashed.
 */
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { parseBenchArgs, usageError } from './lib/args.js';
import { measureCeiling } from './lib/ceiling.js';
import { machineBusyMs, startSampler, treeCpuMs } from './lib/proc.js';
import { verifyPrerender, verifyWget } from './lib/verify.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');

/** Aborted on SIGINT/SIGTERM. */
const stop = new AbortController();

/** Child processes to stop if the benchmark itself is interrupted. */
/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();

/** @param {import('node:child_process').ChildProcess} child */
function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** The issue's targets. */
const TARGETS = {
  cpuMsPerPage: 1,
  /** @param {number} products */
  peakRssMB: (products) => (products <= 20_000 ? 250 : 400),
};

const USAGE = `usage: node bench/crawl-bench.js [options]
  --products N        products in the shop (default 20000)
  --count N           products per dir.asp page (default 1000)
  --concurrency N     crawler --concurrency (default: the crawler's own default)
  --threads N         crawler --threads (default: the crawler's own default)
  --max-pages N       crawler --max-pages (default: the crawler's default, raised to fit the shop when it is too small)
  --wget              also mirror the origin with wget and compare
  --ceiling [S]       also measure the origin's ceiling with autocannon for S seconds (default 10)
  --origin-workers N  origin processes (node:cluster; default 1)
  --latency-ms N      every origin answer waits N ms first (a remote, dynamic origin; default 0)
  --prerender DIR     the prerender checkout to run (default: this repository)
  --node-arg ARG      extra node flag for the crawler (repeatable, e.g. --node-arg=--cpu-prof)
  --sample-ms N       /proc sampling interval (default 100)
  --settle S          seconds to wait before each measured run (default 60; see BENCHMARKS.md, "file creation")
  --quiet-timeout S   before each measured run, wait up to S seconds for other processes to go quiet (default 600; 0: don't wait)
  --keep              keep the output folders
  --label TEXT        note stored with the results
  -h, --help          this text`;

async function main() {
  const { values } = parseBenchArgs('crawl-bench', {
    products: { type: 'string', default: '20000' },
    count: { type: 'string', default: '1000' },
    concurrency: { type: 'string' },
    threads: { type: 'string' },
    'max-pages': { type: 'string' },
    wget: { type: 'boolean', default: false },
    ceiling: { type: 'string' },
    'origin-workers': { type: 'string', default: '1' },
    'latency-ms': { type: 'string', default: '0' },
    prerender: { type: 'string', default: REPO },
    'node-arg': { type: 'string', multiple: true, default: [] },
    'sample-ms': { type: 'string', default: '100' },
    settle: { type: 'string', default: '60' },
    'quiet-timeout': { type: 'string', default: '600' },
    keep: { type: 'boolean', default: false },
    label: { type: 'string', default: '' },
  }, USAGE, { allowNegative: false });
  const products = positive(values.products, 'products');
  const count = positive(values.count, 'count');
  const workers = positive(values['origin-workers'], 'origin-workers');
  const latencyMs = values['latency-ms'] === '0' ? 0 : positive(values['latency-ms'], 'latency-ms');
  const sampleMs = positive(values['sample-ms'], 'sample-ms');
  const settleSeconds = values.settle === '0' ? 0 : positive(values.settle, 'settle');
  const quietTimeout = values['quiet-timeout'] === '0' ? 0 : positive(values['quiet-timeout'], 'quiet-timeout');
  const ceilingSeconds = values.ceiling === undefined ? undefined : values.ceiling === '' ? 10 : positive(values.ceiling, 'ceiling');
  // On ext4 without a journal (this machine's disk), creating a file skips every
  // inode freed in the last 60 s, at a cost in system CPU that grows with their
  // number. Nothing is deleted between the measured runs, and each run starts
  // after a pause, so that no run pays for the files another one deleted.
  const settle = async () => {
    if (settleSeconds > 0) {
      log(`settling ${settleSeconds} s so that files deleted before this run do not slow its file creation...`);
      await delay(settleSeconds * 1000, undefined, { signal: stop.signal });
    }
    if (quietTimeout > 0) await waitForQuiet(quietTimeout);
  };
  const prerender = path.resolve(values.prerender);
  const dirPages = Math.ceil(products / count);
  const totalPages = products + dirPages;

  /** @type {string[]} */
  const crawlerFlags = [];
  if (values.concurrency !== undefined) crawlerFlags.push('--concurrency', String(positive(values.concurrency, 'concurrency')));
  if (values.threads !== undefined) crawlerFlags.push('--threads', String(Number.parseInt(values.threads, 10)));
  if (values['max-pages'] !== undefined) crawlerFlags.push('--max-pages', String(positive(values['max-pages'], 'max-pages')));
  else if (totalPages > defaultMaxPages(prerender)) crawlerFlags.push('--max-pages', String(totalPages));

  const tmp = await mkdtemp(path.join(os.tmpdir(), 'prerender-bench-'));
  const origin = await startOrigin({ products, count, workers, latencyMs });
  /** @type {Record<string, any>} */
  const report = {
    date: new Date().toISOString(),
    machine: machine(),
    prerender: { dir: prerender, ...gitState(prerender) },
    label: values.label,
    settleSeconds,
    shop: { products, count, dirPages, totalPages, productBytes: await productBytes(origin.url) },
  };
  try {
    if (ceilingSeconds !== undefined) {
      log(`origin ceiling: autocannon, 8 connections, ${ceilingSeconds} s...`);
      report.ceiling = await measureCeiling({ origin: origin.url, originPid: origin.pid, products, connections: 8, seconds: ceilingSeconds });
    }

    await settle();
    log(`crawling ${totalPages.toLocaleString('en-US')} pages with prerender...`);
    const out = path.join(tmp, 'prerender-out');
    report.crawler = await runCrawler({ prerender, origin, out, crawlerFlags, nodeArgs: values['node-arg'], sampleMs, totalPages });
    report.crawler.verify = verifyPrerender(out, { products, count });

    if (values.wget) {
      await settle();
      log('mirroring the same origin with wget...');
      const wgetOut = path.join(tmp, 'wget-out');
      report.wget = await runWget({ origin, out: wgetOut, sampleMs, totalPages });
      report.wget.verify = verifyWget(wgetOut, { products });
    }
  } finally {
    await origin.stop();
    if (!values.keep) {
      log(`removing ${tmp}...`);
      await rm(tmp, { recursive: true, force: true });
    } else {
      log(`kept ${tmp}`);
    }
  }

  report.targets = judge(report, products);
  process.stdout.write(render(report));
  saveResults(report);
  if (!report.crawler.verify.ok || (report.wget && !report.wget.verify.ok) || report.crawler.exitCode !== 0) return 2;
  return report.targets.every((/** @type {{ pass: boolean }} */ t) => t.pass) ? 0 : 1;
}

/**
 * An option's value as a positive whole number; anything else ends the
 * benchmark before it starts (one line, exit status 2).
 * @param {string | undefined} text
 * @param {string} name
 */
function positive(text, name) {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) usageError('crawl-bench', `--${name} must be a positive whole number, got ${JSON.stringify(text)}`);
  return value;
}

/**
 * Wait until the rest of the machine uses less than 0.2 cores over 3 s, so
 * that a measured run does not share the CPUs.
 * @param {number} timeoutSeconds
 */
async function waitForQuiet(timeoutSeconds) {
  const started = Date.now();
  let warned = false;
  for (;;) {
    const before = machineBusyMs();
    const self = process.cpuUsage();
    await delay(3000, undefined, { signal: stop.signal });
    const own = process.cpuUsage(self);
    const others = (machineBusyMs() - before - (own.user + own.system) / 1000) / 3000;
    if (others < 0.2) return;
    if (Date.now() - started > timeoutSeconds * 1000) {
      log(`the machine is still busy (${others.toFixed(2)} cores used by other processes): measuring anyway`);
      return;
    }
    if (!warned) log(`waiting for other processes to go quiet (${others.toFixed(2)} cores busy)...`);
    warned = true;
  }
}

/** @param {string} message */
const log = (message) => process.stderr.write(`bench: ${message}\n`);

/**
 * The crawler's default --max-pages, read from its options table.
 * @param {string} prerender
 */
function defaultMaxPages(prerender) {
  try {
    // The options table moved to lib/options/ with the engine's folders; older checkouts have it at lib/.
    const file = ['lib/options/crawl-options.js', 'lib/options.js'].map((name) => path.join(prerender, name)).find((name) => existsSync(name));
    const text = file ? readFileSync(file, 'utf8') : '';
    const match = /name: 'maxPages'[^}]*default: ([\d_]+)/.exec(text);
    return match ? Number(match[1].replace(/_/g, '')) : Infinity;
  } catch {
    return Infinity;
  }
}

function machine() {
  const cpus = os.cpus();
  let wget = null;
  try {
    wget = execFileSync('wget', ['--version'], { encoding: 'utf8' }).split('\n')[0];
  } catch {
    // not installed: only matters with --wget
  }
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
    wget,
  };
}

/** @param {string} dir */
function gitState(dir) {
  try {
    const commit = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--', 'lib', 'bin'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: null, dirty: null };
  }
}

/**
 * @param {{ products: number, count: number, workers: number, latencyMs?: number }} options
 * @returns {Promise<{ url: string, pid: number, stop: () => Promise<void> }>}
 */
async function startOrigin({ products, count, workers, latencyMs = 0 }) {
  const child = track(spawn(process.execPath, [path.join(HERE, 'origin.js'), '--products', String(products), '--count', String(count), '--port', '0', '--workers', String(workers), '--latency-ms', String(latencyMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  }));
  const exited = once(child, 'exit');
  const lines = createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) });
  const [first] = await Promise.race([
    once(lines, 'line'),
    exited.then(([code]) => { throw new Error(`the origin exited (${code}) before printing its URL`); }),
  ]);
  lines.close();
  child.stdout?.resume();
  return {
    url: String(first).trim(),
    pid: /** @type {number} */ (child.pid),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** @param {string} origin */
async function productBytes(origin) {
  const response = await fetch(`${origin}/st/product.asp?SKUSetID=1`);
  return (await response.arrayBuffer()).byteLength;
}

/**
 * @param {{ prerender: string, origin: { url: string, pid: number }, out: string, crawlerFlags: string[], nodeArgs: string[], sampleMs: number, totalPages: number }} options
 */
async function runCrawler({ prerender, origin, out, crawlerFlags, nodeArgs, sampleMs, totalPages }) {
  const usageFile = path.join(path.dirname(out), 'crawler-rusage.json');
  const args = [
    ...nodeArgs,
    '--import', pathToFileURL(path.join(HERE, 'lib', 'rusage.js')).href,
    path.join(prerender, 'bin', 'prerender.js'),
    'crawl', `${origin.url}/st/dir.asp`, '-i', '/st/dir.asp', '/st/product.asp', '-o', out, '--quiet', '--json', ...crawlerFlags,
  ];
  const command = `node bin/prerender.js crawl ${origin.url}/st/dir.asp -i /st/dir.asp /st/product.asp -o OUT --quiet --json${crawlerFlags.length ? ' ' + crawlerFlags.join(' ') : ''}`;
  stop.signal.throwIfAborted();
  const originCpuBefore = treeCpuMs(origin.pid);
  const busyBefore = machineBusyMs();
  const selfBefore = process.cpuUsage();
  const started = performance.now();
  const child = track(spawn(process.execPath, args, {
    cwd: path.dirname(out),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PRERENDER_BENCH_RUSAGE: usageFile },
  }));
  const sampler = startSampler(/** @type {number} */ (child.pid), sampleMs);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk) => { stdout += chunk; });
  child.stderr?.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
  const [exitCode, signal] = await once(child, 'exit');
  const wallMs = performance.now() - started;
  const sampled = sampler.stop();
  const originCpuMs = treeCpuMs(origin.pid) - originCpuBefore;
  const self = process.cpuUsage(selfBefore);
  const busyMs = machineBusyMs() - busyBefore;
  if (stderr.trim()) log(`crawler stderr:\n${stderr.trim()}`);
  /** @type {Record<string, any>} */
  let usage = {};
  try {
    usage = JSON.parse(readFileSync(usageFile, 'utf8'));
  } catch {
    throw new Error(`the crawler left no resource usage (exit ${exitCode ?? signal}); stderr: ${stderr.slice(0, 2000)}`);
  }
  /** @type {Record<string, any> | null} */
  let result = null;
  try {
    result = JSON.parse(stdout.trim().split('\n').pop() ?? '');
  } catch {
    // reported below through exitCode and verify
  }
  const pages = result?.pages ?? 0;
  const cpuMs = (usage.userCPUTime + usage.systemCPUTime) / 1000;
  return {
    command,
    exitCode,
    signal,
    result: result && { pages: result.pages, failed: result.failed, warnings: result.warnings, notCrawled: result.notCrawled, durationMs: result.durationMs },
    expectedPages: totalPages,
    wallMs: Math.round(wallMs),
    pagesPerSecond: round(pages / (wallMs / 1000), 0),
    userMs: Math.round(usage.userCPUTime / 1000),
    systemMs: Math.round(usage.systemCPUTime / 1000),
    cpuMsPerPage: round(cpuMs / Math.max(pages, 1), 3),
    cpuUtilisation: round(cpuMs / wallMs, 2),
    peakRssMB: round(usage.maxRSS / 1024, 1),
    sampledHwmMB: round(sampled.hwmKB / 1024, 1),
    contextSwitches: { voluntary: usage.voluntaryContextSwitches, involuntary: usage.involuntaryContextSwitches },
    originCpuMsPerPage: round(originCpuMs / Math.max(pages, 1), 3),
    otherLoadCores: round(Math.max(0, busyMs - cpuMs - originCpuMs - (self.user + self.system) / 1000) / wallMs, 2),
    rssTimeline: timeline(sampled.samples),
  };
}

/**
 * @param {{ origin: { url: string, pid: number }, out: string, sampleMs: number, totalPages: number }} options
 */
async function runWget({ origin, out, sampleMs, totalPages }) {
  const wgetArgs = [
    '--mirror', '--convert-links', '--adjust-extension', '--no-parent', '-q', '-P', out,
    '--accept-regex', '/st/(dir|product)\\.asp',
    `${origin.url}/st/dir.asp`,
  ];
  const command = `wget --mirror --convert-links --adjust-extension --no-parent -q -P OUT --accept-regex '/st/(dir|product)\\.asp' ${origin.url}/st/dir.asp`;
  // GNU time gives wget's exact rusage; without it, /proc samples approximate it.
  const timeFile = path.join(path.dirname(out), 'wget-time.txt');
  const withTime = existsSync('/usr/bin/time');
  stop.signal.throwIfAborted();
  const originCpuBefore = treeCpuMs(origin.pid);
  const busyBefore = machineBusyMs();
  const selfBefore = process.cpuUsage();
  const started = performance.now();
  const child = track(withTime
    ? spawn('/usr/bin/time', ['-f', '%e %U %S %M', '-o', timeFile, 'wget', ...wgetArgs], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn('wget', wgetArgs, { stdio: ['ignore', 'ignore', 'pipe'] }));
  const sampler = withTime ? null : startSampler(/** @type {number} */ (child.pid), sampleMs);
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
  const [exitCode] = await once(child, 'exit');
  const wallMs = performance.now() - started;
  const originCpuMs = treeCpuMs(origin.pid) - originCpuBefore;
  const self = process.cpuUsage(selfBefore);
  const busyMs = machineBusyMs() - busyBefore;
  let userMs;
  let systemMs;
  let peakKB;
  if (withTime) {
    const fields = readFileSync(timeFile, 'utf8').trim().split('\n').pop()?.split(' ').map(Number) ?? [];
    [, userMs, systemMs, peakKB] = [fields[0], fields[1] * 1000, fields[2] * 1000, fields[3]];
  } else {
    const sampled = /** @type {NonNullable<typeof sampler>} */ (sampler).stop();
    userMs = NaN;
    systemMs = sampled.lastCpuMs;
    peakKB = sampled.hwmKB;
  }
  if (stderr.trim()) log(`wget stderr:\n${stderr.trim().slice(0, 2000)}`);
  const cpuMs = userMs + systemMs;
  return {
    command,
    exitCode,
    measuredWith: withTime ? 'GNU time (wait4 rusage)' : '/proc sampling (approximate)',
    wallMs: Math.round(wallMs),
    pagesPerSecond: round(totalPages / (wallMs / 1000), 0),
    userMs: Math.round(userMs),
    systemMs: Math.round(systemMs),
    cpuMsPerPage: round(cpuMs / totalPages, 3),
    peakRssMB: round(peakKB / 1024, 1),
    originCpuMsPerPage: round(originCpuMs / totalPages, 3),
    otherLoadCores: round(Math.max(0, busyMs - cpuMs - originCpuMs - (self.user + self.system) / 1000) / wallMs, 2),
  };
}

/**
 * Ten points of the RSS curve (MB), at 10 %, 20 % ... 100 % of the run.
 * @param {{ t: number, rssKB: number, cpuMs: number }[]} samples
 */
function timeline(samples) {
  if (samples.length === 0) return [];
  const end = samples[samples.length - 1].t;
  const points = [];
  for (let i = 1; i <= 10; i++) {
    const at = (end * i) / 10;
    const sample = samples.find((s) => s.t >= at) ?? samples[samples.length - 1];
    points.push({ s: round(sample.t / 1000, 1), rssMB: round(sample.rssKB / 1024, 0), cpuS: round(sample.cpuMs / 1000, 1) });
  }
  return points;
}

/**
 * @param {number} value
 * @param {number} digits
 */
function round(value, digits) {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/**
 * @param {Record<string, any>} report
 * @param {number} products
 */
function judge(report, products) {
  const { crawler, wget } = report;
  const targets = [];
  if (wget) {
    targets.push({ target: 'faster than wget --mirror', value: `${fmtS(crawler.wallMs)} vs ${fmtS(wget.wallMs)}`, pass: crawler.wallMs < wget.wallMs });
  }
  targets.push({ target: `crawler CPU <= ${TARGETS.cpuMsPerPage} ms/page`, value: `${crawler.cpuMsPerPage} ms`, pass: crawler.cpuMsPerPage <= TARGETS.cpuMsPerPage });
  const limit = TARGETS.peakRssMB(products);
  targets.push({ target: `peak RSS < ${limit} MB`, value: `${crawler.peakRssMB} MB`, pass: crawler.peakRssMB < limit });
  targets.push({ target: 'output verified', value: crawler.verify.ok ? `${crawler.verify.productFiles} product files` : crawler.verify.problems[0], pass: crawler.verify.ok });
  return targets;
}

/** @param {number} ms */
const fmtS = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** @param {Record<string, any>} report */
function render(report) {
  const { crawler, wget, ceiling, shop, machine: m } = report;
  const lines = [];
  lines.push('');
  lines.push(`prerender crawl benchmark, ${report.date.slice(0, 10)}, ${m.cpus} x ${m.cpuModel}, ${m.memoryGB} GB, Node ${m.node}`);
  lines.push(`prerender: ${report.prerender.dir}${report.prerender.commit ? ` @ ${report.prerender.commit}${report.prerender.dirty ? ' (+ uncommitted changes in lib/ or bin/)' : ''}` : ''}${report.label ? ` — ${report.label}` : ''}`);
  lines.push(`shop: ${shop.products.toLocaleString('en-US')} products of ${shop.productBytes.toLocaleString('en-US')} bytes + ${shop.dirPages} dir.asp pages = ${shop.totalPages.toLocaleString('en-US')} pages`);
  lines.push('');
  const rows = [['', 'prerender', ...(wget ? ['wget'] : [])]];
  const both = (/** @type {string} */ name, /** @type {(r: any) => string} */ get) => rows.push([name, get(crawler), ...(wget ? [get(wget)] : [])]);
  both('wall time', (r) => fmtS(r.wallMs));
  both('pages/s', (r) => String(r.pagesPerSecond));
  both('CPU user+sys', (r) => `${fmtS(r.userMs + r.systemMs)} (${fmtS(r.userMs)} + ${fmtS(r.systemMs)})`);
  both('CPU ms/page', (r) => String(r.cpuMsPerPage));
  both('peak RSS', (r) => `${r.peakRssMB} MB`);
  both('origin CPU ms/page', (r) => String(r.originCpuMsPerPage));
  both('other processes (cores)', (r) => String(r.otherLoadCores));
  both('exit code', (r) => String(r.exitCode));
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const row of rows) lines.push('  ' + row.map((cell, i) => cell.padEnd(widths[i])).join('   ').trimEnd());
  lines.push('');
  lines.push(`  crawler command: ${crawler.command}`);
  if (wget) lines.push(`  wget command:    ${wget.command}`);
  lines.push(`  crawler RSS (MB) at 10..100 % of the run: ${crawler.rssTimeline.map((/** @type {{ rssMB: number }} */ p) => p.rssMB).join(' ')}; VmHWM sampled ${crawler.sampledHwmMB} MB`);
  if (ceiling) {
    lines.push(`  origin ceiling (autocannon, ${ceiling.connections} connections, ${ceiling.seconds} s): ${ceiling.requestsPerSecond} req/s, ${ceiling.megabytesPerSecond} MB/s, p99 ${ceiling.latencyP99Ms} ms, ${ceiling.originCpuMsPerRequest} ms origin CPU/request`);
  }
  const busy = [crawler, wget].filter((r) => r && r.otherLoadCores > 0.15);
  if (busy.length > 0) lines.push('  WARNING: other processes used CPU during a measured run; its figures are not clean');
  if (!crawler.verify.ok) lines.push(`  prerender output WRONG: ${crawler.verify.problems.join('; ')}`);
  if (wget && !wget.verify.ok) lines.push(`  wget output wrong: ${wget.verify.problems.join('; ')}`);
  lines.push('');
  for (const t of report.targets) lines.push(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.target}: ${t.value}`);
  lines.push('');
  return lines.join('\n');
}

/** @param {Record<string, any>} report */
function saveResults(report) {
  const dir = path.join(HERE, 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `crawl-${report.shop.products}-${report.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  log(`results: ${path.relative(process.cwd(), file)}`);
}

for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.once(signal, () => {
    // Stop the origin, crawler or wget; main() then fails and its finally
    // block removes the temp folder.
    for (const child of children) child.kill('SIGKILL');
    process.exitCode = 130;
  });
}

try {
  process.exitCode = await main();
} catch (error) {
  if (stop.signal.aborted) {
    process.stderr.write('bench: interrupted\n');
    process.exitCode = 130;
  } else {
    process.stderr.write(`bench: ${error?.stack ?? error}\n`);
    process.exitCode = 2;
  }
}

