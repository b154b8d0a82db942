// @ts-check
import { Worker } from 'node:worker_threads';
import { createRenderer, scanPage } from '../page-work.js';
import { reassertHeapBounds } from '../../runtime/heap.js';
import { copyOf } from '../../runtime/transfer.js';

/**
 * Worker threads run the per-page CPU work, so the main thread keeps network, frontier and names. One batch per worker
 * at a time; until a worker is ready, the main thread runs the same functions. A dying worker fails only what it held.
 * @typedef {import('../page-work.js').ScanInput} ScanInput @typedef {import('../page-work.js').ScanOutput} ScanOutput
 * @typedef {import('../page-work.js').RenderInput} RenderInput @typedef {import('../page-work.js').RenderOutput} RenderOutput
 * @typedef {import('../page-work.js').RenderContext} RenderContext @typedef {import('../page-work.js').NameTableData} NameTableData
 * @typedef {import('../page-work.js').BlobPlace} BlobPlace
 * @typedef {{ resolve: (value: any) => void, reject: (error: Error) => void }} Waiting
 * @typedef {{ request: object, transfer: ArrayBuffer[], waiting: Waiting, local: () => unknown }} Task local: should no worker be left
 * @typedef {{ worker: Worker, ready: boolean, dead: boolean, batch: Waiting[] | null, sentAt: number }} Slot
 */

const WORKER_URL = new URL('./page-thread.js', import.meta.url);

/** Nice steps below the main thread (Linux): a woken page thread must not take the sender's core. */
export const PAGE_THREAD_NICENESS = 10;

const BATCH = 64;
/** Another worker starts once the running ones were busy GROW_BUSY of a GROW_WINDOW_MS window. */
const GROW_WINDOW_MS = 250;
const GROW_BUSY = 0.7;
/** Fewer waiting requests all go to the first idle worker. */
const SPLIT_FROM = 8;

export class PageThreads {
  /** @type {{ at: number, busyMs: number } | null} while more may start */ #window = null;
  /** @param {number} size 0: all work in the main thread @param {{ niceness?: number }} [options] */
  constructor(size, { niceness = PAGE_THREAD_NICENESS } = {}) {
    this.size = size;
    this.niceness = niceness;
    /** @type {Slot[]} */ this.slots = [];
    /** @type {Task[]} */ this.queue = [];
    /** @type {RenderContext | null} */ this.context = null;
    /** @type {NameTableData | null} */ this.names = null;
    /** @type {ReturnType<typeof createRenderer> | null} the main thread's */ this.local = null;
    this.closed = false;
    this.counts = { worker: 0, local: 0 };
  }

