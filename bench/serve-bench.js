#!/usr/bin/env node
// @ts-check
/**
 * The serve benchmark (issue 12):
 *
 *   node bench/serve-bench.js [--pages 2000] [--duration 5] [--warmup 1] [--rounds 3]
 *                             [--connections 32] [--memory-pages 0] [--skip-speed] [--skip-prices]
 *                             [--servers nginx,floor,sirv,prerender] [--baseline DIR]
 *
 * 1. Speed: a tree of PAGES product pages of ~15 KB with one or two price
 *    slots (st/productN.htm) and PAGES plain pages of ~15 KB without slots
 *    (info/pageN.html), a JSON price file. Three servers, each its own
 *    process, on 127.0.0.1: nginx (started here from a temp config: one
 *    worker, sendfile on, access_log off), sirv (production mode), and
 *    `prerender serve` with the JSON prices. nginx and sirv serve the files
 *    as they are (unfilled). For filled pages and for plain pages, rounds
 *    interleaved (nginx, sirv, prerender, nginx, ...): autocannon in this
 *    process at --connections for --duration s after a --warmup, identity
 *    encoding. Per run: req/s, p99, and the server's CPU per request
 *    (utime + stime of its process tree from /proc over the run / requests):
 *    on 2 cores the load generator caps the fast servers, so CPU per request
 *    is the fairer figure. Medians of the rounds. `floor` is a bare node:http
 *    server sending one fixed 15,000-byte buffer: what any node:http server
 *    pays per request. --baseline DIR adds 'prerender-before', another
 *    checkout's serve-servers.js (e.g. a `git worktree` of main), interleaved.
 *    --servers picks the servers (nginx always).
 * 2. Prices (fixtures/price-endpoint.js, its own process, 50 ms per answer):
 *    a 200-slot page (one SKU per request, and {skus} batches); 1,000
 *    concurrent requests over 2,000 pages on a cold cache; the endpoint down
 *    (every page within 300 ms?).
 * 3. Memory (--memory-pages N): N product pages, `prerender serve` with the
 *    default budget; a gzip pass over every page, then br and identity
 *    passes over 20,000; peak RSS against budget + 150 MB.
 *
 * Prints the tables (markdown) and writes bench/results/serve-*.json.
 * Exit status: 0 the targets met, 1 a target missed, 2 the run failed.
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { productPieces, writeTree } from '../fixtures/serve/tree.js';
import { requestAll, writeLargeTree } from '../fixtures/serve/load.js';
import { checkNumbers, parseBenchArgs, usageError } from './lib/args.js';
import { freePort, startNginx } from './lib/nginx.js';
import { machineBusyMs, memoryOf, treeCpuMs } from './lib/proc.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
const ZIPS = ['10001', '90210', '60601', '94103', '1234 AB'];
const MiB = 1024 * 1024;

const USAGE = `usage: node bench/serve-bench.js [--pages 2000] [--duration 5] [--warmup 1] [--rounds 3]
                                 [--connections 32] [--memory-pages 0] [--skip-speed] [--skip-prices]
                                 [--servers nginx,floor,sirv,prerender] [--baseline DIR]
The serve benchmark: 1. speed of nginx, floor, sirv and \`prerender serve\` (filled and
plain pages, autocannon); 2. prices (a 200-slot page, 1,000 concurrent requests,
the endpoint down); 3. memory (--memory-pages). Prints the tables (markdown) and
writes bench/results/serve-*.json.
  --pages N          product pages with price slots, and as many plain pages (default 2000)
  --duration S       autocannon seconds a run (default 5)
  --warmup S         seconds of warm-up before a run (default 1)
  --rounds N         rounds, servers interleaved, medians of the rounds (default 3)
  --connections N    autocannon connections (default 32)
  --memory-pages N   memory: N product pages, \`prerender serve\` with the default budget (default 0: skipped)
  --skip-speed       skip the speed part
  --skip-prices      skip the prices part
  --servers LIST     servers to measure: nginx, floor, sirv, prerender (nginx always; default all)
  --baseline DIR     another checkout of prerender (its bench/serve-servers.js), measured as 'prerender-before'`;

const { values: args } = parseBenchArgs('serve-bench', {
  pages: { type: 'string', default: '2000' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '1' },
  connections: { type: 'string', default: '32' },
  rounds: { type: 'string', default: '3' },
  'memory-pages': { type: 'string', default: '0' },
  'skip-speed': { type: 'boolean', default: false },
  'skip-prices': { type: 'boolean', default: false },
  servers: { type: 'string', default: 'nginx,floor,sirv,prerender' },
  // another checkout of prerender (its bench/serve-servers.js), measured as 'prerender-before'
  baseline: { type: 'string' },
}, USAGE);
checkNumbers('serve-bench', args, ['pages', 'duration', 'warmup', 'connections', 'rounds', 'memory-pages']);
for (const server of String(args.servers).split(',').filter(Boolean)) {
  if (!['nginx', 'floor', 'sirv', 'prerender'].includes(server)) usageError('serve-bench', `--servers takes nginx, floor, sirv, prerender, got ${JSON.stringify(server)}`);
}
const PAGES = Number(args.pages);
const DURATION = Number(args.duration);
const WARMUP = Number(args.warmup);
const CONNECTIONS = Number(args.connections);
const ROUNDS = Number(args.rounds);
const MEMORY_PAGES = Number(args['memory-pages']);

/** Builds (or reuses) the speed tree: product pages with slots, plain pages, a price file. */
function ensureTree() {
  const dir = path.join(HERE, 'results', `serve-tree-${PAGES}-v2`);
  const prices = path.join(HERE, 'results', `serve-prices-${PAGES}.json`);
  if (fs.existsSync(path.join(dir, 'prerender-manifest.json')) && fs.existsSync(prices)) return { dir, prices };
  fs.rmSync(dir, { recursive: true, force: true });
  writeLargeTree(dir, { pages: PAGES, plain: PAGES, size: 15_000 });
  /** @type {Record<string, Record<string, string>>} */
  const table = {};
  for (let n = 1; n <= PAGES; n++) {
    table[`SKU-${n}`] = { '*': `$${n}.99` };
    table[`SKU-${n}-CASE`] = { '*': `$${n}.49` };
    for (const zip of ZIPS) {
      table[`SKU-${n}`][zip] = `$${n}.99 (${zip})`;
      table[`SKU-${n}-CASE`][zip] = `$${n}.49 (${zip})`;
    }
  }
  fs.writeFileSync(prices, JSON.stringify(table));
  return { dir, prices };
}

