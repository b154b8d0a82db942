// @ts-check
/**
 * createServer(options): node:http around the price filter, with bounded header sizes and timeouts so a slow client cannot
 * hold a socket, and `drain()` for a graceful stop. runServeCommand(dir, opts, io): what `prerender serve` runs.
 */
import http from 'node:http';
import { once } from 'node:events';
import { createPriceFilter } from './filter.js';
import { createFront } from '../front/handler.js';
import { SERVE_DEFAULTS } from './options.js';
import { UsageError } from '../errors.js';

/**
 * @typedef {import('./filter.js').PriceFilter} PriceFilter
 * @typedef {http.Server & { priceFilter: PriceFilter, front: ReturnType<typeof createFront> | null, inFlight: () => number, drain: (timeoutMs?: number) => Promise<{ cut: number }> }} PrerenderServer
 */

/** Set on an answer while it is counted in flight. */
const COUNTED = Symbol('counted');

/** @param {import('./options.js').ServeOptionsInput} input @returns {PrerenderServer} */
export function createServer(input) {
  const filter = createPriceFilter({ ...input, static: true });
  const o = filter.options;
  // In front of the live site (--origin): the tree answers what it holds, the origin the rest.
  const front = o.origin === null && !o.routeHeader ? null : createFront(filter);
  const handle = front ?? filter;
  const server = http.createServer(
    {
      maxHeaderSize: o.maxHeaderSize,
      headersTimeout: Math.min(o.headersTimeoutMs, o.requestTimeoutMs),
      requestTimeout: o.requestTimeoutMs,
      keepAliveTimeout: o.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, o.headersTimeoutMs),
    },
    (req, res) => {
      count(res);
      res.on('close', onResponseClose); // one shared listener: no closure per request
      // Pipelined requests: answered in order on their connection, each known by it.
      const socket = req.socket;
      let queued = bySocket.get(socket);
      if (!queued) {
        queued = [];
        bySocket.set(socket, queued);
        socket.once('close', onSocketClose);
      }
      // While draining, the last answer of a connection ends it: ending an earlier one would strand the requests pipelined behind.
      if (draining) {
        const before = queued[queued.length - 1];
        if (before && !before.headersSent) before.removeHeader('Connection');
        res.setHeader('Connection', 'close');
      }
      queued.push(res);
      handle(req, res);
    },
  );
  // A count, not a Set of the answers: with a Set, V8 promoted answers that live across ticks (proxied ones) to the old generation.
  let inFlight = 0;
  /** @param {http.ServerResponse} res */
  const count = (res) => {
    /** @type {any} */ (res)[COUNTED] = true;
    inFlight++;
  };
  /** Once per answer, whichever of its close and its connection's comes first. @param {http.ServerResponse} res */
  const uncount = (res) => {
    if (!(/** @type {any} */ (res)[COUNTED])) return;
    /** @type {any} */ (res)[COUNTED] = false;
    inFlight--;
  };
  /** @type {Map<import('node:net').Socket, http.ServerResponse[]>} the answers not yet done, per connection, in order */
  const bySocket = new Map();
  let draining = false;
  /** @type {(() => void) | null} */ let idle = null;
  /** @this {http.ServerResponse} */
  function onResponseClose() {
    uncount(this);
    const queued = this.req?.socket ? bySocket.get(this.req.socket) : undefined;
    const at = queued ? queued.indexOf(this) : -1;
    if (queued && at >= 0) queued.splice(at, 1);
    if (draining && inFlight === 0) idle?.();
  }
  /** The answers still queued on a closed connection can never be sent: no longer waited for. @this {import('node:net').Socket} */
  function onSocketClose() {
    for (const res of bySocket.get(this) ?? []) uncount(res);
    bySocket.delete(this);
    if (draining && inFlight === 0) idle?.();
  }
  server.setTimeout(o.socketTimeoutMs, (socket) => socket.destroy());
  server.on('clientError', (error, socket) => {
    const code = /** @type {{ code?: string }} */ (error).code;
    if (socket.writable && !socket.destroyed) {
      const status = code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    }
    socket.destroy();
  });
  server.on('close', () => {
    void filter.close();
    void front?.close();
  });

  /**
   * No new connections, idle ones closed, requests in flight answered for at most `timeoutMs`, then every connection closed.
   * Resolves with how many requests were cut at the deadline. @param {number} [timeoutMs]
   */
  async function drain(timeoutMs = o.drainTimeoutMs) {
    draining = true;
    // Answers not yet started end their connection too: the last of each connection.
    for (const queued of bySocket.values()) {
      const last = queued[queued.length - 1];
      if (last && !last.headersSent) last.setHeader('Connection', 'close');
    }
    const closed = new Promise((resolve) => server.close(() => resolve(undefined)));
    server.closeIdleConnections();
    // A keep-alive connection becomes idle once its answer is out: close those as they come.
    const sweep = setInterval(() => server.closeIdleConnections(), 25);
    let cut = 0;
    try {
      if (inFlight > 0) {
        /** @type {NodeJS.Timeout | undefined} */ let timer;
        await Promise.race([
          new Promise((resolve) => {
            idle = () => resolve(undefined);
          }),
          new Promise((resolve) => {
            timer = setTimeout(resolve, timeoutMs);
          }),
        ]);
        clearTimeout(timer);
        cut = inFlight;
      }
    } finally {
      clearInterval(sweep);
      server.closeAllConnections();
    }
    await closed;
    await filter.close();
    await front?.close();
    return { cut };
  }

  return Object.assign(server, { priceFilter: filter, front, inFlight: () => inFlight, drain });
}

