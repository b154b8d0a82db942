// @ts-check
import os from 'node:os';

/**
 * Lower the calling thread's scheduling priority by `steps` nice steps (to
 * at most 19), on Linux only, where the nice value belongs to each thread and
 * `os.setPriority(0, …)` names the calling one. Elsewhere (macOS, Windows) it
 * would lower the whole process: nothing is done there.
 *
 * The crawl's page threads call it. Their work (tokenising, rewriting) waits
 * in a queue that the main thread fills; the main thread is the crawl's one
 * pipe (frontier, records, requests, state). On two cores, a page thread
 * woken by a message used to preempt the main thread that had just sent it:
 * a re-crawl at 10 % churn spent 0.5 s of main thread in `postMessage`
 * (90th percentile 0.9 ms a call), 0.1 s once the page threads ran at a
 * lower priority. They still get every core the main thread leaves idle.
 *
 * @param {number} steps
 * @returns {boolean} whether the priority was lowered
 */
export function lowerThreadPriority(steps) {
  if (process.platform !== 'linux') return false;
  try {
    const now = os.getPriority(0);
    const next = Math.min(19, now + steps);
    if (next === now) return false;
    os.setPriority(0, next);
    return true;
  } catch {
    return false; // not allowed here (a sandbox): the thread keeps its priority
  }
}