/**
 * Starts a node child that prints `listening on URL`.
 * @param {string[]} argv
 * @returns {Promise<{ url: string, pid: number, stop: () => Promise<void> }>}
 */
async function start(argv) {
  const child = spawn(process.execPath, argv, { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${argv.join(' ')}: not listening within 120 s`)), 120_000);
    lines.on('line', (line) => {
      const m = /^listening on (http:\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`${argv.join(' ')} exited with ${code}`)));
  });
  return {
    url,
    pid: /** @type {number} */ (child.pid),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * @param {string} prefix
 * @param {(n: number) => string} file
 */
function requestList(prefix, file) {
  void prefix;
  return Array.from({ length: PAGES }, (_, i) => ({
    method: /** @type {const} */ ('GET'),
    path: file(i + 1),
    headers: { cookie: `session=abc123; zip=${ZIPS[i % ZIPS.length].replace(' ', '%20')}` },
  }));
}

/**
 * @param {{ url: string, pid: number }} server
 * @param {number} seconds
 * @param {ReturnType<typeof requestList>} requests
 */
async function load(server, seconds, requests) {
  let client = 0;
  const cpuBefore = treeCpuMs(server.pid);
  const busyBefore = machineBusyMs();
  const result = await autocannon({
    url: server.url,
    connections: CONNECTIONS,
    duration: seconds,
    requests,
    setupClient: (/** @type {any} */ c) => {
      const offset = Math.floor((client++ * requests.length) / CONNECTIONS);
      c.setRequests([...requests.slice(offset), ...requests.slice(0, offset)]);
    },
  });
  const cpuMs = treeCpuMs(server.pid) - cpuBefore;
  const busyMs = machineBusyMs() - busyBefore;
  if (result.non2xx > 0) throw new Error(`${server.url}: ${result.non2xx} non-2xx answers`);
  // Errors (client timeouts, 10 s) are counted, not fatal: on a loaded machine some requests starve.
  return {
    errors: result.errors + result.timeouts,
    rps: result.requests.average,
    p99: result.latency.p99,
    total: result.requests.total,
    cpuUsPerRequest: (cpuMs * 1000) / Math.max(1, result.requests.total),
    machineBusy: busyMs / (seconds * 1000 * os.cpus().length),
  };
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function speed() {
  const { dir, prices } = ensureTree();
  const wanted = new Set(String(args.servers).split(','));
  wanted.add('nginx'); // the reference
  /** @type {Record<string, { url: string, pid: number, stop: () => Promise<void> }>} */
  const servers = {};
  servers.nginx = await startNginx(dir);
  // bare node:http sending one fixed 15,000-byte buffer: the floor of any node:http server
  if (wanted.has('floor')) servers.floor = await start(['bench/serve-servers.js', 'floor', '15000']);
  if (wanted.has('sirv')) servers.sirv = await start(['bench/serve-servers.js', 'sirv', dir]);
  if (wanted.has('prerender')) servers.prerender = await start(['bench/serve-servers.js', 'prerender', dir, prices]);
  if (args.baseline) servers['prerender-before'] = await start([path.resolve(args.baseline, 'bench/serve-servers.js'), 'prerender', dir, prices]);
  const scenarios = {
    filled: requestList('st', (n) => `/st/product${n}.htm`),
    plain: requestList('info', (n) => `/info/page${n}.html`),
  };
  /** @type {Record<string, Record<string, Awaited<ReturnType<typeof load>>[]>>} */
  const runs = { filled: {}, plain: {} };
  for (const byServer of Object.values(runs)) for (const name of Object.keys(servers)) byServer[name] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [scenario, requests] of Object.entries(scenarios)) {
        for (const [name, server] of Object.entries(servers)) {
          await load(server, WARMUP, requests);
          const r = await load(server, DURATION, requests);
          runs[scenario][name].push(r);
          process.stderr.write(`round ${round} ${scenario.padEnd(6)} ${name.padEnd(9)} ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${String(r.p99).padStart(3)} ms  ${r.cpuUsPerRequest.toFixed(1).padStart(6)} us CPU/req  machine busy ${(100 * r.machineBusy).toFixed(0)}%  errors ${r.errors}  load ${os.loadavg()[0].toFixed(0)}\n`);
        }
      }
    }
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
  }
  /** @type {Record<string, Record<string, { rps: number, p99: number, cpuUsPerRequest: number, machineBusy: number }>>} */
  const medians = {};
  for (const [scenario, byServer] of Object.entries(runs)) {
    medians[scenario] = {};
    for (const [name, list] of Object.entries(byServer)) {
      medians[scenario][name] = {
        rps: median(list.map((r) => r.rps)),
        p99: median(list.map((r) => r.p99)),
        cpuUsPerRequest: median(list.map((r) => r.cpuUsPerRequest)),
        machineBusy: median(list.map((r) => r.machineBusy)),
      };
    }
  }
  const lines = ['| pages | server | req/s | p99 | server CPU per request | vs nginx CPU | vs sirv req/s |', '| --- | --- | ---: | ---: | ---: | ---: | ---: |'];
  for (const [scenario, byServer] of Object.entries(medians)) {
    for (const [name, m] of Object.entries(byServer)) {
      const what = name === 'floor' ? 'one fixed 15,000-byte buffer' : scenario === 'filled' ? (name.startsWith('prerender') ? 'with slots, filled' : 'with slots, unfilled') : 'plain (no slots)';
      const vsSirv = byServer.sirv ? `${((100 * m.rps) / byServer.sirv.rps).toFixed(0)}%` : '-';
      lines.push(`| ${what} | ${name === 'floor' ? 'node:http floor' : name} | ${m.rps.toFixed(0)} | ${m.p99} ms | ${m.cpuUsPerRequest.toFixed(1)} µs | ${(m.cpuUsPerRequest / byServer.nginx.cpuUsPerRequest).toFixed(2)}× | ${vsSirv} |`);
    }
  }
  const targets = medians.filled.prerender
    ? [
        { name: 'plain pages: prerender CPU/request <= 2x nginx', ok: medians.plain.prerender.cpuUsPerRequest <= 2 * medians.plain.nginx.cpuUsPerRequest },
        { name: 'filled pages: prerender CPU/request <= 1.5x nginx (unfilled)', ok: medians.filled.prerender.cpuUsPerRequest <= 1.5 * medians.filled.nginx.cpuUsPerRequest },
      ]
    : [];
  return { runs, medians, table: lines.join('\n'), targets };
}

/**
 * Many GETs at once, each on its own connection.
 * @param {string} base
 * @param {string[]} targets
 * @param {string} zip
 */
function burst(base, targets, zip) {
  return Promise.all(targets.map((target) => new Promise((resolve) => {
    const started = performance.now();
    http.get(`${base}${target}`, { agent: false, headers: { cookie: `zip=${zip}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - started }));
    }).on('error', () => resolve({ status: 0, body: '', ms: performance.now() - started }));
  })));
}