/**
 * What `prerender serve` holds besides its cache budget before the cache gives way: Node, the manifest's pages, requests in flight.
 * The promise is budget + 150 MB; the allocator does not give back what it took, so the cache acts below it (BENCHMARKS.md, "Decisions").
 */
export const STANDALONE_RSS_HEADROOM = 96 * 1024 * 1024;

/** @param {number} bytes */ const mib = (bytes) => Math.round(bytes / 1048576);

/**
 * A failure to listen as a UsageError saying what to do, when the user can fix it; else the error itself.
 * @param {unknown} error @param {string} host @param {number} port @returns {unknown}
 */
export function listenError(error, host, port) {
  const code = /** @type {NodeJS.ErrnoException} */ (error).code;
  if (code === 'EADDRINUSE') return new UsageError(`port ${port} on ${host} is already in use: stop the other server or pick another --port (0 picks a free one)`, { cause: error });
  if (code === 'EACCES') return new UsageError(`not allowed to listen on port ${port}: ports below 1024 need privileges; pick another --port`, { cause: error });
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new UsageError(`cannot listen on host ${host}: not an address of this machine; try --host 127.0.0.1 or 0.0.0.0`, { cause: error });
  return error;
}

/**
 * Listens on the server's host and port; resolves with its URL, http://HOST:PORT.
 * A port in use or not allowed, or a host not of this machine, is a UsageError saying what to do.
 * @param {PrerenderServer} server
 * @returns {Promise<string>}
 */
export async function listenOn(server) {
  const { host, port } = server.priceFilter.options;
  server.listen(port, host);
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([e]) => Promise.reject(e))]);
  } catch (error) {
    await server.priceFilter.close();
    throw listenError(error, host, port);
  }
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

/**
 * Starts `prerender serve`, prints `listening on http://HOST:PORT`, and
 * resolves once `io.signal` aborts and the server has closed.
 * @param {string} dir
 * @param {Omit<import('./options.js').ServeOptionsInput, 'root'>} opts
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream, signal?: AbortSignal }} io
 */
export async function runServeCommand(dir, opts, io) {
  const logger = {
    warn: (/** @type {string} */ m) => void io.stderr.write(`prerender serve: ${m}\n`),
    info: (/** @type {string} */ m) => void io.stderr.write(`prerender serve: ${m}\n`),
  };
  // The standalone server owns its process: its cache gives way past budget + 96 MiB, unless told otherwise.
  const maxRssBytes = opts.maxRssBytes === undefined ? (opts.pageCacheBytes ?? SERVE_DEFAULTS.pageCacheBytes) + STANDALONE_RSS_HEADROOM : opts.maxRssBytes;
  const server = createServer({ logger, ...opts, maxRssBytes, root: dir });
  const budget = server.priceFilter.options.pageCacheBytes;
  logger.info(`cache budget ${mib(budget)} MiB; ${maxRssBytes === null ? 'no bound on the resident memory (--max-rss off)' : `the cache gives way when the resident memory passes ${mib(maxRssBytes)} MiB (--max-rss)`}`);
  io.stdout.write(`listening on ${await listenOn(server)}\n`);
  await server.priceFilter.ready;
  if (io.signal) {
    if (!io.signal.aborted) await once(io.signal, 'abort');
  } else {
    await new Promise(() => {}); // serve until the process ends
  }
  const waiting = server.inFlight();
  logger.info(`stopping: no new connections; ${waiting === 0 ? 'no request in flight' : `waiting up to ${server.priceFilter.options.drainTimeoutMs} ms for ${waiting} request(s) in flight`} (a second signal quits at once)`);
  const { cut } = await server.drain();
  if (cut > 0) logger.warn(`--drain-timeout reached: ${cut} request(s) still in flight were cut`);
  else logger.info('stopped');
}

