#!/usr/bin/env node
// @ts-check
/**
 * The crawl benchmark (`npm run bench`):
 *
 *   node bench/crawl-bench.js [--products 20000] [--peers wget,httrack,scraper] [--rounds 3] [--latency-ms 20]
 *
 * 1. starts bench/origin.js as a child process (the shop: /st/dir.asp lists
 *    1,000 products a page, /st/product.asp?SKUSetID=N is ~15 KB and names
 *    itself productN.htm);
 * 2. in each round, runs prerender, then each peer (wget, HTTrack,
 *    website-scraper; bench/lib/peers.js has their commands), one after the
 *    other against the same origin, each in a fresh output folder:
 *      node bin/prerender.js crawl ORIGIN/st/dir.asp -i /st/dir.asp /st/product.asp -o OUT --quiet --json
 *    and measures each one's wall time (spawn to exit), CPU (user + sys) and
 *    peak RSS (bench/lib/crawl-runs.js says how);
 * 3. checks what each tool wrote: every page of the shop, found by its text
 *    (bench/lib/pages-written.js); prerender's and wget's trees more closely
 *    (relative links, live cart/checkout/search, placeholders, manifest);
 * 4. prints each tool's medians over the rounds and the pass/fail of each
 *    target, writes them as JSON to bench/results/ (git-ignored), removes
 *    its temp folders.
 *
 * Exit status: 0 all targets met, 1 a target missed, 2 the run was wrong,
 * crashed, or a peer is not installed (the message says how to install it).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { parseBenchArgs, usageError } from './lib/args.js';
import { measureCeiling } from './lib/ceiling.js';
import { killChildren, runPeer, runPrerender, startOrigin } from './lib/crawl-runs.js';
import { judge, render, summarise } from './lib/crawl-report.js';
import { parsePeers, peerCommand, peerVersions, preparePeers } from './lib/peers.js';
import { machineBusyMs } from './lib/proc.js';
import { verifyPrerender, verifyWget } from './lib/verify.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');

/** Aborted on SIGINT/SIGTERM. */
const stop = new AbortController();

const USAGE = `usage: node bench/crawl-bench.js [options]
  --products N        products in the shop (default 20000)
  --count N           products per dir.asp page (default 1000)
  --peers LIST        also crawl the shop with these tools, comma-separated:
                      wget (Debian's wget --mirror), httrack (Debian's HTTrack),
                      scraper (website-scraper 6, installed on first use by
                      npm ci --prefix bench/peers); each gets prerender's
                      concurrency where it has one, no robots.txt, this host only
  --wget              the same as --peers wget (added to --peers)
  --rounds N          run every tool N times, in turn (prerender, then each peer,
                      then again), and report each one's medians (default 1)
  --concurrency N     crawler --concurrency, and the peers' (default: the crawler's own default)
  --threads N         crawler --threads (default: the crawler's own default)
  --max-pages N       crawler --max-pages (default: the crawler's default, raised to fit the shop when it is too small)
  --ceiling [S]       also measure the origin's ceiling with autocannon for S seconds (default 10)
  --origin-workers N  origin processes (node:cluster; default 1)
  --latency-ms N      every origin answer waits N ms first (a remote, dynamic origin; default 0)
  --prerender DIR     the prerender checkout to run (default: this repository)
  --node-arg ARG      extra node flag for the crawler (repeatable, e.g. --node-arg=--cpu-prof)
  --sample-ms N       /proc sampling interval (default 100)
  --settle S          seconds to wait before each measured run (default 60; see BENCHMARKS.md, "file creation")
  --quiet-timeout S   before each measured run, wait up to S seconds for other processes to go quiet (default 600; 0: don't wait)
  --results DIR       where the JSON results go (default bench/results)
  --keep              keep the output folders
  --label TEXT        note stored with the results
  -h, --help          this text

A peer that is not installed ends the benchmark before it starts (exit 2),
with the command that installs it.`;