async function pricesUnderLoad() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-bench-prices-'));
  /** @type {import('../fixtures/serve/tree.js').PageSpec[]} */
  const specs = [];
  /** @type {import('../fixtures/serve/tree.js').Piece[]} */
  const list = ['<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><ul>\n'];
  for (let i = 1; i <= 200; i++) list.push(`<li>${i}: <span class="p">`, { sku: `SKU-${i}` }, '</span></li>\n');
  list.push('</ul></body></html>\n');
  specs.push({ file: 'list200.html', pieces: list });
  for (let n = 1; n <= 2000; n++) specs.push({ file: `st/product${n}.htm`, pieces: productPieces(n, { size: 15_000 }) });
  writeTree(dir, specs);
  const endpoint = await start(['fixtures/price-endpoint.js', '--delay', '50']);
  const single = `${endpoint.url}/price.asp?sku={sku}&zip={zip}`;
  const batch = `${endpoint.url}/prices.asp?skus={skus}&zip={zip}`;
  /** @type {Record<string, unknown>} */
  const out = {};
  const lines = ['| case | result |', '| --- | --- |'];
  try {
    for (const [label, template] of [['one SKU per request', single], ['{skus} batches', batch]]) {
      const server = await start(['bench/serve-servers.js', 'prerender', dir, template]);
      try {
        const [page] = /** @type {{ body: string, ms: number }[]} */ (await burst(server.url, ['/list200.html'], '10001'));
        const priced = [...page.body.matchAll(/<span class="p">\$[^<]+<\/span>/g)].length;
        out[`slots200 ${label}`] = { priced, ms: page.ms };
        lines.push(`| 200-slot page, 50 ms endpoint, ${label} | ${priced}/200 prices, ${page.ms.toFixed(0)} ms |`);
      } finally {
        await server.stop();
      }
      const cold = await start(['bench/serve-servers.js', 'prerender', dir, template]);
      try {
        const targets = Array.from({ length: 1000 }, (_, i) => `/st/product${2 * i + 1 + (i % 2)}.htm`);
        const answers = /** @type {{ status: number, body: string, ms: number }[]} */ (await burst(cold.url, targets, '10001'));
        const real = answers.filter((a) => /<span class="amount">\$\d+\.99 \(10001\)<\/span>/.test(a.body)).length;
        const p99 = median([...answers.map((a) => a.ms)].sort((a, b) => a - b).slice(Math.floor(answers.length * 0.98)));
        out[`burst ${label}`] = { real, total: answers.length, p99 };
        lines.push(`| 1,000 concurrent requests over 2,000 pages, cold cache, ${label} | ${((100 * real) / answers.length).toFixed(1)}% real prices, p99 ${p99.toFixed(0)} ms |`);
      } finally {
        await cold.stop();
      }
    }
    const downTemplate = `http://127.0.0.1:${await freePort()}/price.asp?sku={sku}&zip={zip}`;
    const down = await start(['bench/serve-servers.js', 'prerender', dir, downTemplate]);
    try {
      /** @type {{ status: number, body: string, ms: number }[]} */
      const answers = [];
      // 1,000 requests, 50 at a time (steady traffic, not a connection storm)
      for (let i = 0; i < 1000; i += 50) {
        answers.push(.../** @type {{ status: number, body: string, ms: number }[]} */ (await burst(down.url, Array.from({ length: 50 }, (_, j) => `/st/product${i + j + 1}.htm`), '10001')));
      }
      const ok = answers.filter((a) => a.status === 200 && /<span class="amount"><\/span>/.test(a.body)).length;
      const slowest = Math.max(...answers.map((a) => a.ms));
      out.down = { ok, total: answers.length, slowest };
      lines.push(`| endpoint down (refused), 1,000 requests, 50 at a time | ${ok}/1000 served with the fallback, slowest ${slowest.toFixed(0)} ms |`);
    } finally {
      await down.stop();
    }
  } finally {
    await endpoint.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return { results: out, table: lines.join('\n') };
}

