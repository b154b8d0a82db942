// @ts-check
import { Worker } from 'node:worker_threads';
import { AbortError, ContentEncodingError, FetchError, HttpStatusError, PageTooLargeError, TimeoutError } from '../errors.js';
import { reassertHeapBounds } from '../heap.js';
import { fanout } from './abort.js';

/**
 * A re-crawl's requests on a thread of their own, asked ahead of the crawl.
 *
 * A re-crawl of pages that answer 304 spends most of its main thread on
 * HTTP: at 20,000 products about a quarter of it went to undici's request
 * writing, response parsing and socket calls, for answers of a few hundred
 * bytes. Once `start()`ed (the crawl has a last state to revalidate), every
 * request goes to one worker thread that runs the crawl's own HTTP loader
 * (same options, same typed errors), with at most `--concurrency` requests
 * in flight. The crawl tells what it will fetch next (`hint`: the URLs as
 * its frontier admits them, in the order it takes them): those that have
 * validators are asked for ahead, up to LOOKAHEAD answers, so that the
 * answer is there when the crawl comes to the page and the main thread never
 * waits for the network. A page asked for that was not asked ahead (no
 * validators, a retry, headers that differ) is urgent: it goes before the
 * others. Answers come back in batches, bodies transferred; a body held
 * ahead counts against HELD_BYTES, past which nothing more is asked ahead.
 *
 * Before `start()`, and for loads it cannot hand over, the wrapped loader
 * does the work in the main thread.
 *
 * @typedef {import('./http.js').Loader} Loader
 * @typedef {import('./http.js').LoadResult} LoadResult
 * @typedef {import('./http.js').LoadOptions} LoadOptions
 * @typedef {{ resolve: (result: LoadResult) => void, reject: (error: Error) => void }} Waiter
 * @typedef {{
 *   id: number, url: string, headers: Record<string, string> | undefined,
 *   outcome?: { result?: LoadResult, error?: Error }, waiter?: Waiter, bytes: number,
 * }} Ask
 */

/** Answers asked ahead and not yet taken by the crawl, at most. */
const LOOKAHEAD = 256;
/** Bytes of bodies asked ahead and not yet taken (pages that changed), at most. */
const HELD_BYTES = 32 * 1024 * 1024;
const THREAD_URL = new URL('./revalidate-thread.js', import.meta.url);

/**
 * @param {Loader} loader does what is not handed to the thread
 * @param {{ concurrency: number, timeout: number, maxPageBytes: number, headers?: Record<string, string> }} options
 */
export function withRevalidation(loader, options) {
  return new Revalidator(loader, options);
}

export class Revalidator {
  #loader;
  #options;
  /** @type {Worker | null} */
  #worker = null;
  /** @type {((url: string) => Record<string, string> | undefined) | null} the conditional headers of a URL, or none: not asked ahead */
  #headersFor = null;
  /** @type {string[]} URLs hinted, in order */
  #hinted = [];
  #hintedAt = 0;
  /** @type {Map<string, Ask>} asked ahead, by URL, until taken */
  #ahead = new Map();
  /** @type {Map<number, Ask>} asked and not answered yet */
  #asked = new Map();
  #nextId = 1;
  #heldBytes = 0;
  /** @type {Error | null} the thread failed: everything is done in the main thread again */
  #failed = null;
  #closed = false;
  /** @type {{ ahead: Ask[], urgent: Ask[] }} to send at the end of this turn */
  #outbox = { ahead: [], urgent: [] };
  #scheduled = false;
  /** Counters, for tests and the summary's curious. */
  counts = { askedAhead: 0, takenAhead: 0, urgent: 0, inMain: 0 };

  /**
   * @param {Loader} loader
   * @param {{ concurrency: number, timeout: number, maxPageBytes: number, headers?: Record<string, string> }} options
   */
  constructor(loader, options) {
    this.#loader = loader;
    this.#options = options;
  }

