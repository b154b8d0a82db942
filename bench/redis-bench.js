#!/usr/bin/env node
// @ts-check
/**
 * The shared frontier's costs, against a real redis-server started here
 * (--save "" --appendonly no):
 *
 *   node bench/redis-bench.js [--pages 5000] [--urls 1000000] [--products 10000] [--latency-ms 50] [--rounds 1] [--skip frontier,memory,scaling] [--prerender DIR]
 *
 * 1. frontier: `--pages` pages through the real RedisFrontier, 8 at a time
 *    (take, then per page: its 50 outlinks added, its record put, done), as
 *    the crawl's pump does. Redis CPU per page (INFO cpu, user + sys of the
 *    server) and commands per page (INFO stats total_commands_processed; each
 *    script call is one command, and one round trip at most).
 *    Then the same with the feed read (a coordinator writing pages while the
 *    crawl runs: each result carries its links, read every 50 ms).
 * 2. memory: `--urls` synthetic URLs of a catalogue at rest, as a finished
 *    crawl leaves them: one `rec` hash entry each, the seen-set byte and the
 *    packed done record (INFO memory used_memory, after minus before, per URL).
 * 3. scaling: bench/origin.js --latency-ms 50 with `--products` products;
 *    (`--processes 1,2,4`; `--threads a,b` runs each count once per value of
 *    every process's --threads, interleaved)
 *    the coordinator alone, then with 1 and 3 workers (1, 2, 4 processes) at
 *    -c 8 each; pages/s end to end (wall time of the coordinator, spawn to
 *    exit) and of the crawl phase (seeding to the completion barrier, from
 *    the crawl's meta in Redis), the finishing time (the coordinator alone)
 *    and CPU per page of all processes. Rounds interleave (1, 2, 4, 1, 2, 4…).
 *    Each process's CPU and peak RSS are its getrusage at exit (bench/lib/rusage.js);
 *    redis-server's CPU is INFO cpu's, after minus before.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startRedis } from '../test/helpers/redis.js';
import { connectRedis, keyPrefix } from '../lib/distributed/connection.js';
import { RedisFrontier, encodeRecord } from '../lib/distributed/redis-frontier.js';
import { SharedCrawl } from '../lib/distributed/shared.js';
import { newRecord } from '../lib/store/records.js';
import { checkNumbers, parseBenchArgs, usageError } from './lib/args.js';
import { cpuOf } from './lib/proc.js';

const HERE = import.meta.dirname;
const RUSAGE = pathToFileURL(path.join(HERE, 'lib', 'rusage.js')).href;

const USAGE = `usage: node bench/redis-bench.js [--pages 5000] [--urls 1000000] [--products 10000] [--latency-ms 50] [--rounds 1] [--skip frontier,memory,scaling]
The shared frontier's costs, against a real redis-server started here (--save "" --appendonly no):
  --pages N          frontier: N pages through the real RedisFrontier, 8 at a time, as the
                     crawl's pump does; Redis CPU and commands per page (default 5000)
  --urls N           memory: N synthetic URLs of a catalogue at rest, as a finished crawl
                     leaves them; Redis memory per URL (default 1000000)
  --products N       scaling: products of bench/origin.js (default 10000)
  --latency-ms N     scaling: bench/origin.js --latency-ms (default 50)
  --rounds N         scaling: rounds, interleaved (default 1)
  --processes LIST   scaling: numbers of processes, the coordinator and workers at -c 8 each (default 1,2,4)
  --threads LIST     scaling: runs each count once per value of every process's --threads,
                     interleaved (default: their own default)
  --skip LIST        parts not to run: frontier, memory, scaling (default: none)
  --prerender DIR    scaling: the checkout whose bin/prerender.js runs the processes
                     (default: this repository); frontier and memory use this repository's lib/`;

const { values } = parseBenchArgs('redis-bench', {
  pages: { type: 'string', default: '5000' },
  urls: { type: 'string', default: '1000000' },
  products: { type: 'string', default: '10000' },
  'latency-ms': { type: 'string', default: '50' },
  rounds: { type: 'string', default: '1' },
  skip: { type: 'string', default: '' },
  processes: { type: 'string', default: '1,2,4' },
  threads: { type: 'string', default: '' },
  prerender: { type: 'string', default: path.join(HERE, '..') },
}, USAGE);
const BIN = path.join(path.resolve(values.prerender), 'bin', 'prerender.js');
checkNumbers('redis-bench', values, ['pages', 'urls', 'products', 'latency-ms', 'rounds'], ['processes']);
const skip = new Set(String(values.skip).split(',').filter(Boolean));
for (const part of skip) if (!['frontier', 'memory', 'scaling'].includes(part)) usageError('redis-bench', `--skip takes frontier, memory, scaling, got ${JSON.stringify(part)}`);

/** @param {import('ioredis').Redis} redis @param {string} section */
async function info(redis, section) {
  const text = await redis.info(section);
  /** @type {Record<string, string>} */
  const fields = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/** A product URL of the synthetic catalogue. @param {number} n */
const product = (n) => `http://shop.example/st/product.asp?SKUSetID=${n}`;

/**
 * A page's record as the crawl leaves it in Redis: what the fetch learnt
 * (the file, size and sha256 of the written page are not kept there).
 * @param {number} n
 */
function doneRecord(n) {
  const record = newRecord(product(n), 'navigation', null);
  const hex = (/** @type {number} */ seed) => (seed.toString(16).padStart(8, '0')).repeat(8);
  Object.assign(record, {
    state: 'done', referrers: undefined, status: 200, contentType: 'text/html; charset=windows-1252', type: 'html', charset: 'windows-1252',
    etag: `"${n.toString(16)}-5d8c72a5"`, wanted: `st/product${n}.htm`, body: hex(n), scan: hex(n + 1), change: 'new',
  });
  return record;
}

/**
 * @param {import('ioredis').Redis} redis
 * @param {number} pages
 * @param {boolean} feed a coordinator reads the feed meanwhile (every 50 ms), and each result carries its 50 links
 */
async function frontierCost(redis, pages, feed) {
  const prefix = keyPrefix(feed ? 'bench-frontier-feed' : 'bench-frontier');
  await redis.set(`${prefix}config`, '{}');
  await redis.hset(`${prefix}meta`, 'phase', 'seeding');
  const frontier = new RedisFrontier(/** @type {any} */ (redis), prefix, { maxPages: 10_000_000, leaseMs: 30_000, originConcurrency: 64, intervalMs: 0, maxDeliveries: 3 }, { seeder: true });
  await frontier.add([{ key: product(0), kind: 'navigation', referrer: null }]);
  // Commands the client sends (each at most one round trip; auto-pipelining may send several in one).
  let sent = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = /** @type {any} */ ((/** @type {any[]} */ ...args) => {
    sent++;
    return send(.../** @type {[any]} */ (args));
  });
  if (feed) await redis.hset(`${prefix}meta`, 'coord', frontier.worker);
  const reader = feed ? new SharedCrawl(/** @type {any} */ (redis), prefix, frontier, /** @type {any} */ (null), '', 30_000).feed() : null;
  let fed = 0;
  let reading = true;
  if (reader) await reader.read(60_000, 0);
  const readLoop = (async () => {
    while (reader && reading) {
      fed += (await reader.read(60_000, 512)).length;
      await new Promise((resolve) => { setTimeout(resolve, 50); });
    }
  })();
  const before = { cpu: await info(redis, 'cpu'), stats: await info(redis, 'stats') };
  sent = 0;
  let done = 0;
  const started = performance.now();
  while (done < pages) {
    const keys = await frontier.take(8);
    if (keys.length === 0) break;
    await Promise.all(keys.map(async (key) => {
      const n = Number(key.slice(key.indexOf('=') + 1));
      // 50 outlinks into a catalogue of 2 x pages products: early pages find many new URLs, later ones mostly known ones
      const links = Array.from({ length: 50 }, (_, j) => ({ key: product((n * 7 + j * 13 + 1) % (2 * pages)), kind: /** @type {const} */ ('navigation'), referrer: key }));
      await frontier.add(links);
      const record = /** @type {import('../lib/store/records.js').PageRecord} */ (await frontier.records.get(key));
      Object.assign(record, doneRecord(n));
      await frontier.records.put(record);
      await frontier.done(key, { page: true, linksTo: feed ? { keys: links.map((link) => link.key), never: new Set() } : undefined });
    }));
    done += keys.length;
  }
  reading = false;
  await readLoop;
  if (reader) fed += (await reader.read(60_000, 1_000_000)).length;
  const wallMs = performance.now() - started;
  const clientCommands = sent;
  redis.sendCommand = send;
  const after = { cpu: await info(redis, 'cpu'), stats: await info(redis, 'stats') };
  const cpuMs = (Number(after.cpu.used_cpu_user) + Number(after.cpu.used_cpu_sys) - Number(before.cpu.used_cpu_user) - Number(before.cpu.used_cpu_sys)) * 1000;
  const serverCommands = Number(after.stats.total_commands_processed) - Number(before.stats.total_commands_processed) - 2; // the two INFO calls
  await frontier.stop();
  // What stays per URL once the crawl is done: the rec hash; the rest only while URLs are queued or leased.
  /** @type {Record<string, number>} */
  const entries = {};
  for (const key of await redis.keys(`${prefix}*`)) {
    const type = await redis.type(key);
    entries[key.slice(prefix.length)] = type === 'hash' ? await redis.hlen(key) : type === 'zset' ? await redis.zcard(key) : type === 'set' ? await redis.scard(key) : type === 'list' ? await redis.llen(key) : 1;
  }
  return {
    entriesAfterRun: entries,
    pages: done, redisCpuMsPerPage: cpuMs / done, roundTripsPerPage: clientCommands / done,
    commandsInScriptsPerPage: serverCommands / done, pagesPerSecondOneClient: done / (wallMs / 1000),
    ...(feed ? { fed } : {}),
  };
}

async function memoryPerUrl(redis, urls) {
  const prefix = keyPrefix('bench-memory');
  const base = Number((await info(redis, 'memory')).used_memory);
  // One hash entry per URL: its place in the seen-set (first byte) and its record (packed.js), as DONE leaves it.
  for (let start = 0; start < urls; start += 10_000) {
    const batch = redis.pipeline();
    for (let n = start; n < Math.min(urls, start + 10_000); n++) batch.hset(`${prefix}rec`, product(n), encodeRecord(doneRecord(n)));
    await batch.exec();
  }
  const all = Number((await info(redis, 'memory')).used_memory);
  const sample = encodeRecord(doneRecord(123_456));
  await redis.unlink(`${prefix}rec`);
  return { urls, totalBytesPerUrl: (all - base) / urls, storedValueBytes: sample.length };
}

/**
 * Time the main thread of a process has spent runnable but waiting for a CPU
 * (/proc/<pid>/schedstat, second field), in ms: on a loaded machine, what it lost to the others.
 * @param {number} pid
 */
function runQueueWaitMs(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return null;
  }
}

