// @ts-check
import pLimit from 'p-limit';

/**
 * Steps in order, each with its own optional concurrency limit. A step ends the page early by setting `page.finished`.
 * @template {{ finished?: boolean }} P
 * @typedef {{ name: string, concurrency?: number, run: (page: P) => unknown }} Step
 */

/** @template {{ finished?: boolean }} P @param {Step<P>[]} steps @returns {(page: P) => Promise<void>} */
export function createStepRunner(steps) {
  const limits = steps.map((step) => (step.concurrency ? pLimit(step.concurrency) : null));
  return async (page) => {
    for (let i = 0; i < steps.length && !page.finished; i++) {
      const limit = limits[i];
      if (limit) await limit(() => steps[i].run(page));
      else await steps[i].run(page);
    }
  };
}
