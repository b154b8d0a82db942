// @ts-check
import pLimit from 'p-limit';
import { sleep } from './abort.js';

/**
 * At most `rate` request starts per second, retries included, and `delay` ms between requests on one connection slot.
 * @typedef {import('./http.js').Loader} Loader
 * @param {Loader} loader @param {{ rate?: number, delay?: number, concurrency: number, now?: () => number }} options @returns {Loader}
 */
export function withPoliteness(loader, options) {
  const { rate = 0, delay = 0, concurrency } = options;
  if (!(rate > 0) && !(delay > 0)) return loader;
  const now = options.now ?? (() => performance.now());
  const interval = rate > 0 ? 1000 / rate : 0;
  const limit = pLimit(concurrency);
  const free = new Array(concurrency).fill(-Infinity);
  let lastStart = -Infinity;
  // Starts are serialised by the clock, so a late timer never lets two start together.
  let turns = Promise.resolve();
  return {
    load(url, callOptions = {}) {
      return limit(async () => {
        // Within the limit a slot is always free: take the one free soonest.
        let slot = 0;
        for (let i = 1; i < free.length; i++) if (free[i] < free[slot]) slot = i;
        const slotReady = free[slot];
        free[slot] = Infinity;
        try {
          const turn = turns.then(async () => {
            for (;;) {
              const wait = Math.max(lastStart + interval, slotReady) - now();
              if (wait <= 0) break;
              await sleep(wait, callOptions.signal);
            }
            lastStart = now();
          });
          turns = turn.catch(() => {});
          await turn;
          return await loader.load(url, callOptions);
        } finally {
          free[slot] = now() + delay;
        }
      });
    },
    close: () => loader.close(),
  };
}