/**
 * @param {string[]} args
 * @param {string} usageFile where the process writes its getrusage at exit
 * @returns {Promise<{ code: number | null, cpuMs: number, peakRssMB: number | null, waitMs: number, stdout: string, stderr: string }>}
 */
function runNode(args, usageFile) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', RUSAGE, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PRERENDER_BENCH_RUSAGE: usageFile } });
    let stdout = '';
    let stderr = '';
    let cpuMs = 0;
    let waitMs = 0;
    const sample = setInterval(() => {
      const cpu = child.pid ? cpuOf(child.pid) : null;
      if (cpu) cpuMs = cpu.userMs + cpu.systemMs;
      const wait = child.pid ? runQueueWaitMs(child.pid) : null;
      if (wait !== null) waitMs = wait;
    }, 50);
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('close', (code) => {
      clearInterval(sample);
      // The exact figures at exit; the last /proc sample when the process left none.
      let peakRssMB = null;
      try {
        const usage = JSON.parse(readFileSync(usageFile, 'utf8'));
        cpuMs = (usage.userCPUTime + usage.systemCPUTime) / 1000;
        peakRssMB = usage.maxRSS / 1024;
      } catch { /* keep the sampled CPU */ }
      resolve({ code, cpuMs, peakRssMB, waitMs, stdout, stderr });
    });
  });
}

