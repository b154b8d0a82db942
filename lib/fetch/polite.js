// @ts-check
import pLimit from 'p-limit';
import { sleep } from './abort.js';

/**
 * Politeness for crawling production sites, as a wrapper around any loader:
 * `rate` requests per second across the run (every request, retries
 * included, starts at least 1/rate s after the one before), and `delay` ms
 * between the end of a request and the start of the next on the same
 * connection (one of `concurrency` slots).
 *
 * @typedef {import('./http.js').Loader} Loader
 * @param {Loader} loader
 * @param {{ rate?: number, delay?: number, concurrency: number, now?: () => number }} options
 * @returns {Loader}
 */
export function withPoliteness(loader, options) {
  const { rate = 0, delay = 0, concurrency } = options;
  if (!(rate > 0) && !(delay > 0)) return loader;
  const now = options.now ?? (() => performance.now());
  const interval = rate > 0 ? 1000 / rate : 0;
  const limit = pLimit(concurrency);
  /** When each connection slot may start its next request. */
  const free = new Array(concurrency).fill(-Infinity);
  let lastStart = -Infinity;
  /** Requests start one after the other, each when its time has come by the clock (a late timer never lets two start together). */
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
