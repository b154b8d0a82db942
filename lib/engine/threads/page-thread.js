// @ts-check
import { parentPort, workerData } from 'node:worker_threads';
import { createPlaceReader, createRenderer, scanPage } from '../page-work.js';
import { transferable } from '../../runtime/transfer.js';
import { lowerThreadPriority } from '../../runtime/priority.js';

/** Answers batches of `scan` and `render` requests, one message per batch, at a lower priority than the main thread. */
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);
/** @type {ReturnType<typeof createRenderer> | null} */ let renderer = null;
const readPlace = createPlaceReader();

/** @param {any} request @param {ArrayBuffer[]} transfer what the answer hands back */
function answer(request, transfer) {
  if (request.op === 'scan') {
    const result = scanPage({ ...request.input, body: Buffer.from(request.data) });
    const scanBytes = transferable(result.scanBytes);
    transfer.push(scanBytes);
    return { ...result, scanBytes };
  }
  if (request.op === 'render') {
    if (!renderer) throw new Error('render before the render context was set');
    const { places, ...input } = request.input;
    const [raw, scan] = request.bytes
      ? [Buffer.from(request.bytes, 0, request.rawLength), Buffer.from(request.bytes, request.rawLength)]
      : [readPlace(places[0]), readPlace(places[1])];
    const result = renderer.render({ ...input, raw, scan });
    if (!result.output) return result;
    const output = transferable(result.output);
    transfer.push(output);
    return { ...result, output };
  }
  throw new Error(`unknown request ${request.op}`);
}

port.on('message', (/** @type {any} */ message) => {
  if (message.op === 'context') {
    renderer = createRenderer(message.context);
    return;
  }
  if (message.op === 'names') {
    renderer?.setNames(message.names);
    return;
  }
  /** @type {ArrayBuffer[]} */ const transfer = [];
  const answers = message.requests.map((/** @type {any} */ request) => {
    try {
      return { result: answer(request, transfer) };
    } catch (error) {
      const err = /** @type {NodeJS.ErrnoException} */ (error);
      return { error: { message: err.message, code: err.code, name: err.name, syscall: err.syscall, path: err.path } };
    }
  });
  port.postMessage({ answers }, transfer);
});
// Below the main thread (page-threads.js PAGE_THREAD_NICENESS).
if (workerData?.niceness > 0) lowerThreadPriority(workerData.niceness);
port.postMessage({ ready: true });