/** redis-server's CPU so far (user + sys), in ms. @param {import('ioredis').Redis} redis */
async function redisCpuMs(redis) {
  const cpu = await info(redis, 'cpu');
  return (Number(cpu.used_cpu_user) + Number(cpu.used_cpu_sys)) * 1000;
}

/**
 * @param {import('ioredis').Redis} redis
 * @param {string} redisUrl
 * @param {number} products
 * @param {number} latencyMs
 * @param {number} rounds
 */
async function scaling(redis, redisUrl, products, latencyMs, rounds) {
  const origin = spawn(process.execPath, [path.join(HERE, 'origin.js'), '--products', String(products), '--count', '1000', '--port', '0', '--latency-ms', String(latencyMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve) => origin.stdout.once('data', (chunk) => resolve(String(chunk).trim())));
  const counts = String(values.processes).split(',').map(Number);
  // --threads a,b: each count of processes once per value of every process's --threads, interleaved (default: their own default).
  const threadValues = values.threads ? String(values.threads).split(',') : [''];
  /** @type {Record<string, { pagesPerSecond: number, crawlPagesPerSecond: number, finishSeconds: number, cpuMsPerPage: number, redisCpuMsPerPage: number, peakRssMB: (number | null)[], cpuWaitMsPerPage: number }[]>} */
  const results = {};
  try {
    for (let round = 0; round < rounds; round++) {
      for (const processes of counts) for (const threads of threadValues) {
        const key = threads === '' ? String(processes) : `${processes}/threads ${threads}`;
        const extra = threads === '' ? [] : ['--threads', threads];
        const out = await mkdtemp(path.join(os.tmpdir(), 'prerender-redis-bench-'));
        const usageDir = await mkdtemp(path.join(os.tmpdir(), 'prerender-redis-rusage-'));
        const id = `bench-${processes}-${round}-${Date.now()}`;
        const redisCpuBefore = await redisCpuMs(redis);
        const started = performance.now();
        const runs = await Promise.all([
          runNode([BIN, 'crawl', `${url}/st/dir.asp`, '-i', '/st/dir.asp', '/st/product.asp', '-o', out, '-c', '8', '-q', '--json', '--frontier', redisUrl, '--crawl-id', id, ...extra], path.join(usageDir, 'coordinator.json')),
          ...Array.from({ length: processes - 1 }, (_, n) => runNode([BIN, 'worker', '--frontier', redisUrl, '--crawl-id', id, '-c', '8', '-q', ...extra], path.join(usageDir, `worker-${n + 1}.json`))),
        ]);
        const redisCpu = (await redisCpuMs(redis)) - redisCpuBefore;
        await rm(usageDir, { recursive: true, force: true });
        const wallMs = performance.now() - started;
        if (runs.some((r) => r.code !== 0)) throw new Error(`a process failed: ${runs.map((r) => r.stderr).join(' ')}`);
        const pages = JSON.parse(runs[0].stdout).pages;
        const cpuMs = runs.reduce((sum, r) => sum + r.cpuMs, 0);
        // The crawl phase (seeding to the completion barrier) and the finishing (names, rewrite, write: the coordinator alone).
        const meta = await redis.hgetall(`${keyPrefix(id)}meta`);
        const crawlMs = Number(meta.finishAt) - Number(meta.startedAt);
        const finishSeconds = (Number(meta.finishedAt) - Number(meta.finishAt)) / 1000;
        const waitMs = runs.reduce((sum, r) => sum + r.waitMs, 0);
        const peakRssMB = runs.map((r) => r.peakRssMB);
        (results[key] ??= []).push({ pagesPerSecond: pages / (wallMs / 1000), crawlPagesPerSecond: pages / (crawlMs / 1000), finishSeconds, cpuMsPerPage: cpuMs / pages, redisCpuMsPerPage: redisCpu / pages, peakRssMB, cpuWaitMsPerPage: waitMs / pages });
        const rss = peakRssMB.map((mb) => (mb === null ? '?' : mb.toFixed(0))).join(' + ');
        process.stderr.write(`scaling: ${key} process(es), ${pages} pages, ${(pages / (wallMs / 1000)).toFixed(0)} pages/s end to end, ${(pages / (crawlMs / 1000)).toFixed(0)} pages/s crawl phase, finish ${finishSeconds.toFixed(1)} s, ${(cpuMs / pages).toFixed(2)} ms CPU/page (+ ${(redisCpu / pages).toFixed(2)} redis-server), peak RSS ${rss} MB, ${(waitMs / pages).toFixed(2)} ms/page waiting for a CPU, load ${os.loadavg()[0].toFixed(1)}\n`);
        await rm(out, { recursive: true, force: true });
      }
    }
  } finally {
    origin.kill('SIGTERM');
  }
  /** @param {number[]} list */
  const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  const summary = Object.fromEntries(Object.entries(results).map(([n, list]) => [n, {
    pagesPerSecond: median(list.map((r) => r.pagesPerSecond)), crawlPagesPerSecond: median(list.map((r) => r.crawlPagesPerSecond)),
    finishSeconds: median(list.map((r) => r.finishSeconds)), cpuMsPerPage: median(list.map((r) => r.cpuMsPerPage)),
    redisCpuMsPerPage: median(list.map((r) => r.redisCpuMsPerPage)),
    cpuWaitMsPerPage: median(list.map((r) => r.cpuWaitMsPerPage)), rounds: list,
  }]));
  /** @param {number} n @param {'pagesPerSecond' | 'crawlPagesPerSecond'} field */
  const speedup = (n, field) => (summary[n] && summary[1] ? summary[n][field] / summary[1][field] : undefined);
  return {
    products, latencyMs, summary,
    speedup2: speedup(2, 'pagesPerSecond'), speedup4: speedup(4, 'pagesPerSecond'),
    crawlPhaseSpeedup2: speedup(2, 'crawlPagesPerSecond'), crawlPhaseSpeedup4: speedup(4, 'crawlPagesPerSecond'),
  };
}

const server = await startRedis();
const redis = await connectRedis(server.url, { timeoutSeconds: 10 });
try {
  /** @type {Record<string, unknown>} */
  const report = { cpu: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() };
  if (!skip.has('frontier')) report.frontier = await frontierCost(redis, Number(values.pages), false);
  // The same with the coordinator reading the feed (pages written while the crawl runs).
  if (!skip.has('frontier')) report.frontierWithFeed = await frontierCost(redis, Number(values.pages), true);
  if (!skip.has('memory')) report.memory = await memoryPerUrl(redis, Number(values.urls));
  if (!skip.has('scaling')) report.scaling = await scaling(redis, server.url, Number(values.products), Number(values['latency-ms']), Number(values.rounds));
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
} finally {
  await redis.quit();
  await server.stop();
}
