// @ts-check
import { parentPort, workerData } from 'node:worker_threads';
import { createHttpLoader } from './http.js';

/**
 * The re-crawl's HTTP thread (revalidate.js): the crawl's own HTTP loader,
 * with at most `concurrency` requests in flight, urgent requests (a page the
 * crawl waits for) before those asked ahead. Answers go back once per turn
 * of this thread's event loop, bodies transferred.
 *
 * @typedef {{ id: number, url: string, headers?: Record<string, string> }} Ask
 */
/**
 * The ArrayBuffer of exactly these bytes: the buffer's own when it spans all of it, else a copy.
 * @param {Buffer} buffer
 * @returns {ArrayBuffer}
 */
const owned = (buffer) => (buffer.byteOffset === 0 && buffer.byteLength === buffer.buffer.byteLength && buffer.buffer instanceof ArrayBuffer
  ? buffer.buffer
  : new Uint8Array(buffer).buffer);

const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);
const { concurrency, timeout, maxPageBytes, headers } = workerData;
const loader = createHttpLoader({ concurrency, timeout, maxPageBytes, headers });

/** @type {Ask[]} */
const urgent = [];
/** @type {Ask[]} */
const ahead = [];
let aheadAt = 0;
let inFlight = 0;

/** @type {object[]} */
let answers = [];
/** @type {ArrayBuffer[]} */
let transfer = [];
let scheduled = false;

const flush = () => {
  scheduled = false;
  const batch = answers;
  answers = [];
  port.postMessage(batch, transfer);
  transfer = [];
};

/** @param {object} answer */
const send = (answer) => {
  answers.push(answer);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
};

/** @param {Ask} ask */
const start = (ask) => {
  inFlight++;
  loader.load(ask.url, { headers: ask.headers }).then(
    (result) => {
      const body = result.body.length > 0 ? owned(result.body) : null;
      if (body) transfer.push(body);
      send({ id: ask.id, status: result.status, headers: result.headers, location: result.location, notModified: result.notModified, body });
    },
    (/** @type {any} */ error) => {
      send({ id: ask.id, error: { name: error?.constructor?.name, message: String(error?.message ?? error), code: error?.code, status: error?.status, retryAfterMs: error?.retryAfterMs } });
    },
  ).finally(() => {
    inFlight--;
    pump();
  });
};

const pump = () => {
  while (inFlight < concurrency) {
    const ask = urgent.shift() ?? (aheadAt < ahead.length ? ahead[aheadAt++] : undefined);
    if (!ask) break;
    start(ask);
  }
  if (aheadAt > 1024 && aheadAt * 2 > ahead.length) {
    ahead.splice(0, aheadAt);
    aheadAt = 0;
  }
};

port.on('message', (/** @type {{ asks: Ask[], urgent: boolean }} */ message) => {
  if (message.urgent) urgent.push(...message.asks);
  else ahead.push(...message.asks);
  pump();
});