  /** One worker; #grow starts the others as work outgrows it. */
  warm() {
    if (this.slots.length > 0 || this.closed || this.size === 0) return;
    this.slots.push(this.#spawn());
    this.#window = { at: performance.now(), busyMs: 0 };
  }

  /** An origin-bound crawl keeps one thread; a CPU-bound one gets the next within a window. */
  #grow() {
    const window = this.#window;
    if (!window || this.closed) return;
    const now = performance.now();
    if (now - window.at < GROW_WINDOW_MS) return;
    const running = this.slots.filter((slot) => slot.ready).length;
    const busy = window.busyMs + this.slots.reduce((sum, slot) => sum + (slot.batch ? now - Math.max(slot.sentAt, window.at) : 0), 0);
    this.#window = { at: now, busyMs: 0 };
    for (const slot of this.slots) if (slot.batch) slot.sentAt = now;
    if (running === 0 || this.slots.length !== running || busy < GROW_BUSY * running * (now - window.at)) return;
    this.slots.push(this.#spawn());
    if (this.slots.length >= this.size) this.#window = null;
  }

  /** Wait until each worker is ready or dead. @param {number} [limitMs] */
  async start(limitMs = 10_000) {
    if (!this.closed) while (this.slots.length < this.size) this.slots.push(this.#spawn());
    const until = Date.now() + limitMs;
    while (this.slots.some((slot) => !slot.ready && !slot.dead) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** @returns {Slot} */
  #spawn() {
    // A small young generation: page bytes live off-heap, and each worker's heap counts in the crawl's memory.
    const worker = new Worker(WORKER_URL, { workerData: { niceness: this.niceness }, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    worker.unref(); // never what keeps the process alive
    // The worker's heap set-up undoes V8's young-generation bounds: reassert them until it is online (heap.js).
    const again = setInterval(reassertHeapBounds, 1);
    const started = () => {
      clearInterval(again);
      reassertHeapBounds();
    };
    worker.once('online', started);
    worker.once('exit', started);
    /** @type {Slot} */ const slot = { worker, ready: false, dead: false, batch: null, sentAt: 0 };
    const die = (/** @type {Error} */ error) => {
      if (slot.dead) return;
      slot.dead = true;
      slot.ready = false;
      for (const waiting of slot.batch ?? []) waiting.reject(error);
      slot.batch = null;
      if (!this.slots.some((other) => other.ready)) this.#drainLocally();
    };
    worker.on('message', (/** @type {any} */ message) => {
      if (message.ready) {
        if (this.context) worker.postMessage({ op: 'context', context: this.context });
        const names = this.#namesNow();
        if (names) worker.postMessage({ op: 'names', names });
        slot.ready = true;
        this.#dispatch();
        return;
      }
      const batch = slot.batch ?? [];
      slot.batch = null;
      if (this.#window) this.#window.busyMs += performance.now() - Math.max(slot.sentAt, this.#window.at);
      /** @type {any[]} */ const answers = message.answers;
      answers.forEach((answer, i) => {
        if (answer.error) batch[i].reject(Object.assign(new Error(answer.error.message), answer.error));
        else batch[i].resolve(answer.result);
      });
      this.#dispatch();
    });
    // However it ends, the pages it held did not fail by themselves.
    worker.on('error', (error) => die(Object.assign(new Error(`a crawl worker thread stopped: ${error.message}`), { code: 'THREAD_EXIT', cause: error })));
    worker.on('exit', (code) => die(Object.assign(new Error(`a crawl worker thread stopped (exit code ${code})`), { code: 'THREAD_EXIT' })));
    return slot;
  }

  /** A batch per idle worker: a few all to the first, so the others sleep on. */
  #dispatch() {
    for (const slot of this.slots) {
      if (this.queue.length === 0) break;
      if (!slot.ready || slot.batch) continue;
      const share = this.queue.length < SPLIT_FROM ? this.queue.length : Math.ceil(this.queue.length / this.#idleCount());
      const tasks = this.queue.splice(0, Math.max(1, Math.min(BATCH, share)));
      slot.batch = tasks.map((task) => task.waiting);
      slot.sentAt = performance.now();
      slot.worker.postMessage({ op: 'batch', requests: tasks.map((task) => task.request) }, tasks.flatMap((task) => task.transfer));
      this.counts.worker += tasks.length;
    }
    this.#grow();
  }

  #idleCount() {
    let idle = 0;
    for (const slot of this.slots) if (slot.ready && !slot.batch) idle++;
    return Math.max(1, idle);
  }

  #drainLocally() {
    for (const task of this.queue.splice(0)) {
      this.counts.local++;
      Promise.resolve().then(task.local).then(task.waiting.resolve, task.waiting.reject);
    }
  }

  get requests() {
    return this.counts.worker + this.counts.local + this.queue.length;
  }

  get backlog() {
    return this.queue.length;
  }

  get #working() {
    return this.slots.some((slot) => slot.ready);
  }

  /** @param {object} request @param {ArrayBuffer[]} transfer @param {() => unknown} local @returns {Promise<any>} */
  #enqueue(request, transfer, local) {
    return new Promise((resolve, reject) => {
      this.queue.push({ request, transfer, waiting: { resolve, reject }, local });
      this.#dispatch();
    });
  }

  /** The body stays the caller's; a worker gets a copy. @param {ScanInput} input @returns {Promise<ScanOutput>} */
  async scan(input) {
    if (!this.#working) {
      this.counts.local++;
      return scanPage(input);
    }
    const data = copyOf([input.body]);
    const result = await this.#enqueue({ op: 'scan', data, input: { type: input.type, contentType: input.contentType, url: input.url, stageDir: input.stageDir } }, [data], () => scanPage(input));
    return { ...result, scanBytes: Buffer.from(result.scanBytes) };
  }

  /** Before the first render. @param {RenderContext} context */
  setContext(context) {
    this.context = context;
    this.local = createRenderer(context);
    this.names = null;
    this.#contents = null;
    for (const slot of this.slots) if (slot.ready) slot.worker.postMessage({ op: 'context', context });
  }

  /**
   * Before a pass's first render; contents are made only if there are workers.
   * @param {{ fileOf(key: string): string | null }} table @param {() => NameTableData} contents
   */
  setNames(table, contents) {
    this.local?.setTable(table);
    this.names = null;
    this.#contents = this.size > 0 ? contents : null;
    if (this.slots.some((slot) => slot.ready)) this.#namesNow();
  }

  /** @type {(() => NameTableData) | null} until made: a pass that renders nothing makes none */ #contents = null;
  #namesNow() {
    if (this.names || !this.#contents) return this.names;
    this.names = this.#contents();
    for (const slot of this.slots) if (slot.ready) slot.worker.postMessage({ op: 'names', names: this.names });
    return this.names;
  }

  /**
   * From its bytes, which stay the caller's, or their blob-log `places`.
   * @param {Omit<RenderInput, 'raw' | 'scan'> & ({ raw: Buffer, scan: Buffer } | { places: [BlobPlace, BlobPlace], read: () => Promise<Buffer[]> })} input
   * @returns {Promise<RenderOutput>}
   */
  async render(input) {
    const local = async () => {
      if (!this.local) throw new Error('render before the render context was set');
      if ('raw' in input) return this.local.render(input);
      const { places, read, ...rest } = input;
      const [raw, scan] = await read();
      return this.local.render({ ...rest, raw, scan });
    };
    if (!this.#working || !this.#namesNow()) {
      this.counts.local++;
      return local();
    }
    /** @type {any} */ let result;
    if ('raw' in input) {
      const { raw, scan, ...rest } = input;
      const bytes = copyOf([raw, scan]);
      result = await this.#enqueue({ op: 'render', bytes, rawLength: raw.length, input: rest }, [bytes], local);
    } else {
      const { read, ...rest } = input;
      result = await this.#enqueue({ op: 'render', input: rest }, [], local);
    }
    if (result.output && !Buffer.isBuffer(result.output)) result.output = Buffer.from(result.output);
    return result;
  }

  get ready() {
    return this.#working;
  }

  /**
   * Only on a worker thread; null when none is left.
   * @param {Omit<RenderInput, 'raw' | 'scan'> & { places: [BlobPlace, BlobPlace], names: Map<string, string> }} input @returns {Promise<RenderOutput | null>}
   */
  async renderEarly(input) {
    if (!this.#working || !this.context) return null;
    return this.#enqueue({ op: 'render', input }, [], () => null);
  }

  async close() {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((slot) => slot.worker.terminate().catch(() => {})));
    for (const task of this.queue.splice(0)) task.waiting.reject(new Error('the crawl worker threads were closed'));
  }
}