async function memory() {
  const dir = path.join(HERE, 'results', `serve-memory-tree-${MEMORY_PAGES}`);
  const started = Date.now();
  if (!fs.existsSync(path.join(dir, 'prerender-manifest.json'))) {
    writeLargeTree(dir, { pages: MEMORY_PAGES, size: 15_000 });
    process.stderr.write(`built ${MEMORY_PAGES} pages in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  }
  const pricesFile = path.join(dir, '..', `serve-memory-prices.json`);
  fs.writeFileSync(pricesFile, JSON.stringify({ 'SKU-1': { '*': '$1' } }));
  const budget = 512 * MiB;
  const server = await start(['bench/serve-servers.js', 'prerender', dir, pricesFile]);
  const port = Number(new URL(server.url).port);
  const pages = Array.from({ length: MEMORY_PAGES }, (_, i) => `/st/product${i + 1}.htm`);
  /** @type {Record<string, unknown>} */
  const steps = { start: memoryOf(server.pid) };
  try {
    await requestAll(port, pages, { encodings: ['gzip'], parallel: 16 });
    steps.gzipAll = memoryOf(server.pid);
    await requestAll(port, pages.slice(0, 20_000), { encodings: ['br', ''], parallel: 16 });
    steps.brIdentity20k = memoryOf(server.pid);
  } finally {
    await server.stop();
  }
  const hwmMB = Math.max(...Object.values(steps).map((m) => /** @type {{ hwmKB: number }} */ (m)?.hwmKB ?? 0)) / 1024;
  const line = `| ${MEMORY_PAGES.toLocaleString('en')} pages of 15 KB, default budget 512 MiB | start ${(/** @type {any} */ (steps.start).rssKB / 1024).toFixed(0)} MB; after gzip over all ${(/** @type {any} */ (steps.gzipAll).rssKB / 1024).toFixed(0)} MB; after br + identity over 20,000 ${(/** @type {any} */ (steps.brIdentity20k).rssKB / 1024).toFixed(0)} MB; peak ${hwmMB.toFixed(0)} MB (bound: ${(budget / MiB + 150).toFixed(0)} MB) |`;
  return { steps, hwmMB, ok: hwmMB < budget / MiB + 150, table: line };
}

async function main() {
  const cpu = execFileSync('lscpu', { encoding: 'utf8' }).split('\n').find((l) => l.startsWith('Model name'))?.replace(/^Model name:\s*/, '') ?? 'unknown';
  const header = `${cpu}, ${os.cpus().length} cores, Node ${process.version}, load average at start ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`;
  process.stderr.write(`${header}\n`);
  /** @type {Record<string, any>} */
  const summary = { date: new Date().toISOString(), machine: header, pages: PAGES, connections: CONNECTIONS, duration: DURATION, rounds: ROUNDS };
  const targets = [];
  if (!args['skip-speed']) {
    summary.speed = await speed();
    targets.push(...summary.speed.targets);
    process.stdout.write(`\n${summary.speed.table}\n`);
  }
  if (!args['skip-prices']) {
    summary.prices = await pricesUnderLoad();
    process.stdout.write(`\n${summary.prices.table}\n`);
  }
  if (MEMORY_PAGES > 0) {
    summary.memory = await memory();
    targets.push({ name: `RSS at ${MEMORY_PAGES} pages < budget + 150 MB`, ok: summary.memory.ok });
    process.stdout.write(`\n${summary.memory.table}\n`);
  }
  summary.loadAverageAtEnd = os.loadavg();
  for (const t of targets) process.stderr.write(`${t.ok ? 'PASS' : 'MISS'}  ${t.name}\n`);
  fs.mkdirSync(path.join(HERE, 'results'), { recursive: true });
  const file = path.join(HERE, 'results', `serve-${summary.date.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(summary, null, 2));
  process.stderr.write(`wrote ${path.relative(REPO, file)}\n`);
  process.exitCode = targets.every((t) => t.ok) ? 0 : 1;
}

main().catch((error) => {
  process.stderr.write(`serve-bench: ${error.stack ?? error}\n`);
  process.exitCode = 2;
});
