// @ts-check
import { Worker } from 'node:worker_threads';
import { AbortError, ContentEncodingError, FetchError, HttpStatusError, PageTooLargeError, TimeoutError } from '../errors.js';
import { reassertHeapBounds } from '../runtime/heap.js';
import { fanout } from './abort.js';

/**
 * A re-crawl's requests on a thread of their own, asked ahead of the crawl (BENCHMARKS.md, "Decisions").
 * Hinted URLs with validators are asked ahead, within `lookahead` answers and HELD_BYTES; an ask the crawl
 * waits for goes first; one it no longer wants is cancelled. Before `start()` and once the thread is gone, the main thread loads.
 * @typedef {import('./http.js').Loader} Loader @typedef {import('./http.js').LoadResult} LoadResult
 * @typedef {import('./http.js').LoadOptions} LoadOptions
 * @typedef {{ resolve: (result: LoadResult) => void, reject: (error: Error) => void }} Waiter
 * @typedef {{ name?: string, message: string, code?: string, status?: number, retryAt?: number, truncated?: boolean, cause?: { code?: string, message: string } }} SentError
 * @typedef {{ id: number, url: string, headers: Record<string, string> | undefined, urgent: boolean,
 *   state: 'outbox' | 'sent' | 'answered' | 'gone', signal?: AbortSignal,
 *   outcome?: { result?: LoadResult, error?: SentError }, waiter?: Waiter, bytes: number }} Ask
 */

/** Per request the crawl may have in flight. */
const LOOKAHEAD_PER_REQUEST = 4;
/** Past these bytes of answers not taken, nothing more is asked ahead. */
const HELD_BYTES = 32 * 1024 * 1024;
const THREAD_URL = new URL('./revalidate-thread.js', import.meta.url);

/** @param {Loader} loader does what is not handed to the thread @param {{ concurrency: number, timeout: number, maxPageBytes: number, headers?: Record<string, string> }} options */
export function withRevalidation(loader, options) {
  return new Revalidator(loader, options);
}

export class Revalidator {
  #loader;
  #options;
  #lookahead;
  /** @type {Worker | null} */ #worker = null;
  /** @type {((url: string) => Record<string, string> | undefined) | null} a URL's conditional headers; none: not asked ahead */
  #headersFor = null;
  /** @type {string[]} URLs hinted, in order */
  #hinted = [];
  #hintedAt = 0;
  /** @type {Map<string, Ask>} asked ahead, by URL, until taken */
  #ahead = new Map();
  /** @type {Map<number, Ask>} sent (or to be sent) and not answered yet */
  #asked = new Map();
  #nextId = 1;
  #heldBytes = 0;
  /** @type {Error | null} the thread failed or was stopped: requests go to the main thread */
  #failed = null;
  #closed = false;
  /** @type {{ asks: Ask[], promote: number[], cancel: number[] }} to send at the end of this turn */
  #outbox = { asks: [], promote: [], cancel: [] };
  #scheduled = false;
  /** @type {AbortSignal | null} the run's signal, once a request brought it */
  #signal = null;
  /** Requests asked ahead, answers taken from those, urgent asks, requests made in the main thread. */
  counts = { askedAhead: 0, takenAhead: 0, urgent: 0, inMain: 0 };

  /** @param {Loader} loader @param {{ concurrency: number, timeout: number, maxPageBytes: number, headers?: Record<string, string> }} options */
  constructor(loader, options) {
    this.#loader = loader;
    this.#options = options;
    this.#lookahead = Math.max(1, options.concurrency * LOOKAHEAD_PER_REQUEST);
  }

  get started() {
    return this.#headersFor !== null && this.#worker !== null && this.#failed === null;
  }

