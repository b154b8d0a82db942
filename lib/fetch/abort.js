// @ts-check
import { AbortError } from '../errors.js';

/** One abort listener per signal, however many waiters: a listener each warns past ten and costs memory per request. */
export class AbortFanout {
  /** @type {WeakMap<AbortSignal, Set<() => void>>} */ #bySignal = new WeakMap();

  /** Calls `onAbort` at once when `signal` has already aborted. @param {AbortSignal | undefined} signal @param {() => void} onAbort @returns {() => void} unlink */
  link(signal, onAbort) {
    if (!signal) return () => {};
    if (signal.aborted) {
      onAbort();
      return () => {};
    }
    let set = this.#bySignal.get(signal);
    if (!set) {
      const created = new Set();
      set = created;
      this.#bySignal.set(signal, created);
      signal.addEventListener('abort', () => {
        const waiting = [...created];
        created.clear();
        for (const callback of waiting) callback();
      }, { once: true });
    }
    const owned = set;
    owned.add(onAbort);
    return () => { owned.delete(onAbort); };
  }
}

export const fanout = new AbortFanout();

/** Rejects with an AbortError as soon as `signal` aborts. @param {number} ms @param {AbortSignal | undefined} signal @returns {Promise<void>} */
export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new AbortError('crawl interrupted'));
      return;
    }
    let unlink = () => {};
    const timer = setTimeout(() => { unlink(); resolve(); }, ms);
    unlink = fanout.link(signal, () => {
      clearTimeout(timer);
      reject(new AbortError('crawl interrupted'));
    });
  });
}
