// @ts-check
/**
 * Shoppers who think between operations arrive as a steady rate, not as connections that never rest. autocannon
 * sends whole requests at the start of each second, so the rate is split over up to ten instances a tenth of a second apart.
 */
import { createRequire } from 'node:module';

/**
 * autocannon ships no types; require keeps tsc out of its sources.
 * @typedef {import('node:events').EventEmitter & PromiseLike<unknown> & { stop(): void }} Instance
 * @type {(options: Record<string, unknown>) => Instance}
 */
const autocannon = createRequire(import.meta.url)('autocannon');

/** Most instances a run splits its rate over (waves per second). */
const WAVES = 10;

/**
 * @typedef {{ method: 'GET', path: string }} LoadRequest
 * @typedef {{ base: string, requests: LoadRequest[], rps: number, connections: number, durationMs: number,
 *   timeoutMs: number, signal?: AbortSignal, stopOnError?: boolean, whole?: boolean, once?: boolean }} LoadSpec
 *   whole: send rps × duration requests in one wave and wait for every answer, so the server's CPU is that of the requests answered
 *   (at most twice the duration and a second); once: each request once, to warm caches, cut at the duration
 * @typedef {{ answered: number, errors: number, errorKinds: Record<string, number>, latencies: number[],
 *   wallMs: number, stopped: 'done' | 'error' | 'aborted' }} LoadResult latencies ascending; errorKinds such as "HTTP 500", "timeout"
 */

/** Fewest requests a client takes in turn: enough to mix the operations. */
const SHARE = 32;

/** A run of the list from client i's own place, long enough for all clients together to cover it. @param {LoadRequest[]} requests @param {number} i @param {number} clients */
function share(requests, i, clients) {
  const length = Math.min(requests.length, Math.max(SHARE, Math.ceil(requests.length / clients)));
  const at = (i * length) % requests.length;
  return Array.from({ length }, (_, k) => requests[(at + k) % requests.length]);
}

/** Resolves once every connection is closed. @param {LoadSpec} spec @returns {Promise<LoadResult>} */
export async function runLoad({ base, requests, rps, connections, durationMs, timeoutMs, signal, stopOnError = true, whole = false, once = false }) {
  // One wave when whole or once: smooth arrivals matter to latency, not to what a request costs.
  const waves = whole || once ? 1 : Math.max(1, Math.min(WAVES, rps));
  /** @type {number[]} */ const latencies = [];
  /** @type {Record<string, number>} */ const errorKinds = {};
  let errors = 0;
  /** @type {LoadResult['stopped']} */ let stopped = 'done';
  /** @type {Instance[]} */ const instances = [];
  /** @type {NodeJS.Timeout[]} */ const timers = [];
  /** @type {Promise<unknown>[]} */ const finished = [];
  /** @type {() => void} */ let allStarted = () => {};
  const stopAll = (/** @type {LoadResult['stopped']} */ why) => {
    if (stopped === 'done') stopped = why;
    for (const timer of timers) clearTimeout(timer);
    allStarted(); // the waves not started yet never will be
    for (const instance of instances) instance.stop();
  };
  const onError = (/** @type {string} */ kind) => {
    errors++;
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
    if (stopOnError) stopAll('error');
  };
  const onAbort = () => stopAll('aborted');
  if (signal?.aborted) return { answered: 0, errors: 0, errorKinds, latencies, wallMs: 0, stopped: 'aborted' };
  signal?.addEventListener('abort', onAbort, { once: true });
  let client = 0;
  const started = performance.now();
  try {
    await new Promise((resolve) => {
      allStarted = () => resolve(undefined);
      for (let wave = 0; wave < waves; wave++) {
        const offsetMs = (wave * 1000) / waves;
        const rate = Math.floor(rps / waves) + (wave < rps % waves ? 1 : 0);
        const amount = once ? requests.length : Math.max(1, Math.round((rate * (durationMs - offsetMs)) / 1000));
        const clients = Math.max(1, Math.min(rate, Math.ceil(connections / waves), whole || once ? amount : Infinity));
        timers.push(setTimeout(() => {
          const instance = autocannon({
            url: base,
            // Each client gets its own share in setupClient: autocannon builds every request of a client's
            // list when the client starts, so a long list given to every client would cost more than the run.
            requests: requests.slice(0, 1),
            connections: clients,
            overallRate: rate,
            ...(whole || once ? { amount } : { duration: Math.max(0.05, (durationMs - offsetMs) / 1000) }),
            timeout: timeoutMs / 1000,
            sampleInt: 100, // a stop takes effect at the next sample: within 0.1 s
            ignoreCoordinatedOmission: true, // its histograms are not read: the latencies are taken here
            skipAggregateResult: true,
            setupClient: (/** @type {{ setRequests(list: LoadRequest[]): void }} */ c) => {
              const i = client++;
              // once: autocannon gives client i its share of the amount, the requests i, i + clients...
              c.setRequests(once ? requests.filter((_, k) => k % clients === i % clients) : share(requests, i, connections));
            },
          });
          instance.on('response', (/** @type {unknown} */ _client, /** @type {number} */ status, /** @type {number} */ _bytes, /** @type {number} */ ms) => {
            if (status >= 400) onError(`HTTP ${status}`);
            else latencies.push(ms);
          });
          instance.on('reqError', (/** @type {Error & { code?: string }} */ error) => onError(error.code ?? (/timed out/.test(error.message) ? 'timeout' : error.message)));
          instances.push(instance);
          finished.push(Promise.resolve(instance).then(() => undefined, () => undefined));
          if (instances.length === waves) resolve(undefined);
        }, offsetMs));
      }
    });
    if (whole) timers.push(setTimeout(() => stopAll('done'), 2 * durationMs + 1000));
    if (once) timers.push(setTimeout(() => stopAll('done'), durationMs));
    await Promise.all(finished);
  } finally {
    for (const timer of timers) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
  latencies.sort((a, b) => a - b);
  return { answered: latencies.length, errors, errorKinds, latencies, wallMs: performance.now() - started, stopped };
}
