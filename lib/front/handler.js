// @ts-check
/** `prerender serve --origin`'s handler: each request routed once; the tree answers through the price filter, the rest is proxied. */
import fs from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import { parseManifest, MANIFEST_NAME } from '../output/manifest/index.js';
import { sendError } from '../serve/http-util.js';
import { encodePath } from '../serve/paths.js';
import { createProxy } from './proxy.js';
import { originForm, RouteTable } from './route.js';

/** An empty table on the origin's site when the tree has no manifest. @param {string} realRoot @param {import('../serve/options.js').ServeOptions} options */
export function loadRoutes(realRoot, options) {
  let text;
  try {
    text = fs.readFileSync(path.join(realRoot, MANIFEST_NAME), 'utf8');
  } catch {
    return new RouteTable({ site: options.origin ?? 'http://localhost', dynamic: options.dynamic ?? [] });
  }
  return RouteTable.fromManifest(parseManifest(text), { dynamic: options.dynamic ?? [] });
}

/** The filter then decides what. @param {string} realRoot @param {string} rel a path parseRequestTarget accepted */
function existsInTree(realRoot, rel) {
  try {
    return fs.statSync(path.join(realRoot, rel), { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false; // ENOTDIR: a file where a directory would be
  }
}

/**
 * existsInTree at most once a second per path, as the hot-file cache stats its files: a file put in the tree is found
 * within a second. A file gone is harmless: the filter finds nothing and proxies. @param {string} realRoot
 */
function treeLookup(realRoot) {
  const known = new LRUCache({ max: 10_000, ttl: 1000 });
  return (/** @type {string} */ rel) => {
    let found = known.get(rel);
    if (found === undefined) known.set(rel, (found = existsInTree(realRoot, rel)));
    return found;
  };
}

/** @param {import('../serve/filter.js').PriceFilter} filter */
export function createFront(filter) {
  const options = filter.options;
  const logger = options.logger;
  let routes = loadRoutes(options.realRoot, options);
  for (const warning of routes.warnings) logger.warn(warning);
  logger.info?.(`${options.origin ? `in front of ${options.origin}` : 'the tree backend of a Varnish front (--route-header)'}: ${routes.pages.size} URLs of ${routes.site} and the tree's files from the tree, ${routes.redirects.size} redirects answered here, everything else to the origin`);
  let inTree = treeLookup(options.realRoot);
  filter.events.on('manifest-reload', () => {
    inTree = treeLookup(options.realRoot); // a new tree, perhaps at a new realRoot
    try {
      routes = loadRoutes(options.realRoot, options);
    } catch (error) {
      logger.warn(`${MANIFEST_NAME} changed but its routes cannot be read (${/** @type {Error} */ (error).message}); keeping the previous ones`);
    }
  });
  const proxy = options.origin === null ? null : createProxy({
    origin: /** @type {string} */ (options.origin),
    originHost: options.originHost,
    trustProxy: options.trustProxy,
    connectTimeoutMs: options.originConnectTimeoutMs,
    timeoutMs: options.originTimeoutMs,
    connections: options.originConnections,
    maxQueued: options.originQueue,
    logger,
  });

  /**
   * Proxied, or with --route-header said so to the Varnish in front.
   * @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res @param {string | undefined} url as received
   */
  function toOrigin(req, res, url) {
    if (proxy) return proxy(req, res, /** @type {string} */ (originForm(url)));
    req.resume();
    res.writeHead(404, { 'X-Prerender-Route': 'origin', 'Content-Length': 0, 'Cache-Control': 'no-cache' });
    res.end();
  }

  /** @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res */
  function front(req, res) {
    const url = req.url;
    const route = routes.decide(req.method, url);
    switch (route.kind) {
      case 'refuse':
        return sendError(req, res, route.status);
      case 'redirect':
        res.writeHead(route.status, { Location: route.location, 'Content-Length': 0, 'Cache-Control': 'no-cache' });
        res.end();
        return;
      case 'origin':
        return toOrigin(req, res, url);
      case 'page':
        // The page's own file; when it is gone from the tree, the origin still has the URL.
        req.url = encodePath(route.file);
        return filter(req, res, () => toOrigin(req, res, url));
      default: {
        // Most requests here are the origin's: a stat that does not throw tells at once, where the filter's would build an ENOENT error.
        const path = route.target.path;
        if (path !== '' && !inTree(path)) return toOrigin(req, res, url);
        return filter(req, res, () => toOrigin(req, res, url));
      }
    }
  }

  return Object.assign(front, { proxy, close: async () => proxy?.close() });
}