async function main() {
  const { values } = parseBenchArgs('crawl-bench', {
    products: { type: 'string', default: '20000' },
    count: { type: 'string', default: '1000' },
    peers: { type: 'string' },
    wget: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '1' },
    concurrency: { type: 'string' },
    threads: { type: 'string' },
    'max-pages': { type: 'string' },
    ceiling: { type: 'string' },
    'origin-workers': { type: 'string', default: '1' },
    'latency-ms': { type: 'string', default: '0' },
    prerender: { type: 'string', default: REPO },
    'node-arg': { type: 'string', multiple: true, default: [] },
    'sample-ms': { type: 'string', default: '100' },
    settle: { type: 'string', default: '60' },
    'quiet-timeout': { type: 'string', default: '600' },
    results: { type: 'string', default: path.join(HERE, 'results') },
    keep: { type: 'boolean', default: false },
    label: { type: 'string', default: '' },
  }, USAGE, { allowNegative: false });
  const products = positive(values.products, 'products');
  const count = positive(values.count, 'count');
  const rounds = positive(values.rounds, 'rounds');
  const workers = positive(values['origin-workers'], 'origin-workers');
  const latencyMs = values['latency-ms'] === '0' ? 0 : positive(values['latency-ms'], 'latency-ms');
  const sampleMs = positive(values['sample-ms'], 'sample-ms');
  const settleSeconds = values.settle === '0' ? 0 : positive(values.settle, 'settle');
  const quietTimeout = values['quiet-timeout'] === '0' ? 0 : positive(values['quiet-timeout'], 'quiet-timeout');
  const ceilingSeconds = values.ceiling === undefined ? undefined : values.ceiling === '' ? 10 : positive(values.ceiling, 'ceiling');
  /** @type {import('./lib/peers.js').Peer[]} */
  let peers = [];
  if (values.peers !== undefined || values.wget) {
    const parsed = parsePeers([values.peers, values.wget ? 'wget' : undefined].filter((list) => list !== undefined).join(','));
    peers = 'error' in parsed ? usageError('crawl-bench', parsed.error) : parsed.peers;
  }
  const missing = preparePeers(peers, log);
  if (missing) {
    process.stderr.write(`crawl-bench: ${missing}\n`);
    return 2;
  }
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
  const shop = { products, count };
  const concurrency = values.concurrency === undefined ? optionDefault(prerender, 'concurrency', 8) : positive(values.concurrency, 'concurrency');

  /** @type {string[]} */
  const crawlerFlags = [];
  if (values.concurrency !== undefined) crawlerFlags.push('--concurrency', String(concurrency));
  if (values.threads !== undefined) crawlerFlags.push('--threads', String(Number.parseInt(values.threads, 10)));
  if (values['max-pages'] !== undefined) crawlerFlags.push('--max-pages', String(positive(values['max-pages'], 'max-pages')));
  else if (totalPages > optionDefault(prerender, 'maxPages', Infinity)) crawlerFlags.push('--max-pages', String(totalPages));

  const tmp = await mkdtemp(path.join(os.tmpdir(), 'prerender-bench-'));
  const origin = await startOrigin({ products, count, workers, latencyMs });
  /** @type {Record<string, any>} */
  const report = {
    date: new Date().toISOString(),
    machine: { ...machine(), peers: peerVersions(peers) },
    prerender: { dir: prerender, ...gitState(prerender) },
    label: values.label,
    settleSeconds,
    latencyMs,
    rounds,
    concurrency,
    shop: { products, count, dirPages, totalPages, productBytes: await productBytes(origin.url) },
  };
  /** @type {Record<string, Record<string, any>[]>} */
  const runs = Object.fromEntries(['prerender', ...peers].map((tool) => [tool, []]));
  try {
    if (ceilingSeconds !== undefined) {
      log(`origin ceiling: autocannon, 8 connections, ${ceilingSeconds} s...`);
      report.ceiling = await measureCeiling({ origin: origin.url, originPid: origin.pid, products, connections: 8, seconds: ceilingSeconds });
    }
    for (let r = 1; r <= rounds; r++) {
      const of = rounds > 1 ? ` (round ${r} of ${rounds})` : '';
      await settle();
      stop.signal.throwIfAborted();
      log(`crawling ${totalPages.toLocaleString('en-US')} pages with prerender${of}...`);
      const out = path.join(tmp, `prerender-${r}`);
      /** @type {Record<string, any>} */
      const run = await runPrerender({ prerender, origin, out, crawlerFlags, nodeArgs: values['node-arg'], sampleMs, shop });
      run.verify = verifyPrerender(out, shop);
      runs.prerender.push(run);
      for (const peer of peers) {
        await settle();
        stop.signal.throwIfAborted();
        log(`crawling the same origin with ${peer}${of}...`);
        const peerOut = path.join(tmp, `${peer}-${r}`);
        await mkdir(peerOut);
        const command = peerCommand(peer, { origin: origin.url, out: peerOut, concurrency });
        /** @type {Record<string, any>} */
        const peerRun = await runPeer({ command, out: peerOut, origin, sampleMs, shop });
        if (peer === 'wget') peerRun.verify = verifyWget(peerOut, { products });
        runs[peer].push(peerRun);
      }
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

  report.tools = Object.fromEntries(Object.entries(runs).map(([tool, list]) => [tool, summarise(list)]));
  report.targets = judge(report);
  process.stdout.write(render(report));
  saveResults(report, values.results);
  if (Object.values(report.tools).some((tool) => !tool.ok)) return 2;
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
 * One of the crawler's defaults, read from its options table.
 * @param {string} prerender
 * @param {string} name e.g. 'maxPages'
 * @param {number} fallback when the table or the option is not found
 */
function optionDefault(prerender, name, fallback) {
  try {
    // The options table moved to lib/options/ with the engine's folders; older checkouts have it at lib/.
    const file = ['lib/options/crawl-options.js', 'lib/options.js'].map((file) => path.join(prerender, file)).find((file) => existsSync(file));
    const text = file ? readFileSync(file, 'utf8') : '';
    const match = new RegExp(`name: '${name}'[^}]*default: ([\\d_]+)`).exec(text);
    return match ? Number(match[1].replace(/_/g, '')) : fallback;
  } catch {
    return fallback;
  }
}

function machine() {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
  };
}

/** @param {string} origin */
async function productBytes(origin) {
  const response = await fetch(`${origin}/st/product.asp?SKUSetID=1`);
  return (await response.arrayBuffer()).byteLength;
}

/**
 * @param {Record<string, any>} report
 * @param {string} dir
 */
function saveResults(report, dir) {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `crawl-${report.shop.products}-${report.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  log(`results: ${path.relative(process.cwd(), file)}`);
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

for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.once(signal, () => {
    // Stop the origin and the tool running; main() then fails and its
    // finally block removes the temp folder.
    stop.abort();
    killChildren();
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

