// @ts-check
import { parentPort, workerData } from 'node:worker_threads';
import { createHttpLoader } from './http.js';
import { transferable } from '../runtime/transfer.js';

/**
 * The re-crawl's HTTP thread: urgent asks first, answers sent once per event-loop turn, bodies transferred.
 * Messages in: ask { urgent, asks }, promote { ids }, cancel { ids }, cancelAll.
 * @typedef {{ id: number, url: string, headers?: Record<string, string> }} Ask
 */

const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);
const { concurrency, timeout, maxPageBytes, headers } = workerData;
const loader = createHttpLoader({ concurrency, timeout, maxPageBytes, headers });

/** @type {Map<number, Ask>} not started yet; a cancelled one is taken out */
const waiting = new Map();
/** @type {Ask[]} */ let urgent = [];
/** @type {Ask[]} */ let ahead = [];
let aheadAt = 0;
let inFlight = 0;

/** @type {object[]} */ let answers = [];
/** @type {ArrayBuffer[]} */ let transfer = [];
let scheduled = false;

const flush = () => {
  scheduled = false;
  const batch = answers;
  answers = [];
  port.postMessage(batch, transfer);
  transfer = [];
};

/** @param {object} answer */ const send = (answer) => {
  answers.push(answer);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
};

/** @param {any} error */ const describe = (error) => ({
  name: error?.constructor?.name, message: String(error?.message ?? error), code: error?.code, status: error?.status, truncated: error?.truncated === true || undefined,
  // A time, not a delay: the crawl may take the answer later.
  retryAt: typeof error?.retryAfterMs === 'number' ? Date.now() + error.retryAfterMs : undefined,
  cause: error?.cause ? { code: error.cause.code, message: String(error.cause.message ?? error.cause) } : undefined,
});

/** @param {Ask} ask */ const start = (ask) => {
  inFlight++;
  loader.load(ask.url, { headers: ask.headers }).then(
    (result) => {
      const body = result.body.length > 0 ? transferable(result.body) : null;
      if (body) transfer.push(body);
      send({ id: ask.id, status: result.status, headers: result.headers, location: result.location, notModified: result.notModified, body });
    },
    (error) => send({ id: ask.id, error: describe(error) }),
  ).finally(() => {
    inFlight--;
    pump();
  });
};

/** Urgent asks first; those cancelled, promoted or started are passed over. */
const next = () => {
  while (urgent.length > 0) {
    const ask = /** @type {Ask} */ (urgent.shift());
    if (waiting.delete(ask.id)) return ask;
  }
  while (aheadAt < ahead.length) {
    const ask = ahead[aheadAt++];
    if (waiting.delete(ask.id)) return ask;
  }
  return undefined;
};

const pump = () => {
  while (inFlight < concurrency) {
    const ask = next();
    if (!ask) break;
    start(ask);
  }
  if (aheadAt > 1024 && aheadAt * 2 > ahead.length) {
    ahead = ahead.slice(aheadAt);
    aheadAt = 0;
  }
};

port.on('message', (/** @type {{ op: string, urgent?: boolean, asks?: Ask[], ids?: number[] }} */ message) => {
  if (message.op === 'ask') {
    for (const ask of message.asks ?? []) {
      waiting.set(ask.id, ask);
      (message.urgent ? urgent : ahead).push(ask);
    }
  } else if (message.op === 'promote') {
    for (const id of message.ids ?? []) {
      const ask = waiting.get(id);
      if (ask) urgent.push(ask); // its place ahead is passed over once it has started
    }
  } else if (message.op === 'cancel') {
    for (const id of message.ids ?? []) waiting.delete(id);
  } else if (message.op === 'cancelAll') {
    waiting.clear();
    urgent = [];
    ahead = [];
    aheadAt = 0;
  }
  pump();
});
