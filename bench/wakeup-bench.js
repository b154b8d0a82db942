// @ts-check
/**
 * What waking up costs on this machine: the CPU a Node process spends for
 * each wake of its event loop after an idle gap (a timer), and for each
 * round trip to a worker thread that was idle (postMessage, then its reply).
 * A crawl against an origin with latency wakes up for nearly every page
 * (a response, a thread's scan, a Redis reply), so where a wake is dear, as
 * on a virtual machine whose idle CPUs must be woken through the hypervisor,
 * a page costs far more CPU at 50 ms per request than at memory speed.
 *
 *   node bench/wakeup-bench.js [--gaps 0,1,5] [--count 400] [--bytes 20000]
 *
 * Each line: the gap slept between wakes, the process's CPU (user + sys,
 * all threads) per timer wake, and per timer wake plus a worker round trip
 * of a --bytes message (a page's body is about 15 KB); their difference is
 * what the round trip adds.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { checkNumbers, parseBenchArgs } from './lib/args.js';

const USAGE = `usage: node bench/wakeup-bench.js [--gaps 0,1,5] [--count 400] [--bytes 20000]
What a wake of the event loop costs in CPU after an idle gap, alone and with a
round trip to an idle worker thread (postMessage and its reply).
  --gaps LIST   idle gaps in ms between wakes (default 0,1,5)
  --count N     wakes per gap (default 400)
  --bytes N     size of the message sent to the worker thread (default 20000)`;

const { values } = parseBenchArgs('wakeup-bench', {
  gaps: { type: 'string', default: '0,1,5' },
  count: { type: 'string', default: '400' },
  bytes: { type: 'string', default: '20000' },
}, USAGE);
checkNumbers('wakeup-bench', values, ['count', 'bytes'], ['gaps']);
const gaps = String(values.gaps).split(',').map(Number);
const count = Math.max(1, Math.floor(Number(values.count)));
const message = Buffer.alloc(Math.floor(Number(values.bytes)), 97);

const worker = new Worker('const { parentPort } = require("node:worker_threads"); parentPort.on("message", (m) => parentPort.postMessage(m.length));', { eval: true });
const roundTrip = () => new Promise((resolve) => { worker.once('message', resolve); worker.postMessage(message); });
await roundTrip(); // the thread is up and its handler compiled

/** @param {number} gap @param {boolean} withThread */
async function measure(gap, withThread) {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    await new Promise((resolve) => { setTimeout(resolve, gap); });
    if (withThread) await roundTrip();
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

process.stdout.write(`wakeup-bench, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, ${count} wakes a line\n\n`);
process.stdout.write('| gap | CPU per timer wake | with a worker round trip | the round trip adds |\n| ---: | ---: | ---: | ---: |\n');
for (const gap of gaps) {
  const timer = await measure(gap, false);
  const thread = await measure(gap, true);
  process.stdout.write(`| ${gap} ms | ${timer.toFixed(0)} µs | ${thread.toFixed(0)} µs | ${(thread - timer).toFixed(0)} µs |\n`);
}
await worker.terminate();