  /** Starts the thread while the last state is read; requests wait for `start()`. */
  warm() {
    if (this.#worker || this.#closed || this.#failed) return;
    const { concurrency, timeout, maxPageBytes, headers } = this.#options;
    /** @type {Worker} */ let worker;
    try {
      // A small young generation, as the page threads': what it allocates is short-lived.
      worker = new Worker(THREAD_URL, { workerData: { concurrency, timeout, maxPageBytes, headers }, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    } catch (error) {
      this.#failed = /** @type {Error} */ (error); // no thread (the system would not start one): the main thread does the requests
      return;
    }
    worker.once('online', reassertHeapBounds);
    worker.on('message', (/** @type {any[]} */ answers) => this.#answered(answers));
    worker.on('messageerror', (error) => this.#fail(error));
    worker.on('error', (error) => this.#fail(error));
    worker.on('exit', (code) => { if (!this.#closed) this.#fail(new Error(`the revalidation thread exited (${code})`)); });
    this.#worker = worker;
  }

  async unwarm() {
    if (this.#headersFor !== null || !this.#worker) return;
    const worker = this.#worker;
    this.#worker = null;
    this.#failed = new Error('not needed');
    await worker.terminate();
  }

  /** @param {(url: string) => Record<string, string> | undefined} headersFor the validators to ask a hinted URL ahead with; none: it is not */
  start(headersFor) {
    if (this.#closed || this.#failed) return;
    this.warm();
    this.#headersFor = headersFor;
  }

  /** In the order the crawl will take them. @param {string[]} urls */
  hint(urls) {
    if (!this.started) return;
    for (const url of urls) this.#hinted.push(url);
    this.#askAhead();
  }

  /** An answer asked ahead and not taken is dropped. @param {string} url */
  forget(url) {
    const ask = this.#ahead.get(url);
    if (!ask) return;
    this.#ahead.delete(url);
    this.#drop(ask);
    this.#askAhead();
  }

  /** @param {string} url @param {LoadOptions} [options] @returns {Promise<LoadResult>} */
  load(url, options = {}) {
    const signal = options.signal;
    let ask = this.#ahead.get(url);
    if (ask) {
      this.#ahead.delete(url);
      // Taken only for the same validators, and, once the thread is gone, only if it was answered.
      if (!sameValidators(ask.headers, options.headers) || (!ask.outcome && !this.started)) {
        this.#drop(ask);
        ask = undefined;
      }
    }
    if (!ask && !this.started) {
      this.counts.inMain++;
      return this.#loader.load(url, options);
    }
    if (signal?.aborted) {
      if (ask) this.#drop(ask);
      return Promise.reject(new AbortError('crawl interrupted'));
    }
    this.#watch(signal);
    if (ask) {
      this.counts.takenAhead++;
      if (!ask.outcome) this.#promote(ask);
    } else {
      ask = this.#ask(url, options.headers, true);
      this.counts.urgent++;
    }
    const taken = ask;
    taken.signal = signal;
    if (taken.outcome) this.#heldBytes -= taken.bytes;
    this.#askAhead();
    if (taken.outcome) return settle(taken.outcome);
    return new Promise((resolve, reject) => {
      // One listener on the run's signal for all requests (abort.js).
      const unlink = fanout.link(signal, () => {
        taken.waiter = undefined;
        this.#cancel(taken);
        reject(new AbortError('crawl interrupted'));
      });
      taken.waiter = {
        resolve: (result) => { unlink(); resolve(result); },
        reject: (error) => { unlink(); reject(error); },
      };
    });
  }

  /** The crawl phase is over: the thread's heap is not held through phase two. */
  async stop() {
    const worker = this.#worker;
    if (!worker || this.#closed) return;
    this.#headersFor = null;
    this.#worker = null;
    this.#failed = new Error('stopped');
    this.#rejectAll(new AbortError('crawl interrupted'));
    await worker.terminate();
  }

  async close() {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = null;
    this.#rejectAll(new AbortError('crawl interrupted'));
    await Promise.all([worker?.terminate(), this.#loader.close()]);
  }

  /** @param {AbortSignal | undefined} signal */
  #watch(signal) {
    if (!signal || this.#signal === signal) return;
    this.#signal = signal;
    fanout.link(signal, () => {
      this.#worker?.postMessage({ op: 'cancelAll' });
      for (const ask of this.#ahead.values()) this.#drop(ask);
      this.#ahead.clear();
      this.#hinted = [];
      this.#hintedAt = 0;
    });
  }

  /** @param {string} url @param {Record<string, string> | undefined} headers @param {boolean} urgent */
  #ask(url, headers, urgent) {
    /** @type {Ask} */ const ask = { id: this.#nextId++, url, headers, urgent, state: 'outbox', bytes: 0 };
    this.#asked.set(ask.id, ask);
    this.#outbox.asks.push(ask);
    this.#schedule();
    return ask;
  }

  /** @param {Ask} ask made ahead, now waited for: it goes first */
  #promote(ask) {
    if (ask.state === 'outbox') ask.urgent = true;
    else if (ask.state === 'sent') {
      this.#outbox.promote.push(ask.id);
      this.#schedule();
    }
  }

  /** @param {Ask} ask */
  #cancel(ask) {
    this.#asked.delete(ask.id); // its answer, should it come, is let go
    if (ask.state === 'sent') {
      this.#outbox.cancel.push(ask.id);
      this.#schedule();
    }
    ask.state = 'gone';
  }

  #schedule() {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#send());
  }

  #send() {
    this.#scheduled = false;
    const { asks, promote, cancel } = this.#outbox;
    this.#outbox = { asks: [], promote: [], cancel: [] };
    const worker = this.#worker;
    if (!worker) return;
    /** @type {{ id: number, url: string, headers?: Record<string, string> }[][]} urgent, ahead */
    const wire = [[], []];
    for (const ask of asks) {
      if (ask.state !== 'outbox') continue;
      ask.state = 'sent';
      wire[ask.urgent ? 0 : 1].push({ id: ask.id, url: ask.url, headers: ask.headers });
    }
    if (wire[0].length > 0) worker.postMessage({ op: 'ask', urgent: true, asks: wire[0] });
    if (wire[1].length > 0) worker.postMessage({ op: 'ask', urgent: false, asks: wire[1] });
    if (promote.length > 0) worker.postMessage({ op: 'promote', ids: promote });
    if (cancel.length > 0) worker.postMessage({ op: 'cancel', ids: cancel });
  }

  #askAhead() {
    const headersFor = /** @type {(url: string) => Record<string, string> | undefined} */ (this.#headersFor);
    while (this.started && this.#ahead.size < this.#lookahead && this.#heldBytes < HELD_BYTES && this.#hintedAt < this.#hinted.length) {
      const url = this.#hinted[this.#hintedAt++];
      if (this.#ahead.has(url)) continue;
      const headers = headersFor(url);
      if (!headers) continue;
      this.#ahead.set(url, this.#ask(url, headers, false));
      this.counts.askedAhead++;
    }
    if (this.#hintedAt > 4096 && this.#hintedAt * 2 > this.#hinted.length) {
      this.#hinted = this.#hinted.slice(this.#hintedAt);
      this.#hintedAt = 0;
    }
  }

  /** @param {any[]} answers */
  #answered(answers) {
    for (const answer of answers) {
      const ask = this.#asked.get(answer.id);
      if (!ask) continue;
      this.#asked.delete(answer.id);
      ask.state = 'answered';
      const outcome = answer.error
        ? { error: /** @type {SentError} */ (answer.error) }
        : {
          result: /** @type {LoadResult} */ ({
            url: ask.url, status: answer.status, headers: answer.headers,
            body: answer.body ? Buffer.from(answer.body) : NO_BODY,
            ...(answer.location !== undefined ? { location: answer.location } : {}),
            ...(answer.notModified ? { notModified: true } : {}),
          }),
        };
      const waiter = ask.waiter;
      if (waiter) {
        ask.waiter = undefined;
        settle(outcome).then(waiter.resolve, waiter.reject);
        continue;
      }
      ask.outcome = outcome;
      ask.bytes = outcome.result?.body.length ?? 0;
      this.#heldBytes += ask.bytes;
    }
  }

  /** @param {Ask} ask answered ahead, never to be taken */
  #drop(ask) {
    if (ask.outcome) this.#heldBytes -= ask.bytes;
    else this.#cancel(ask);
  }

  /** @param {Error} error */
  #fail(error) {
    if (this.#failed || this.#closed) return;
    this.#failed = error;
    this.#worker = null;
    // The waiting asks go to the main thread; answers already in are kept.
    const waiting = [...this.#asked.values()].filter((ask) => ask.waiter);
    this.#asked.clear();
    for (const [url, ask] of this.#ahead) if (!ask.outcome) this.#ahead.delete(url);
    for (const ask of waiting) {
      const waiter = /** @type {Waiter} */ (ask.waiter);
      ask.waiter = undefined;
      this.counts.inMain++;
      this.#loader.load(ask.url, { headers: ask.headers, signal: ask.signal }).then(waiter.resolve, waiter.reject);
    }
  }

  /** @param {Error} error */
  #rejectAll(error) {
    for (const ask of this.#asked.values()) ask.waiter?.reject(error);
    this.#asked.clear();
    this.#ahead.clear();
    this.#heldBytes = 0;
  }
}

/** @param {{ result?: LoadResult, error?: SentError }} outcome @returns {Promise<LoadResult>} */
function settle(outcome) {
  return outcome.error ? Promise.reject(rebuildError(outcome.error)) : Promise.resolve(/** @type {LoadResult} */ (outcome.result));
}

const NO_BODY = Buffer.alloc(0);

/** @param {Record<string, string> | undefined} a @param {Record<string, string> | undefined} b */
function sameValidators(a, b) {
  return a?.['if-none-match'] === b?.['if-none-match'] && a?.['if-modified-since'] === b?.['if-modified-since']
    && Object.keys(a ?? {}).length === Object.keys(b ?? {}).length;
}

/** report.js reads its cause's code; Retry-After counts from now. @param {SentError} sent @returns {Error} */
function rebuildError(sent) {
  const cause = sent.cause ? Object.assign(new Error(sent.cause.message), sent.cause.code === undefined ? {} : { code: sent.cause.code }) : undefined;
  const retryAfterMs = sent.retryAt === undefined ? undefined : Math.max(0, sent.retryAt - Date.now());
  /** @type {Error} */ let error;
  if (sent.name === 'HttpStatusError' && typeof sent.status === 'number') error = new HttpStatusError(sent.status, { retryAfterMs });
  else if (sent.name === 'TimeoutError') error = new TimeoutError(sent.message, { cause });
  else if (sent.name === 'PageTooLargeError') error = new PageTooLargeError(sent.message, { cause });
  else if (sent.name === 'ContentEncodingError') error = new ContentEncodingError(sent.message, { cause, truncated: sent.truncated === true });
  else error = new FetchError(sent.message, { cause, code: typeof sent.code === 'string' ? sent.code : 'FETCH' });
  error.message = sent.message;
  return error;
}
