#!/usr/bin/env node
// @ts-check
/**
 * Re-crawls that ask only for what may have changed (issue 42), against a
 * shop that sends no validators:
 *
 *   node bench/changed-bench.js [--products 20000] [--rounds 3] [--settle 0]
 *
 * Each round, in this order (the scenarios interleave across rounds):
 *   first     the first crawl into a fresh OUT (the reference);
 *   changed   1 % of the products changed (about 200), listed with
 *             --changed --with-referrers;
 *   fresh     nothing changed, every product under --fresh /st/product.asp
 *             forever: only the roots (the dir.asp pages) are asked for;
 *   dated     a first crawl with --sitemap (every product dated long ago),
 *             then the same crawl again: the "dated" row is the second;
 *   one page  one product into an empty OUT: start-up and exit.
 * The changed run's floor is computed, not run: the one page's time, plus its
 * requests at the first crawl's time a page, as if nothing else cost.
 * The origin runs in this process (bench/origin.js startOrigin), restarted on
 * the same port between runs, and counts the requests each crawl sends. Per
 * run: wall time (spawn to exit), crawler CPU (user + sys, getrusage at exit
 * through bench/lib/rusage.js), peak RSS, requests, files written. Medians.
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
import { isChangedProduct, startOrigin } from './origin.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
const CHURN = 1;
const COUNT = 1000;
const LONG_AGO = '2020-01-01';

const USAGE = `usage: node bench/changed-bench.js [--products 20000] [--rounds 3] [--settle 0]
Re-crawls of a shop without validators that ask only for what may have
changed: --changed --with-referrers (1 % of products changed), --fresh ...
forever, and sitemap <lastmod> dates; against the first crawl, median of rounds.
  --products N   products in the shop (default 20000)
  --rounds N     rounds (default 3)
  --settle S     seconds to wait before each round (default 0)`;

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
const stopAll = () => { for (const child of children) child.kill('SIGKILL'); };
process.on('SIGINT', () => { stopAll(); process.exit(130); });
process.on('exit', stopAll);

/**
 * @param {string[]} args the crawl's, after "crawl"
 * @param {string} out
 * @param {boolean} [cut] cut short by --max-pages: exit 1 is expected
 */
async function runCrawler(args, out, cut = false) {
  const usageFile = path.join(path.dirname(out), 'crawler-rusage.json');
  const argv = ['--import', pathToFileURL(path.join(HERE, 'lib', 'rusage.js')).href, path.join(REPO, 'bin', 'prerender.js'), 'crawl', ...args, '-o', out, '--quiet', '--json'];
  const started = performance.now();
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, PRERENDER_BENCH_RUSAGE: usageFile } });
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
  if (code !== 0 && !(cut && code === 1)) throw new Error(`crawl ${args.join(' ')} exited ${code}: ${stdout.slice(0, 500)}`);
  return { wallMs, cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000, peakRssMB: usage.maxRSS / 1024, summary };
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

/**
 * The shop in this process, counting requests; restarted on the same port between crawls.
 * @param {number} products
 */
function shop(products) {
  let requests = 0;
  /** @type {import('node:http').Server | null} */
  let server = null;
  let port = 0;
  return {
    get requests() { return requests; },
    get origin() { return `http://127.0.0.1:${port}`; },
    /** @param {{ changed?: number, lastmod?: string }} options */
    async start(options) {
      if (server) {
        server.closeAllConnections();
        await new Promise((resolve) => /** @type {import('node:http').Server} */ (server).close(resolve));
      }
      server = await startOrigin({ products, count: COUNT, port, host: '127.0.0.1', ...options, onRequest: () => { requests++; } });
      port = /** @type {import('node:net').AddressInfo} */ (server.address()).port;
      requests = 0;
    },
    async stop() {
      server?.closeAllConnections();
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
      server = null;
    },
  };
}

