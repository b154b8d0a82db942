// @ts-check
/**
 * The front's way to the live origin through undici's Pool; nothing here parses HTTP. The origin gets the method, path and
 * query (never a client's host or scheme: no open proxy), the headers less hop-by-hop ones, Host as configured, and our
 * X-Forwarded-* (the client's own only with trustProxy). The visitor gets the origin's answer unchanged less hop-by-hop
 * headers (an answer read whole in one go gets a Content-Length instead of being chunked); our 502 when the origin cannot be
 * reached, 504 when it does not answer in time, 503 when too many wait for it.
 */
import { Pool } from 'undici';
import { sendError } from '../serve/http-util.js';

/**
 * @typedef {{ origin: string, originHost: string | null, trustProxy: boolean, connectTimeoutMs: number, timeoutMs: number,
 *   connections: number, maxQueued: number, logger: { warn(message: string): void } }} ProxyOptions
 *   origin: http(s)://host[:port]; timeoutMs: for the answer's headers, and between its body's chunks
 */

/** Never forwarded (RFC 9110 §7.6.1), or set by undici itself. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'expect', 'http2-settings']);
/** Ours, unless a proxy before us is trusted. */
const FORWARDING = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded', 'x-real-ip']);

/** @param {string} status @param {string} text */
const page = (status, text) => Buffer.from(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>${status}</title></head><body><h1>${status}</h1><p>${text}</p></body></html>\n`);
const BAD_GATEWAY = page('502 Bad Gateway', 'The live site cannot be reached. Please try again in a moment.');
const GATEWAY_TIMEOUT = page('504 Gateway Timeout', 'The live site did not answer in time. Please try again in a moment.');
const BUSY = page('503 Service Unavailable', 'Too many requests are waiting for the live site. Please try again in a moment.');

/** Hop-by-hop too. @param {string[]} raw flat name, value list */
function connectionTokens(raw) {
  /** @type {Set<string> | null} */ let tokens = null;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === 10 && raw[i].toLowerCase() === 'connection') {
      for (const token of raw[i + 1].split(',')) {
        const name = token.trim().toLowerCase();
        if (name) (tokens ??= new Set()).add(name);
      }
    }
  }
  return tokens;
}

/** The Relay of a visitor's answer, for the listeners all answers share. */
const RELAY = Symbol('relay');

/**
 * One request through undici's handler protocol, as its `stream` uses it but without a stream's listeners per request:
 * the body goes as the visitor takes it, undici waiting while `res.write` says so. The head waits for the end of the read
 * it came in: an answer whole by then leaves with a Content-Length in one write, the others as they come.
 */
class Relay {
  /** @type {((error?: Error) => void) | null} */ #abort = null;
  /** @type {(() => void) | null} */ #resume = null;
  #finished = false;
  #left = false;
  #waitsForDrain = false;
  /** The head not yet written (names and values) and the body read with it. @type {string[] | null} */ #head = null;
  #status = 0;
  #hasLength = false;
  /** @type {Buffer[]} */ #chunks = [];
  #bytes = 0;

  /**
   * @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res @param {string} target
   * @param {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, target: string, error: Error | null) => void} done
   */
  constructor(req, res, target, done) {
    this.req = req;
    this.res = res;
    this.target = target;
    this.done = done;
    /** @type {any} */ (res)[RELAY] = this;
    res.on('close', onVisitorClose);
  }

  /** The visitor leaving cancels the origin's request. */
  visitorLeft() {
    if (this.#finished) return;
    this.#left = true;
    this.#abort?.(new Error('the visitor left'));
  }

  /** @param {(error?: Error) => void} abort */
  onConnect(abort) {
    this.#abort = abort;
    // Left while the request waited for a connection: it is not sent.
    if (this.#left) abort(new Error('the visitor left'));
  }

  /** @param {number} statusCode @param {Buffer[]} raw names and values, one flat list @param {() => void} resume */
  onHeaders(statusCode, raw, resume) {
    if (statusCode < 200) return true; // 1xx: ours to send (node:http answers 100-continue itself)
    /** @type {string[]} */ const flat = new Array(raw.length);
    for (let i = 0; i < raw.length; i++) flat[i] = raw[i].toString('latin1');
    const listed = connectionTokens(flat);
    /** @type {string[]} */ const out = [];
    for (let i = 0; i < flat.length; i += 2) {
      const name = flat[i].toLowerCase();
      if (HOP_BY_HOP.has(name) || listed?.has(name)) continue;
      if (name === 'content-length') this.#hasLength = true;
      out.push(flat[i], flat[i + 1]);
    }
    this.#status = statusCode;
    this.#head = out;
    this.#resume = resume;
    process.nextTick(writeHead, this);
    return true;
  }

  /** Before the end of the read, kept: what undici read is in memory already. @param {Buffer} chunk */
  onData(chunk) {
    if (this.#head !== null) {
      this.#chunks.push(chunk);
      this.#bytes += chunk.length;
      return true;
    }
    if (this.res.write(chunk)) return true;
    if (!this.#waitsForDrain) this.res.on('drain', onVisitorDrain);
    this.#waitsForDrain = true;
    return false;
  }

  /** The head, and the body read with it, as a stream: the answer goes on in later reads. */
  writeHead() {
    const head = this.#head;
    if (head === null || this.#finished) return;
    this.#head = null;
    this.res.writeHead(this.#status, head);
    for (const chunk of this.#chunks) this.onData(chunk);
    this.#chunks = [];
  }

  resume() {
    this.#resume?.();
  }

  onComplete() {
    this.#finished = true;
    const head = this.#head;
    if (head === null) {
      this.res.end();
    } else {
      this.#head = null;
      if (this.#bytes > 0 && !this.#hasLength) head.push('content-length', String(this.#bytes));
      this.res.writeHead(this.#status, head);
      if (this.#bytes === 0) this.res.end();
      else this.res.end(this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks, this.#bytes));
    }
    this.done(this.req, this.res, this.target, null);
  }

  /** @param {Error} error */
  onError(error) {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#left || this.res.destroyed) {
      this.done(this.req, this.res, this.target, null); // the visitor left: nobody to tell
      return;
    }
    this.done(this.req, this.res, this.target, error);
  }
}

/** @this {import('node:http').ServerResponse} */
function onVisitorClose() {
  /** @type {any} */ (this)[RELAY].visitorLeft();
}

/** @this {import('node:http').ServerResponse} */
function onVisitorDrain() {
  /** @type {any} */ (this)[RELAY].resume();
}

/** @param {Relay} relay */
function writeHead(relay) {
  relay.writeHead();
}

/** @param {ProxyOptions} options */
export function createProxy(options) {
  const originUrl = new URL(options.origin);
  const pool = new Pool(originUrl.origin, {
    connections: options.connections,
    pipelining: 1,
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    keepAliveTimeout: 4_000,
  });
  const host = options.originHost ?? originUrl.host;
  /** Running on a connection, or waiting for one. */
  let active = 0;

  /** A flat list, duplicates and spelling kept. @param {import('node:http').IncomingMessage} req */
  function requestHeaders(req) {
    const raw = req.rawHeaders;
    const listed = connectionTokens(raw);
    /** @type {string[]} */ const out = ['host', host];
    /** @type {string | undefined} */ let forwardedFor;
    /** @type {string | undefined} */ let forwardedProto;
    /** @type {string | undefined} */ let forwardedHost;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      if (HOP_BY_HOP.has(name) || listed?.has(name)) continue;
      if (FORWARDING.has(name)) {
        if (!options.trustProxy) continue;
        if (name === 'x-forwarded-for') forwardedFor = forwardedFor === undefined ? raw[i + 1] : `${forwardedFor}, ${raw[i + 1]}`;
        else if (name === 'x-forwarded-proto') forwardedProto ??= raw[i + 1];
        else if (name === 'x-forwarded-host') forwardedHost ??= raw[i + 1];
        else out.push(raw[i], raw[i + 1]);
        continue;
      }
      out.push(raw[i], raw[i + 1]);
    }
    const peer = req.socket.remoteAddress ?? '';
    out.push(
      'x-forwarded-for', forwardedFor === undefined ? peer : `${forwardedFor}, ${peer}`,
      'x-forwarded-proto', forwardedProto ?? ('encrypted' in req.socket ? 'https' : 'http'),
    );
    const visitorHost = forwardedHost ?? req.headers.host;
    if (visitorHost !== undefined) out.push('x-forwarded-host', visitorHost);
    return out;
  }

  /** @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res @param {string} target origin-form */
  function proxy(req, res, target) {
    // Counted here: the pool's own stats are a new object per read.
    if (active >= options.connections + options.maxQueued) {
      return sendError(req, res, 503, { body: BUSY, headers: { 'Retry-After': '1' } });
    }
    active++;
    const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    pool.dispatch(
      {
        path: target,
        method: /** @type {import('undici').Dispatcher.HttpMethod} */ (req.method),
        headers: requestHeaders(req),
        body: hasBody ? req : null,
        // Not retried on another connection: a POST must reach the origin at most once.
        idempotent: false,
      },
      new Relay(req, res, target, done),
    );
  }

  /** @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res @param {string} target @param {Error | null} error */
  function done(req, res, target, error) {
    active--;
    if (!error) return;
    const code = /** @type {{ code?: string }} */ (error).code;
    if (res.headersSent) {
      res.destroy(); // cut mid-answer: the visitor must not take a short body for a whole one
      return;
    }
    if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') {
      options.logger.warn(`origin: ${req.method} ${target.slice(0, 200)}: no answer in time (${code}): 504`);
      return sendError(req, res, 504, { body: GATEWAY_TIMEOUT });
    }
    if (code === 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH' || code === 'UND_ERR_INVALID_ARG') return sendError(req, res, 400);
    options.logger.warn(`origin: ${req.method} ${target.slice(0, 200)}: ${error.message} (${code ?? 'error'}): 502`);
    sendError(req, res, 502, { body: BAD_GATEWAY });
  }

  // Closed by the server's "close" event and by drain(): undici rejects a second close().
  /** @type {Promise<void> | undefined} */
  let closing;
  return Object.assign(proxy, {
    pool,
    close: () => (closing ??= pool.close()),
  });
}
