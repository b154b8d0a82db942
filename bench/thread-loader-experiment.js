#!/usr/bin/env node
// @ts-check
/**
 * An experiment for issue 13, not a feature: a 0 % re-crawl through the API
 * with its HTTP on a worker thread (a loader given as the `loader` option
 * that hands requests to a thread running the crawl's own HTTP loader, both
 * ways in batches of one event-loop turn, bodies transferred), against the
 * same re-crawl with the default loader, alternated. Per run: wall time and
 * the main thread's busy time (event loop utilisation).
 *
 *   node bench/thread-loader-experiment.js [--products 20000] [--rounds 2] [--concurrency 8,16]
 *
 * --concurrency: the crawl's requests in flight with the thread loader (its
 * thread keeps the origin to 8 connections whatever the value, as the default
 * loader at -c 8 does). The origin (bench/origin.js --etag) runs in its own
 * process; OUT is on TMPDIR.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { checkNumbers, parseBenchArgs } from './lib/args.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CONNECTIONS = 8;

if (!isMainThread) {
  // The thread: the crawl's HTTP loader, answers sent back once per turn of its event loop.
  const { createHttpLoader } = await import('../lib/fetch/http.js');
  const loader = createHttpLoader({ concurrency: CONNECTIONS });
  /** @type {object[]} */
  let answers = [];
  /** @type {ArrayBuffer[]} */
  let transfer = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    parentPort?.postMessage(answers, transfer);
    answers = [];
    transfer = [];
  };
  /** @param {object} answer @param {ArrayBuffer | null} body */
  const send = (answer, body) => {
    answers.push(answer);
    if (body) transfer.push(body);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  parentPort?.on('message', (/** @type {{ id: number, url: string, headers?: Record<string, string> }[]} */ batch) => {
    for (const { id, url, headers } of batch) {
      loader.load(url, { headers }).then(
        (result) => {
          const body = result.body.length > 0 ? new Uint8Array(result.body).buffer : null;
          send({ id, result: { ...result, body: undefined }, body }, body);
        },
        (error) => send({ id, error: { message: error.message, code: error.code, status: error.status } }, null),
      );
    }
  });
} else {
  const USAGE = `usage: node bench/thread-loader-experiment.js [--products 20000] [--rounds 2] [--concurrency 8,16]
Issue 13's experiment: a 0 % re-crawl with its HTTP on a worker thread against
the default loader, alternated; wall time and the main thread's busy time.
  --products N        products in the shop (default 20000)
  --rounds N          rounds (default 2)
  --concurrency LIST  the crawl's requests in flight with the thread loader (default 8,16)`;
  const { values } = parseBenchArgs('thread-loader-experiment', {
    products: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '8,16' },
  }, USAGE);
  checkNumbers('thread-loader-experiment', values, ['products', 'rounds'], ['concurrency']);
  const products = Math.max(1, Math.floor(Number(values.products)));
  const rounds = Math.max(1, Math.floor(Number(values.rounds)));
  const concurrencies = String(values.concurrency).split(',').map((value) => Math.max(1, Math.floor(Number(value))));
  const { crawl } = await import('../lib/index.js');
  const { FetchError, HttpStatusError } = await import('../lib/errors.js');

  /** A loader whose requests go to a worker thread. */
  const threadLoader = () => {
    const worker = new Worker(fileURLToPath(import.meta.url));
    /** @type {Map<number, { resolve: (value: any) => void, reject: (error: Error) => void }>} */
    const waiting = new Map();
    /** @type {object[]} */
    let queue = [];
    let next = 0;
    let scheduled = false;
    worker.on('message', (/** @type {any[]} */ batch) => {
      for (const { id, result, body, error } of batch) {
        const promise = waiting.get(id);
        waiting.delete(id);
        if (!promise) continue;
        if (error) promise.reject(error.status ? new HttpStatusError(error.status) : new FetchError(error.message, { code: error.code ?? 'FETCH' }));
        else promise.resolve({ ...result, body: body ? Buffer.from(body) : Buffer.alloc(0) });
      }
    });
    return {
      /** @param {string} url @param {{ headers?: Record<string, string> }} [options] */
      load(url, options = {}) {
        return new Promise((resolve, reject) => {
          const id = next++;
          waiting.set(id, { resolve, reject });
          queue.push({ id, url, headers: options.headers });
          if (!scheduled) {
            scheduled = true;
            setImmediate(() => {
              scheduled = false;
              worker.postMessage(queue);
              queue = [];
            });
          }
        });
      },
      close: async () => { await worker.terminate(); },
    };
  };

  const origin = spawn(process.execPath, [path.join(HERE, 'origin.js'), '--products', String(products), '--etag'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const out = await mkdtemp(path.join(os.tmpdir(), 'prerender-thread-loader-'));
  try {
    const [chunk] = await once(/** @type {import('node:stream').Readable} */ (origin.stdout), 'data');
    const url = String(chunk).trim().split('\n')[0];
    const options = { roots: [`${url}/st/dir.asp`], include: ['/st/dir.asp', '/st/product.asp'], out };
    await crawl(options); // the first crawl: the re-crawls below answer 304
    for (let round = 1; round <= rounds; round++) {
      for (const run of [{ name: 'default loader, -c 8', concurrency: CONNECTIONS, thread: false }, ...concurrencies.map((c) => ({ name: `thread loader, -c ${c}`, concurrency: c, thread: true }))]) {
        const loader = run.thread ? threadLoader() : undefined;
        const started = performance.now();
        const before = performance.eventLoopUtilization();
        const result = await crawl({ ...options, concurrency: run.concurrency, ...(loader ? { loader } : {}) });
        const busy = performance.eventLoopUtilization(before).active;
        await loader?.close();
        if (result.churn.notModified !== products) throw new Error(`${result.churn.notModified} of ${products} pages answered 304`);
        process.stdout.write(`round ${round}, ${run.name}: ${((performance.now() - started) / 1000).toFixed(2)} s, main thread busy ${(busy / 1000).toFixed(2)} s\n`);
      }
    }
  } finally {
    origin.kill('SIGTERM');
    await rm(out, { recursive: true, force: true });
  }
}
