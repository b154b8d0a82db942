// @ts-check
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';

/** The nice value of the thread that reads it (Linux: /proc/thread-self). */
const NICE_OF_THIS_THREAD = `(${String(() => Number(require('node:fs').readFileSync('/proc/thread-self/stat', 'latin1').replace(/^.*\) /s, '').split(' ')[16]))})()`;

/**
 * Run lowerThreadPriority(steps) in a worker thread: its answer, and the
 * thread's nice value before and after.
 * @param {number} steps
 * @returns {Promise<{ lowered: boolean, before: number, after: number }>}
 */
async function inWorker(steps) {
  const url = new URL('../../lib/runtime/priority.js', import.meta.url).href;
  const source = `
    const { parentPort } = require('node:worker_threads');
    const niceNow = () => ${NICE_OF_THIS_THREAD};
    import(${JSON.stringify(url)}).then(({ lowerThreadPriority }) => {
      const before = niceNow();
      const lowered = lowerThreadPriority(${steps});
      parentPort.postMessage({ lowered, before, after: niceNow() });
    });`;
  const worker = new Worker(source, { eval: true });
  try {
    const [answer] = await Promise.race([
      new Promise((resolve, reject) => { worker.once('message', (m) => resolve([m])); worker.once('error', reject); }),
      new Promise((_, reject) => setTimeout(() => reject(new Error('the worker did not answer in 10 s')), 10_000)),
    ]);
    return answer;
  } finally {
    await worker.terminate();
  }
}

describe.runIf(process.platform === 'linux')('lowerThreadPriority (Linux: the nice value is per thread)', () => {
  const main = () => Number(readFileSync('/proc/thread-self/stat', 'latin1').replace(/^.*\) /s, '').split(' ')[16]);

  it('lowers the calling thread only, by the steps asked', async () => {
    const before = main();
    const answer = await inWorker(3);
    expect(answer.before).toBe(before);
    if (before + 3 <= 19) {
      expect(answer).toEqual({ lowered: true, before, after: before + 3 });
    }
    expect(main()).toBe(before); // the process (its main thread) keeps its priority
  });

  it('stops at 19, and says when there was nothing to lower', async () => {
    const answer = await inWorker(100);
    expect(answer.after).toBe(19);
    expect(answer.lowered).toBe(answer.before < 19);
  });
});
