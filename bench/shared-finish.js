#!/usr/bin/env node
// @ts-check
/**
 * A shared crawl's two phases, timed apart: a coordinator and `--workers`
 * worker processes against bench/origin.js (in this process, no latency by
 * default) and a redis-server started here; prints the crawl phase (seeding
 * to the completion barrier) and the finishing (barrier to finished) from
 * the crawl's meta in Redis, and what each worker did.
 *
 *   node bench/shared-finish.js [--products 5000] [--workers 0] [--latency-ms 0] [--node-arg=--cpu-prof ...]
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startRedis } from '../test/helpers/redis.js';
import { startOrigin } from './origin.js';
import { connectRedis, keyPrefix } from '../lib/distributed/connection.js';
import { checkNumbers, parseBenchArgs } from './lib/args.js';

const BIN = path.join(import.meta.dirname, '..', 'bin', 'prerender.js');
const USAGE = `usage: node bench/shared-finish.js [--products 5000] [--workers 0] [--latency-ms 0] [--node-arg=--cpu-prof ...]
A shared crawl's two phases, timed apart: a coordinator and --workers worker
processes against bench/origin.js (in this process) and a redis-server started
here; prints the crawl phase (seeding to the completion barrier) and the
finishing (barrier to finished) from the crawl's meta in Redis, and what each
worker did.
  --products N     products in the shop (default 5000)
  --workers N      worker processes besides the coordinator (default 0)
  --latency-ms N   every origin answer waits N ms first (default 0)
  --node-arg ARG   extra node flag for the coordinator (repeatable, e.g. --node-arg=--cpu-prof)`;

const { values } = parseBenchArgs('shared-finish', {
  products: { type: 'string', default: '5000' },
  workers: { type: 'string', default: '0' },
  'latency-ms': { type: 'string', default: '0' },
  'node-arg': { type: 'string', multiple: true, default: [] },
}, USAGE);
checkNumbers('shared-finish', values, ['products', 'workers', 'latency-ms']);

const server = await startRedis();
const origin = await startOrigin({ products: Number(values.products), count: 1000, port: 0, host: '127.0.0.1', latencyMs: Number(values['latency-ms']) });
const url = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (origin.address()).port}`;
const out = await mkdtemp(path.join(os.tmpdir(), 'prerender-shared-finish-'));
const id = `finish-${Date.now()}`;
/**
 * @param {string[]} args
 * @param {string[]} [nodeArgs]
 * @returns {Promise<{ code: number | null, stdout: string }>}
 */
const run = (args, nodeArgs = []) => new Promise((resolve) => {
  const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  child.on('close', (code) => resolve({ code, stdout }));
});
try {
  const started = performance.now();
  const results = await Promise.all([
    run(['crawl', `${url}/st/dir.asp`, '-i', '/st/dir.asp', '/st/product.asp', '-o', out, '-c', '8', '-q', '--frontier', server.url, '--crawl-id', id], values['node-arg']),
    ...Array.from({ length: Number(values.workers) }, () => run(['worker', '--frontier', server.url, '--crawl-id', id, '-c', '8'])),
  ]);
  const wallMs = performance.now() - started;
  const redis = await connectRedis(server.url, { timeoutSeconds: 5 });
  const meta = await redis.hgetall(`${keyPrefix(id)}meta`);
  await redis.quit();
  process.stdout.write(`exit codes ${results.map((r) => r.code).join(' ')}; crawl phase ${Number(meta.finishAt) - Number(meta.startedAt)} ms, finishing ${Number(meta.finishedAt) - Number(meta.finishAt)} ms, end to end ${Math.round(wallMs)} ms\n`);
  for (const result of results.slice(1)) process.stdout.write(result.stdout);
} finally {
  await server.stop();
  origin.closeAllConnections();
  await new Promise((resolve) => origin.close(resolve));
  await rm(out, { recursive: true, force: true });
}
