// @ts-check
/**
 * createPriceFilter(options): a `(req, res, next)` middleware for node:http, Express and Connect. Pages with price slots are
 * answered from pre-split Buffers with the visitor's prices spliced in; with `static` every other file of the tree too; the
 * rest goes to `next()`, or a 404. At creation: the manifest's pages, the price source, the watch; per request: createRouter.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import { UsageError } from '../errors.js';
import { EmptyPriceSource, openPriceSource, TablePriceSource } from '../prices/index.js';
import { PageFiller } from './fill.js';
import { FileCache } from './files.js';
import { sendError } from './http-util.js';
import { MANIFEST_NAME } from './manifest.js';
import { FRONT_FILES } from '../front/front-files.js';
import { normalizeServeOptions } from './options.js';
import { PageStore } from './pages.js';
import { encodePath, isInside, parseRequestTarget } from './paths.js';
import { rootRedirect } from './root.js';
import { serveStatic } from './static.js';
import { watchTree } from './tree-watch.js';


/** Most route cache entries, longest URL kept. */
const MAX_ROUTES = 10_000;
const MAX_ROUTE_LENGTH = 512;
/** Plain files larger than this are streamed, not cached. */
const MAX_CACHED_FILE = 4 * 1024 * 1024;

/**
 * @typedef {import('node:http').IncomingMessage} Req @typedef {import('node:http').ServerResponse} Res @typedef {(error?: unknown) => void} Next
 * @typedef {import('./pages.js').PreparedPage} PreparedPage @typedef {import('../prices/index.js').PriceSource} PriceSource
 * @typedef {((req: Req, res: Res, next?: Next) => void) & { ready: Promise<void>, close: () => Promise<void>, events: EventEmitter,
 *   prices: PriceSource, pages: PageStore, cache: import('lru-cache').LRUCache<string, import('./byte-cache.js').Sized>,
 *   options: import('./options.js').ServeOptions }} PriceFilter
 */