  /** Whether requests go to the thread. */
  get started() {
    return this.#headersFor !== null && this.#worker !== null && this.#failed === null;
  }

  /**
   * Start the thread, before it is needed (its start-up, undici's loading,
   * then overlaps the reading of the last state); requests still go to the
   * wrapped loader until `start()`.
   */
  warm() {
    if (this.#worker || this.#closed || this.#failed) return;
    const { concurrency, timeout, maxPageBytes, headers } = this.#options;
    // Its young generation kept small, as the page threads' (threads.js): what it allocates is short-lived.
    const worker = new Worker(THREAD_URL, { workerData: { concurrency, timeout, maxPageBytes, headers }, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    worker.once('online', reassertHeapBounds);
    worker.on('message', (/** @type {any[]} */ answers) => this.#answered(answers));
    worker.on('error', (error) => this.#fail(error));
    worker.on('exit', (code) => { if (!this.#closed) this.#fail(new Error(`the revalidation thread exited (${code})`)); });
    this.#worker = worker;
  }

  /** The thread `warm()` started is not needed after all (the requests stay in the main thread). */
  async unwarm() {
    if (this.#headersFor !== null || !this.#worker) return;
    const worker = this.#worker;
    this.#worker = null;
    this.#failed = new Error('not needed');
    await worker.terminate();
  }

  /**
   * Hand requests to the thread from now on.
   * @param {(url: string) => Record<string, string> | undefined} headersFor the validators to ask a hinted URL ahead with (none: it is not)
   */
  start(headersFor) {
    if (this.#closed || this.#failed) return;
    this.warm();
    this.#headersFor = headersFor;
  }

  /**
   * URLs the crawl will fetch, in the order it will take them.
   * @param {string[]} urls
   */
  hint(urls) {
    if (!this.started) return;
    for (const url of urls) this.#hinted.push(url);
    this.#askAhead();
  }

  /**
   * The crawl is done with a URL: an answer asked ahead and not taken (a page resumed
   * from the journal, or that failed before its request) is dropped.
   * @param {string} url
   */
  forget(url) {
    const ask = this.#ahead.get(url);
    if (!ask) return;
    this.#ahead.delete(url);
    this.#drop(ask);
    this.#askAhead();
  }

  /**
   * @param {string} url
   * @param {LoadOptions} [options]
   * @returns {Promise<LoadResult>}
   */
  load(url, options = {}) {
    if (!this.started) {
      this.counts.inMain++;
      return this.#loader.load(url, options);
    }
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(new AbortError('crawl interrupted'));
    let ask = this.#ahead.get(url);
    if (ask) {
      this.#ahead.delete(url);
      if (!sameValidators(ask.headers, options.headers)) {
        this.#drop(ask);
        ask = undefined;
      }
    }
    if (ask) this.counts.takenAhead++;
    else {
      ask = this.#ask(url, options.headers, true);
      this.counts.urgent++;
    }
    const taken = ask;
    if (taken.outcome) this.#heldBytes -= taken.bytes;
    this.#askAhead();
    if (taken.outcome) {
      return taken.outcome.error ? Promise.reject(taken.outcome.error) : Promise.resolve(/** @type {LoadResult} */ (taken.outcome.result));
    }
    return new Promise((resolve, reject) => {
      // One listener on the run's signal for all requests (abort.js), dropped once the answer is in.
      const unlink = fanout.link(signal, () => {
        taken.waiter = undefined;
        this.#asked.delete(taken.id); // its answer is let go when it comes
        reject(new AbortError('crawl interrupted'));
      });
      taken.waiter = {
        resolve: (result) => { unlink(); resolve(result); },
        reject: (error) => { unlink(); reject(error); },
      };
    });
  }

  /**
   * The crawl phase is over: the thread ends (its heap is not held through
   * phase two's writing); any later request is made in the main thread.
   */
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

  /**
   * @param {string} url
   * @param {Record<string, string> | undefined} headers
   * @param {boolean} urgent
   */
  #ask(url, headers, urgent) {
    /** @type {Ask} */
    const ask = { id: this.#nextId++, url, headers, bytes: 0 };
    this.#asked.set(ask.id, ask);
    (urgent ? this.#outbox.urgent : this.#outbox.ahead).push(ask);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#send());
    }
    return ask;
  }

  #send() {
    this.#scheduled = false;
    const { ahead, urgent } = this.#outbox;
    this.#outbox = { ahead: [], urgent: [] };
    const worker = this.#worker;
    if (!worker) return;
    const wire = (/** @type {Ask[]} */ asks) => asks.map(({ id, url, headers }) => ({ id, url, headers }));
    if (urgent.length > 0) worker.postMessage({ urgent: true, asks: wire(urgent) });
    if (ahead.length > 0) worker.postMessage({ urgent: false, asks: wire(ahead) });
  }

  /** Ask for the next hinted URLs, while there is room ahead. */
  #askAhead() {
    const headersFor = /** @type {(url: string) => Record<string, string> | undefined} */ (this.#headersFor);
    while (this.#ahead.size < LOOKAHEAD && this.#heldBytes < HELD_BYTES && this.#hintedAt < this.#hinted.length) {
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
      const outcome = answer.error
        ? { error: rebuildError(answer.error) }
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
        if (outcome.error) waiter.reject(outcome.error);
        else waiter.resolve(/** @type {LoadResult} */ (outcome.result));
        continue;
      }
      ask.outcome = outcome;
      ask.bytes = outcome.result?.body.length ?? 0;
      this.#heldBytes += ask.bytes;
    }
  }

  /**
   * An answer asked ahead that will not be taken.
   * @param {Ask} ask
   */
  #drop(ask) {
    if (ask.outcome) this.#heldBytes -= ask.bytes;
    else this.#asked.delete(ask.id); // its answer is let go when it comes
  }

  /** @param {Error} error */
  #fail(error) {
    if (this.#failed || this.#closed) return;
    this.#failed = error;
    this.#worker = null;
    // What the thread held is asked again in the main thread.
    const waiting = [...this.#asked.values()].filter((ask) => ask.waiter);
    this.#asked.clear();
    this.#ahead.clear();
    this.#heldBytes = 0;
    for (const ask of waiting) {
      const waiter = /** @type {Waiter} */ (ask.waiter);
      this.counts.inMain++;
      this.#loader.load(ask.url, { headers: ask.headers }).then(waiter.resolve, waiter.reject);
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

const NO_BODY = Buffer.alloc(0);

/**
 * @param {Record<string, string> | undefined} a
 * @param {Record<string, string> | undefined} b
 */
function sameValidators(a, b) {
  return a?.['if-none-match'] === b?.['if-none-match'] && a?.['if-modified-since'] === b?.['if-modified-since']
    && Object.keys(a ?? {}).length === Object.keys(b ?? {}).length;
}

/**
 * The loader's typed error, made again from what the thread sent.
 * @param {{ name?: string, message: string, code?: string, status?: number, retryAfterMs?: number }} sent
 * @returns {Error}
 */
function rebuildError(sent) {
  /** @type {Error} */
  let error;
  if (sent.name === 'HttpStatusError' && typeof sent.status === 'number') error = new HttpStatusError(sent.status, { retryAfterMs: sent.retryAfterMs });
  else if (sent.name === 'TimeoutError') error = new TimeoutError(sent.message);
  else if (sent.name === 'PageTooLargeError') error = new PageTooLargeError(sent.message);
  else if (sent.name === 'ContentEncodingError') error = new ContentEncodingError(sent.message);
  else error = new FetchError(sent.message, { code: typeof sent.code === 'string' ? sent.code : 'FETCH' });
  error.message = sent.message;
  return error;
}
