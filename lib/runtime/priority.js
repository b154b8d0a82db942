// @ts-check
import os from 'node:os';

/**
 * Linux only, where the nice value is per thread: page threads stop preempting the main thread that feeds them (BENCHMARKS.md, "Decisions").
 * @param {number} steps nice steps, up to 19 @returns {boolean} whether the priority was lowered
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