/** @param {import('./options.js').ServeOptionsInput} input @returns {PriceFilter} */
export function createPriceFilter(input) {
  const options = normalizeServeOptions(input);
  const events = new EventEmitter();
  /** @type {import('./options.js').Logger} */ const logger = {
    warn(message) {
      options.logger.warn(message);
      events.emit('warning', message);
    },
    info(message) {
      options.logger.info?.(message);
    },
  };

  /** @type {PageStore} */ let pages;
  try {
    // One byte budget for every cached variant, less what the manifest's pages take.
    pages = new PageStore(options.realRoot, { logger, cacheBytes: options.pageCacheBytes, maxRss: options.maxRssBytes });
  } catch (error) {
    throw new UsageError(`serve: cannot use the manifest: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
  const cache = pages.cache;
  const prices = openSource(options, logger, pages.fillableCount > 0);
  let warnedNoSource = pages.fillableCount > 0;
  for (const name of ['reload', 'reload-error', 'lookup-error', 'breaker']) prices.on?.(name, (arg) => events.emit(`prices-${name}`, arg));
  for (const name of ['manifest-reload', 'manifest-error', 'stale']) pages.on(name, (arg) => events.emit(name, arg));
  pages.on('manifest-reload', () => {
    if (options.prices === null && !warnedNoSource && pages.fillableCount > 0) {
      warnedNoSource = true;
      warnNoSource(options, logger);
    }
  });

  const files = new FileCache(cache, { realRoot: options.realRoot, cacheControl: options.staticCacheControl, maxFileBytes: Math.min(MAX_CACHED_FILE, options.pageCacheBytes / 8) });
  const filler = new PageFiller({ options, pages, prices, logger });
  const { filter, loadNotFoundPage } = createRouter(options, pages, files, filler, logger, () => tree.check());
  // serve DIR/current: the tree moved with the link (tree-watch.js); what is read from now on is read there.
  pages.on('root', (/** @type {string} */ real) => {
    options.realRoot = real;
    files.moveTo(real);
  });
  const tree = watchTree(options, pages, loadNotFoundPage, logger);

  const ready = Promise.resolve();
  /** @type {Promise<void> | null} */ let closing = null;
  return Object.assign(filter, {
    ready,
    events,
    prices,
    pages,
    cache,
    options,
    /** Once: the server's close and a drain both call it. */
    close() {
      closing ??= (async () => {
        tree.close();
        await prices.close?.();
      })();
      return closing;
    },
  });
}

/**
 * @param {import('./options.js').ServeOptions} options @param {PageStore} pages @param {FileCache} files @param {PageFiller} filler
 * @param {import('./options.js').Logger} logger @param {() => Promise<boolean>} recheck the tree's root and manifest checked now (tree-watch.js)
 */
function createRouter(options, pages, files, filler, logger, recheck) {
  /** @type {Map<string, import('./pages.js').PageMeta>} request targets as sent that passed the path checks once; bounded, emptied with the manifest */
  const routes = new Map();
  pages.on('manifest-reload', () => routes.clear());
  pages.on('root', (/** @type {string} */ real) => { staticOptions.realRoot = real; });
  const staticOptions = {
    realRoot: options.realRoot,
    contentType: (/** @type {string} */ key) => pages.contentType(key),
    cacheControl: options.staticCacheControl,
    files,
    addRedirects: options.addRedirects,
  };

  /** When the tree has no index.html (root.js). */
  let rootLocation = options.addRedirects ? rootRedirect(options.realRoot, pages.manifest, logger) : null;
  pages.on('manifest-reload', () => {
    if (options.addRedirects) rootLocation = rootRedirect(options.realRoot, pages.manifest, logger);
  });
  let notFoundPage = readNotFoundPage(options, pages);
  const loadNotFoundPage = () => {
    notFoundPage = readNotFoundPage(options, pages);
  };

  /**
   * A request that found the served tree gone, or looked in a tree that has moved since, is answered again once (serve
   * DIR/current), after the link is resolved anew if need be.
   */
  const retried = new WeakSet();
  /** @param {Req} req @param {Res} res @param {Next | undefined} next @param {string} [lookedIn] the tree its lookup began in */
  function notFound(req, res, next, lookedIn = options.realRoot) {
    if (!retried.has(req) && lookedIn !== options.realRoot) {
      retried.add(req);
      filter(req, res, next);
      return;
    }
    if (!retried.has(req) && !fs.existsSync(options.realRoot)) {
      retried.add(req);
      recheck().then(() => filter(req, res, next), (error) => fail(req, res, error));
      return;
    }
    if (next) return next();
    if (notFoundPage) sendError(req, res, 404, notFoundPage);
    else sendError(req, res, 404);
  }

  /** @param {Req} req @param {Res} res @param {Next} [next] */
  function filter(req, res, next) {
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') {
      if (next) return next();
      return sendError(req, res, 405, { headers: { Allow: 'GET, HEAD' } });
    }
    const url = req.url;
    // Fast path: a request target already seen that names a page with slots.
    const known = routes.get(/** @type {string} */ (url));
    if (known !== undefined) return load(req, res, known, next);
    const target = parseRequestTarget(url);
    if (target.ok === false) {
      // Not a file of the tree (`..`, %2F, a hidden or overlong segment): the application's own routes may still want it.
      if (next) return next();
      return sendError(req, res, /** @type {import('./paths.js').RejectedTarget} */ (target).status);
    }
    const key = target.path === '' ? 'index.html' : target.dir ? `${target.path}/index.html` : target.path;
    const meta = pages.fillable(key);
    if (meta !== undefined && typeof url === 'string' && url.length <= MAX_ROUTE_LENGTH) {
      if (routes.size >= MAX_ROUTES) routes.clear();
      routes.set(url, meta);
    }
    if (meta === undefined) {
      if (options.addRedirects && !target.dir && target.path !== '' && pages.fillable(`${target.path}/index.html`)) {
        res.writeHead(301, { Location: `${encodePath(target.path)}/${target.search}`, 'Content-Length': 0 });
        res.end();
        return;
      }
      if (key === MANIFEST_NAME || FRONT_FILES.includes(key)) return notFound(req, res, next);
      if (!options.static) return notFound(req, res, next);
      if (req.headers.range === undefined) {
        const requestKey = target.dir || target.path === '' ? `${target.path}/` : target.path;
        const hot = files.get(requestKey);
        if (hot) return files.send(req, res, hot, requestKey);
      }
      const lookedIn = options.realRoot;
      serveStatic(req, res, target, staticOptions).then(
        (outcome) => {
          if (outcome !== 'not-found') return;
          if (target.path === '' && rootLocation && options.addRedirects) {
            res.writeHead(302, { Location: rootLocation + target.search, 'Content-Length': 0, 'Cache-Control': 'no-cache' });
            res.end();
            return;
          }
          notFound(req, res, next, lookedIn);
        },
        (error) => fail(req, res, error),
      );
      return;
    }
    load(req, res, meta, next);
  }

  /** @param {Req} req @param {Res} res @param {import('./pages.js').PageMeta} meta @param {Next} [next] */
  function load(req, res, meta, next) {
    const lookedIn = options.realRoot;
    const page = pages.get(meta);
    if (page instanceof Promise) {
      page.then(
        (loaded) => (loaded ? filler.fill(req, res, loaded) : notFound(req, res, next, lookedIn)),
        (error) => fail(req, res, error),
      );
    } else {
      filler.fill(req, res, page);
    }
  }

  /** @param {Req} req @param {Res} res @param {unknown} error */
  function fail(req, res, error) {
    logger.warn(`${req.method} ${String(req.url).slice(0, 200)}: ${/** @type {Error} */ (error)?.message ?? error}`);
    sendError(req, res, 500);
  }

  return { filter, loadNotFoundPage };
}

/** Or null. @param {import('./options.js').ServeOptions} options @param {PageStore} pages @returns {{ body: Buffer, contentType: string } | null} */
function readNotFoundPage(options, pages) {
  try {
    // A link leading out of the tree is not followed.
    const real = fs.realpathSync(`${options.realRoot}/404.html`);
    if (!isInside(options.realRoot, real) || !fs.statSync(real).isFile()) throw new Error('404.html leads out of the tree');
    const body = fs.readFileSync(real);
    return { body, contentType: pages.contentType('404.html') };
  } catch {
    return null;
  }
}

/** @param {import('./options.js').ServeOptions} options @param {import('./options.js').Logger} logger */
function warnNoSource(options, logger) {
  logger.warn(`no price source given: every price slot shows the fallback ${JSON.stringify(options.fallback)}`);
}

/**
 * @param {import('./options.js').ServeOptions} options @param {import('./options.js').Logger} logger
 * @param {boolean} hasSlots no source is worth a warning only then @returns {PriceSource}
 */
function openSource(options, logger, hasSlots) {
  const spec = options.prices;
  if (spec === null) {
    if (hasSlots) warnNoSource(options, logger);
    return new EmptyPriceSource();
  }
  if (typeof spec === 'object' && typeof spec.lookup === 'function') return /** @type {PriceSource} */ (spec);
  try {
    if (typeof spec === 'object') return new TablePriceSource(/** @type {Record<string, Record<string, string>>} */ (spec), options);
    return openPriceSource(spec, {
      logger,
      maxPriceLength: options.maxPriceLength,
      watch: options.watch,
      pollIntervalMs: options.pollIntervalMs,
      timeoutMs: options.priceTimeoutMs,
      queueMs: options.priceQueueMs,
      ttlMs: options.priceCacheTtlMs,
      staleMs: options.priceCacheStaleMs,
      negativeTtlMs: options.priceNegativeTtlMs,
      cacheSize: options.priceCacheSize,
      connections: options.priceConnections,
    });
  } catch (error) {
    throw new UsageError(`serve: cannot load prices from ${typeof spec === 'string' ? spec : 'the prices object'}: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
}
