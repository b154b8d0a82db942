#!/usr/bin/env node
// @ts-check
/**
 * What the HTTP of a re-crawl costs the main thread, and what it would cost
 * from a worker thread: conditional requests for every product of the bench
 * shop (all answered 304, as in a re-crawl at 0 % churn), made with undici on
 * the main thread, or on a worker thread that sends the answers back in
 * batches (one message per --batch-ms). The figure is the main thread's busy
 * time (event loop utilisation) per request: issue 13's lead for spreading a
 * re-crawl over both cores (BENCHMARKS.md).
 *
 *   node bench/loader-thread-bench.js [--products 20000] [--concurrency 8] [--batch-ms 2] [--rounds 2]
 *
 * The origin (bench/origin.js --etag) runs in its own process. Rounds
 * alternate main thread and worker thread.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Agent } from 'undici';
import { checkNumbers, parseBenchArgs } from './lib/args.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * Conditional requests for products 1..products, `concurrency` at a time.
 * @param {{ origin: string, products: number, concurrency: number, pipelining?: number, onAnswer: (product: number, status: number) => void }} options
 */
async function requestAll({ origin, products, concurrency, pipelining = 1, onAnswer }) {
  const agent = new Agent({ connections: concurrency, pipelining });
  let next = 1;
  const one = async () => {
    while (next <= products) {
      const n = next++;
      const answer = await agent.request({ origin, path: `/st/product.asp?SKUSetID=${n}`, method: 'GET', headers: { 'if-none-match': `"p${n}-0"` } });
      await answer.body.dump();
      onAnswer(n, answer.statusCode);
    }
  };
  await Promise.all(Array.from({ length: concurrency * pipelining }, one));
  await agent.close();
}

/**
 * User + system CPU of a process so far, from /proc (Linux), in ms.
 * @param {number} pid
 */
function processCpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command's name.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

/** Clock ticks a second (USER_HZ), 100 on Linux. */
const TICKS = 100;

if (!isMainThread) {
  // The worker thread: the requests, and their answers to the main thread in batches.
  const { origin, products, concurrency, pipelining, batchMs } = workerData;
  /** @type {number[]} */
  let batch = [];
  let sentAt = 0;
  const send = () => {
    if (batch.length === 0) return;
    parentPort?.postMessage(batch);
    batch = [];
  };
  await requestAll({
    origin, products, concurrency, pipelining,
    onAnswer: (n, status) => {
      batch.push(n, status);
      const now = performance.now();
      if (now - sentAt >= batchMs) {
        sentAt = now;
        send();
      }
    },
  });
  send();
  parentPort?.postMessage('done');
} else {
  const USAGE = `usage: node bench/loader-thread-bench.js [--products 20000] [--concurrency 8] [--pipelining 1] [--batch-ms 2] [--rounds 2]
The main thread's cost of a re-crawl's conditional requests (all answered 304),
made on the main thread or on a worker thread that sends the answers back in
batches; rounds alternate the two. Each line also gives the CPU time of this
process (all threads) and of the origin's process: what the requests alone
cost on a machine that runs both.
  --products N     products to request (default 20000)
  --concurrency N  connections (default 8, the crawl's default)
  --pipelining N   requests in flight on each connection (undici's pipelining; default 1)
  --batch-ms N     the worker thread sends what it has at most every N ms (default 2)
  --rounds N       rounds of each (default 2)`;
  const { values } = parseBenchArgs('loader-thread-bench', {
    products: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '8' },
    pipelining: { type: 'string', default: '1' },
    'batch-ms': { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
  }, USAGE);
  checkNumbers('loader-thread-bench', values, ['products', 'concurrency', 'pipelining', 'batch-ms', 'rounds']);
  const products = Math.max(1, Math.floor(Number(values.products)));
  const concurrency = Math.max(1, Math.floor(Number(values.concurrency)));
  const pipelining = Math.max(1, Math.floor(Number(values.pipelining)));
  const batchMs = Number(values['batch-ms']);
  const rounds = Math.max(1, Math.floor(Number(values.rounds)));
  const server = spawn(process.execPath, [path.join(HERE, 'origin.js'), '--products', String(products), '--etag'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [chunk] = await once(/** @type {import('node:stream').Readable} */ (server.stdout), 'data');
    const origin = String(chunk).trim().split('\n')[0];
    for (let round = 1; round <= rounds; round++) {
      for (const where of ['main thread', 'worker thread']) {
        const started = performance.now();
        const before = performance.eventLoopUtilization();
        const cpuBefore = process.cpuUsage();
        const originBefore = processCpuMs(/** @type {number} */ (server.pid));
        let answers = 0;
        let notModified = 0;
        let messages = 0;
        if (where === 'main thread') {
          await requestAll({ origin, products, concurrency, pipelining, onAnswer: (_n, status) => { answers++; if (status === 304) notModified++; } });
        } else {
          const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { origin, products, concurrency, pipelining, batchMs } });
          await new Promise((resolve, reject) => {
            worker.on('error', reject);
            worker.on('message', (/** @type {number[] | 'done'} */ message) => {
              if (message === 'done') return resolve(undefined);
              messages++;
              for (let i = 0; i < message.length; i += 2) {
                answers++;
                if (message[i + 1] === 304) notModified++;
              }
            });
          });
          await worker.terminate();
        }
        const busy = performance.eventLoopUtilization(before).active;
        const cpu = process.cpuUsage(cpuBefore);
        const originCpu = processCpuMs(/** @type {number} */ (server.pid)) - originBefore;
        if (notModified !== products) throw new Error(`${notModified} of ${products} answers were 304`);
        process.stdout.write(`round ${round}, ${where}: ${answers} answers (${messages} messages), ${(performance.now() - started).toFixed(0)} ms, main thread busy ${busy.toFixed(0)} ms = ${((busy * 1000) / products).toFixed(1)} µs a request; CPU: this process ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms, the origin ${originCpu} ms\n`);
      }
    }
  } finally {
    server.kill('SIGTERM');
  }
}
