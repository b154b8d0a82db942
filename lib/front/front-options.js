// @ts-check
/** The front's options (serve --origin): defaults, and the checks that say what to give. */
import { UsageError } from '../errors.js';

/**
 * @typedef {{ origin: string | null, originHost: string | null, dynamic: string[] | null, routeHeader: boolean, trustProxy: boolean,
 *   originConnectTimeoutMs: number, originTimeoutMs: number, originConnections: number, originQueue: number }} FrontDefaults
 */

/** @type {Readonly<FrontDefaults>} */ export const FRONT_DEFAULTS = Object.freeze({
  /** The live site every request the tree does not answer goes to (null: none, the tree alone). */
  origin: null,
  /** The Host header the origin gets (null: the host of `origin`). */
  originHost: null,
  /** Patterns (as --include's) of URLs always passed to the origin, even when the tree holds them (null: none). */
  dynamic: /** @type {string[] | null} */ (null),
  /** Without an origin: answer what is the origin's with 404 and `X-Prerender-Route: origin` (the tree backend of the generated VCL). */
  routeHeader: false,
  /** Take X-Forwarded-* and Forwarded from the client (only behind a proxy of your own). */
  trustProxy: false,
  originConnectTimeoutMs: 5_000,
  /** For the origin's response headers, and then between chunks of its body. */
  originTimeoutMs: 30_000,
  /** Requests to the origin at once (keep-alive connections); more wait. */
  originConnections: 64,
  /** Requests waiting for a connection to the origin; beyond, a 503 at once. */
  originQueue: 1024,
});

const HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/** @param {Record<string, any>} o the serve options being normalised */
export function normalizeFrontOptions(o) {
  if (o.origin === undefined || o.origin === '') o.origin = null;
  if (o.origin !== null) {
    let url;
    try {
      url = new URL(String(o.origin));
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.pathname !== '/' || url.search || url.hash) {
      throw new UsageError(`serve: --origin must be the live site as http(s)://host[:port], without a path, got ${JSON.stringify(o.origin)}`);
    }
    o.origin = url.origin;
    o.addRedirects = false; // a directory without its slash, and `/`, are the origin's to answer
  }
  if (o.originHost !== null && (typeof o.originHost !== 'string' || !HOST.test(o.originHost))) {
    throw new UsageError(`serve: --origin-host must be a host name with an optional :port, got ${JSON.stringify(o.originHost)}`);
  }
  o.dynamic ??= [];
  if (!Array.isArray(o.dynamic) || o.dynamic.some((/** @type {unknown} */ p) => typeof p !== 'string' || p === '')) {
    throw new UsageError('serve: --dynamic takes URL patterns such as \'/st/cart.asp*\'');
  }
  if (typeof o.routeHeader !== 'boolean') throw new UsageError(`serve: routeHeader must be true or false, got ${JSON.stringify(o.routeHeader)}`);
  if (o.routeHeader && o.origin !== null) throw new UsageError('serve: --route-header is for the tree backend of a Varnish front, without --origin (Varnish goes to the origin itself)');
  if (o.routeHeader) o.addRedirects = false;
  if (o.dynamic.length > 0 && o.origin === null && !o.routeHeader) throw new UsageError('serve: --dynamic needs --origin (the live site the dynamic URLs go to)');
  if (typeof o.trustProxy !== 'boolean') throw new UsageError(`serve: trustProxy must be true or false, got ${JSON.stringify(o.trustProxy)}`);
  for (const name of ['originConnectTimeoutMs', 'originTimeoutMs', 'originConnections', 'originQueue']) {
    if (!Number.isInteger(o[name]) || o[name] <= 0) throw new UsageError(`serve: ${name} must be a whole number above 0, got ${JSON.stringify(o[name])}`);
  }
}