async function main() {
  const { values } = parseBenchArgs('changed-bench', {
    products: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    settle: { type: 'string', default: '0' },
  }, USAGE);
  const products = Number(values.products);
  const rounds = Number(values.rounds);
  const settle = Number(values.settle);
  for (const [name, value] of /** @type {const} */ ([['products', products], ['rounds', rounds]])) {
    if (!(Number.isInteger(value) && value > 0)) usageError('changed-bench', `--${name} must be a whole number > 0, got ${JSON.stringify(values[name])}`);
  }
  const totalPages = products + Math.ceil(products / COUNT);
  const base = await mkdtemp(path.join(os.tmpdir(), 'prerender-changed-bench-'));
  const origin = shop(products);
  /** @type {Record<string, { wallMs: number, cpuMs: number, peakRssMB: number, requests: number, summary: any }[]>} */
  const runs = { first: [], changed: [], fresh: [], 'dated (first)': [], dated: [], 'one page': [] };
  const changedList = [];
  for (let n = 1; n <= products; n++) if (isChangedProduct(n, CHURN)) changedList.push(n);
  try {
    for (let round = 1; round <= rounds; round++) {
      if (settle > 0) await delay(settle * 1000);
      const dir = path.join(base, `round-${round}`);
      mkdirSync(dir, { recursive: true });
      await origin.start({});
      const root = () => [`${origin.origin}/st/dir.asp`, '-i', '/st/dir.asp', '/st/product.asp', '--max-pages', String(totalPages + 10)];
      const measure = async (/** @type {string} */ name, /** @type {string[]} */ args, /** @type {string} */ out, cut = false) => {
        const before = origin.requests;
        const run = await runCrawler(args, out, cut);
        runs[name].push({ ...run, requests: origin.requests - before });
        process.stderr.write(`bench: round ${round}: ${name} ${(run.wallMs / 1000).toFixed(1)} s, ${origin.requests - before} requests, ${run.summary.churn.filesWritten} files written\n`);
      };
      const out = path.join(dir, 'out');
      await measure('first', root(), out);
      await origin.start({ changed: CHURN });
      const list = path.join(dir, 'changed.txt');
      writeFileSync(list, changedList.map((n) => `${origin.origin}/st/product.asp?SKUSetID=${n}`).join('\n') + '\n');
      await measure('changed', [...root(), '--changed', list, '--with-referrers'], out);
      await measure('one page', [`${origin.origin}/st/product.asp?SKUSetID=1`, '-i', '/st/product.asp', '--max-pages', '1'], path.join(dir, 'one'), true);
      await origin.start({});
      await measure('fresh', [...root(), '--fresh', '/st/product.asp', 'forever'], out);
      await origin.start({ lastmod: LONG_AGO });
      const dated = path.join(dir, 'dated');
      const sitemapArgs = () => [...root(), '--sitemap', `${origin.origin}/sitemap.xml`];
      await measure('dated (first)', sitemapArgs(), dated);
      await measure('dated', sitemapArgs(), dated);
      await rm(dir, { recursive: true, force: true });
    }
  } finally {
    await origin.stop();
    await rm(base, { recursive: true, force: true });
  }
  const firstWall = median(runs.first.map((run) => run.wallMs));
  const rows = Object.entries(runs).map(([scenario, list]) => ({
    scenario,
    wallS: median(list.map((run) => run.wallMs)) / 1000,
    share: median(list.map((run) => run.wallMs)) / firstWall,
    cpuS: median(list.map((run) => run.cpuMs)) / 1000,
    peakRssMB: median(list.map((run) => run.peakRssMB)),
    requests: median(list.map((run) => run.requests)),
    fetched: median(list.map((run) => run.summary.fetched ?? run.summary.pages)),
    carried: median(list.map((run) => (run.summary.carried ? run.summary.carried.fresh + run.summary.carried.listed + run.summary.carried.dated : 0))),
    filesWritten: median(list.map((run) => run.summary.churn.filesWritten)),
  }));
  const report = { date: new Date().toISOString(), cpu: cpuModel(), node: process.version, products, rounds, listed: changedList.length, rows };
  const lines = [
    `prerender changed-list / freshness benchmark, ${report.date.slice(0, 10)}, ${os.cpus().length} x ${report.cpu}, Node ${report.node}`,
    `shop: ${products} products (${totalPages} pages), no validators; ${changedList.length} products changed and listed; median of ${rounds}`,
    '',
    '| crawl | requests | pages fetched | carried | files written | time | % of first crawl | CPU s | peak RSS |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((row) => `| ${row.scenario} | ${row.requests} | ${row.fetched} | ${row.carried} | ${row.filesWritten} | ${row.wallS.toFixed(1)} s | ${(row.share * 100).toFixed(1)} % | ${row.cpuS.toFixed(2)} | ${row.peakRssMB.toFixed(0)} MB |`),
  ];
  const at = (/** @type {string} */ scenario) => /** @type {typeof rows[number]} */ (rows.find((row) => row.scenario === scenario));
  // The changed run's floor: start-up, and its requests at the first crawl's time a page, the carried pages free.
  const perPage = (at('first').wallS - at('one page').wallS) / totalPages;
  const floorS = at('one page').wallS + at('changed').requests * perPage;
  lines.push('', `floor of the changed run: one page's ${at('one page').wallS.toFixed(2)} s + ${at('changed').requests} requests x ${(perPage * 1000).toFixed(3)} ms = ${floorS.toFixed(2)} s, ${(floorS / at('first').wallS * 100).toFixed(1)} % of the first crawl`);
  const targets = [
    { target: '--changed --with-referrers takes at most 5 % of the first crawl', pass: at('changed').share <= 0.05 },
    { target: '--fresh ... forever but the roots takes at most 10 % of the first crawl', pass: at('fresh').share <= 0.10 },
    { target: '--fresh asks for the roots only (the dir.asp pages)', pass: at('fresh').requests === Math.ceil(products / COUNT) },
    { target: 'sitemap dates: the re-crawl asks for the sitemap and the roots only', pass: at('dated').requests === Math.ceil(products / COUNT) + 1 },
  ];
  lines.push('', ...targets.map((t) => `${t.pass ? 'PASS' : 'FAIL'}  ${t.target}`));
  process.stdout.write(lines.join('\n') + '\n');
  mkdirSync(path.join(HERE, 'results'), { recursive: true });
  writeFileSync(path.join(HERE, 'results', `changed-${products}-${report.date.replace(/[:.]/g, '-')}.json`), JSON.stringify({ ...report, targets, runs }, null, 2));
  return targets.every((t) => t.pass) ? 0 : 1;
}

main().then((code) => { process.exitCode = code; }, (error) => {
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  process.exitCode = 2;
});
