// @ts-check
/**
 * createPriceFilter(options): a `(req, res, next)` middleware for node:http,
 * Express and Connect. Pages with price slots are answered from pre-split
 * Buffers with the visitor's prices spliced in; with `static: true` (the
 * default) every other file of the tree is served too; anything else goes to
 * `next()` (or gets a 404 when there is no `next`).
 *
 * Per request: parse the path, look the page up, resolve the zip, look the
 * prices up (synchronously for files and cache hits), write the joined parts.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { UsageError } from '../errors.js';
import { EmptyPriceSource, openPriceSource, TablePriceSource } from '../prices/index.js';
import { brotliOptions } from './byte-cache.js';
import { PriceEncoder } from './escape.js';
import { FileCache } from './files.js';
import { gzipFilled } from './gzip.js';
import { isNotModified, preferredEncodings, sendError } from './http-util.js';
import { MANIFEST_NAME } from './manifest.js';
import { FRONT_FILES } from '../front/front-files.js';
import { normalizeServeOptions } from './options.js';
import { PageStore } from './pages.js';
import { combineEtag, textHash } from './etag.js';
import { encodePath, isInside, parseRequestTarget } from './paths.js';
import { rootRedirect } from './root.js';
import { zipFromRequest } from './request-zip.js';
import { chunkParts, joinParts } from './splice.js';
import { serveStatic } from './static.js';

/** The route cache (see `routes`): most entries, longest URL kept. */
const MAX_ROUTES = 10_000;
const MAX_ROUTE_LENGTH = 512;
/** Filled pages up to this size are brotli-compressed on the event loop (about a millisecond at quality 5), larger ones on the thread pool. */
const SYNC_BROTLI_BYTES = 64 * 1024;

/** Plain files larger than this are streamed, not cached. */
const MAX_CACHED_FILE = 4 * 1024 * 1024;

/**
 * @typedef {import('node:http').IncomingMessage} Req
 * @typedef {import('node:http').ServerResponse} Res
 * @typedef {(error?: unknown) => void} Next
 * @typedef {import('./pages.js').PreparedPage} PreparedPage
 * @typedef {import('../prices/index.js').PriceSource} PriceSource
 *
 * @typedef {((req: Req, res: Res, next?: Next) => void) & {
 *   ready: Promise<void>,
 *   close: () => Promise<void>,
 *   events: EventEmitter,
 *   prices: PriceSource,
 *   pages: PageStore,
 *   cache: import('lru-cache').LRUCache<string, import('./byte-cache.js').Sized>,
 *   options: import('./options.js').ServeOptions,
 * }} PriceFilter
 */

/**
 * @param {import('./options.js').ServeOptionsInput} input
 * @returns {PriceFilter}
 */
export function createPriceFilter(input) {
  const options = normalizeServeOptions(input);
  const events = new EventEmitter();
  /** @type {import('./options.js').Logger} */
  const logger = {
    warn(message) {
      options.logger.warn(message);
      events.emit('warning', message);
    },
    info(message) {
      options.logger.info?.(message);
    },
  };

  /** @type {PageStore} */
  let pages;
  try {
    // One byte budget for every cached variant (pages with slots, plain files, compressed forms), less what the manifest's pages take.
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
    if (options.addRedirects) rootLocation = rootRedirect(options.realRoot, pages.manifest, logger);
  });

  /**
   * Request targets (`req.url` as sent) already parsed that name a page with
   * slots, so that the common request skips the path checks: each URL here
   * passed them once. Bounded; emptied when the manifest changes.
   * @type {Map<string, import('./pages.js').PageMeta>}
   */
  const routes = new Map();
  pages.on('manifest-reload', () => routes.clear());

  const encoder = new PriceEncoder();
  /** What a slot with no price counts as in the ETag (not any price text: it has a NUL). */
  const fallbackHash = textHash(`\u0000fallback\u0000${options.fallback}`);
  const fallback = { utf8: encoder.encode(options.fallback, false), ascii: encoder.encode(options.fallback, true) };
  const names = { zipParam: options.zipParam, zipCookie: options.zipCookie };
  const files = new FileCache(cache, { realRoot: options.realRoot, cacheControl: options.staticCacheControl, maxFileBytes: Math.min(MAX_CACHED_FILE, options.pageCacheBytes / 8) });
  const staticOptions = {
    realRoot: options.realRoot,
    contentType: (/** @type {string} */ key) => pages.contentType(key),
    cacheControl: options.staticCacheControl,
    files,
    addRedirects: options.addRedirects,
  };
  /** How long a page waits for its prices at most: the queue bound and the endpoint timeout, and a little. */
  const priceDeadlineMs = options.priceQueueMs + options.priceTimeoutMs + 50;

  /** Where `/` goes when the tree has no index.html (root.js). */
  let rootLocation = options.addRedirects ? rootRedirect(options.realRoot, pages.manifest, logger) : null;
  /** @type {{ body: Buffer, contentType: string } | null} */
  let notFoundPage = null;
  const loadNotFoundPage = () => {
    try {
      // The same check as for every other file: a link leading out of the tree is not followed.
      const real = fs.realpathSync(`${options.realRoot}/404.html`);
      if (!isInside(options.realRoot, real) || !fs.statSync(real).isFile()) throw new Error('404.html leads out of the tree');
      const body = fs.readFileSync(real);
      notFoundPage = { body, contentType: pages.contentType('404.html') };
    } catch {
      notFoundPage = null;
    }
  };
  loadNotFoundPage();

  // Manifest hot reload: watch the root for the manifest being replaced.
  /** @type {fs.FSWatcher | null} */
  let watcher = null;
  /** @type {NodeJS.Timeout | null} */
  let poll = null;
  /** @type {NodeJS.Timeout | null} */
  let debounce = null;
  let closed = false;
  /** @type {Promise<void> | null} */
  let closing = null;
  const recheck = () => {
    if (closed) return;
    if (debounce) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = null;
      void pages.reloadManifest().then((changed) => {
        if (changed && !closed) loadNotFoundPage();
      });
    }, 50);
    debounce.unref();
  };
  if (options.watch) {
    try {
      watcher = fs.watch(options.realRoot, { persistent: false }, (_e, name) => {
        if (name === null || name === MANIFEST_NAME) recheck();
      });
      watcher.on('error', () => {
        watcher?.close();
        watcher = null;
      });
    } catch {
      watcher = null;
    }
    poll = setInterval(recheck, options.pollIntervalMs);
    poll.unref();
  }

  // Pages load lazily, on their first request: nothing to wait for.
  const ready = Promise.resolve();

  /**
   * @param {Req} req
   * @param {Res} res
   * @param {Next | undefined} next
   */
  function notFound(req, res, next) {
    if (next) return next();
    if (notFoundPage) sendError(req, res, 404, notFoundPage);
    else sendError(req, res, 404);
  }

  /**
   * @param {Req} req
   * @param {Res} res
   * @param {Next} [next]
   */
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
      // Not a file of the tree (`..`, %2F, a hidden or overlong segment...): as middleware, the
      // application's own routes may still want it (an id with an encoded slash, a long token).
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
      serveStatic(req, res, target, staticOptions).then(
        (outcome) => {
          if (outcome !== 'not-found') return;
          if (target.path === '' && rootLocation && options.addRedirects) {
            res.writeHead(302, { Location: rootLocation + target.search, 'Content-Length': 0, 'Cache-Control': 'no-cache' });
            res.end();
            return;
          }
          notFound(req, res, next);
        },
        (error) => fail(req, res, error),
      );
      return;
    }
    load(req, res, meta, next);
  }

  /**
   * @param {Req} req
   * @param {Res} res
   * @param {import('./pages.js').PageMeta} meta
   * @param {Next} [next]
   */
  function load(req, res, meta, next) {
    const page = pages.get(meta);
    if (page instanceof Promise) {
      page.then(
        (loaded) => (loaded ? fill(req, res, loaded) : notFound(req, res, next)),
        (error) => fail(req, res, error),
      );
    } else {
      fill(req, res, page);
    }
  }

  /**
   * @param {Req} req
   * @param {Res} res
   * @param {PreparedPage} page
   */
  function fill(req, res, page) {
    const skus = page.skus;
    const zip = zipFromRequest(req.url, req.headers.cookie, names) ?? options.defaultZip;
    /** @type {(string | null | Promise<string | null>)[]} */
    const values = new Array(skus.length);
    let pending = false;
    for (let i = 0; i < skus.length; i++) {
      let value;
      try {
        value = prices.lookup(skus[i], zip);
      } catch (error) {
        logger.warn(`prices: lookup failed for ${skus[i]}: ${/** @type {Error} */ (error).message}`);
        value = null;
      }
      if (value !== null && typeof value === 'object' && typeof value.then === 'function') pending = true;
      values[i] = value;
    }
    if (!pending) return send(req, res, page, /** @type {(string | null)[]} */ (values));
    // Never wait longer than the price timeout, whatever the source does.
    /** @type {NodeJS.Timeout | undefined} */
    let timer;
    const deadline = new Promise((resolve) => {
      timer = setTimeout(resolve, priceDeadlineMs, null);
    });
    Promise.all(
      values.map((v) =>
        Promise.race([Promise.resolve(v), deadline]).then(
          (x) => (typeof x === 'string' ? x : null),
          () => null,
        ),
      ),
    ).then((resolved) => {
      clearTimeout(timer);
      if (!res.destroyed) send(req, res, page, resolved);
    });
  }

  /**
   * @param {Req} req
   * @param {Res} res
   * @param {PreparedPage} page
   * @param {(string | null)[]} values
   */
  function send(req, res, page, values) {
    const ascii = page.asciiOnly;
    const parts = page.parts;
    const n = values.length;
    /** @type {Buffer[]} */
    const encoded = new Array(n);
    /** @type {import('./etag.js').TextHash[]} */
    const hashes = new Array(n);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (typeof v === 'string') {
        const e = encoder.entry(v, ascii);
        encoded[i] = e.buf;
        hashes[i] = e.hash;
      } else {
        encoded[i] = ascii ? fallback.ascii : fallback.utf8;
        hashes[i] = fallbackHash;
      }
    }
    const etag = combineEtag(page.tag, hashes);
    const headers = [
      'Content-Type', page.contentType,
      'Cache-Control', options.filledCacheControl,
      'Vary', 'Cookie, Accept-Encoding',
      'X-Content-Type-Options', 'nosniff',
      'ETag', etag,
    ];
    if (req.headers['if-none-match'] !== undefined && isNotModified(req.headers, etag, 0)) {
      res.writeHead(304, headers.slice(2));
      res.end();
      return;
    }
    const encoding = preferredEncodings(/** @type {string | undefined} */ (req.headers['accept-encoding']))[0];
    if (encoding === 'br') {
      const cached = pages.brotliBody(page, etag);
      if (cached) return write(req, res, headers, cached, 'br');
      const identity = joinParts(parts, encoded);
      // A page of usual size is compressed here, not on the thread pool: memory a pool thread takes
      // stays with that thread, out of the cache's reach (measured: 30 MB more RSS over 20,000 br
      // requests), and the gzip path deflates here too. A large page goes to the pool, not to hold
      // the event loop. (The brotli form is cached by the page's ETag: once per page and prices.)
      if (identity.length <= SYNC_BROTLI_BYTES) {
        let body;
        try {
          body = zlib.brotliCompressSync(identity, brotliOptions(identity.length, 5));
        } catch {
          return write(req, res, headers, identity, null);
        }
        pages.rememberBrotli(page, etag, body);
        return write(req, res, headers, body, 'br');
      }
      zlib.brotliCompress(identity, brotliOptions(identity.length, 5), (error, body) => {
        if (res.destroyed) return;
        if (error) return write(req, res, headers, identity, null);
        pages.rememberBrotli(page, etag, body);
        write(req, res, headers, body, 'br');
      });
      return;
    }
    if (encoding === 'gzip') return write(req, res, headers, gzipFilled(parts, pages.deflated(page), encoded), 'gzip');
    // Identity: the page's parts go out as they are (no copy of the page per request).
    const { chunks, length } = chunkParts(parts, encoded);
    headers.push('Content-Length', String(length));
    res.writeHead(200, headers);
    if (req.method === 'HEAD' || chunks.length === 0) return void res.end();
    // (node:http corks the socket on the first write: the chunks leave in one writev)
    const last = chunks.length - 1;
    for (let i = 0; i < last; i++) res.write(chunks[i]);
    res.end(chunks[last]);
  }

  /**
   * @param {Req} req
   * @param {Res} res
   * @param {string[]} headers
   * @param {Buffer} body
   * @param {string | null} encoding
   */
  function write(req, res, headers, body, encoding) {
    headers.push('Content-Length', String(body.length));
    if (encoding) headers.push('Content-Encoding', encoding);
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  /**
   * @param {Req} req
   * @param {Res} res
   * @param {unknown} error
   */
  function fail(req, res, error) {
    logger.warn(`${req.method} ${String(req.url).slice(0, 200)}: ${/** @type {Error} */ (error)?.message ?? error}`);
    sendError(req, res, 500);
  }

  return Object.assign(filter, {
    ready,
    events,
    prices,
    pages,
    cache,
    options,
    /** Stops watching and closes the price source; once (the server's close and a drain both call it). */
    close() {
      closing ??= (async () => {
        closed = true;
        watcher?.close();
        if (poll) clearInterval(poll);
        if (debounce) clearTimeout(debounce);
        await prices.close?.();
      })();
      return closing;
    },
  });
}

/**
 * @param {import('./options.js').ServeOptions} options
 * @param {import('./options.js').Logger} logger
 */
function warnNoSource(options, logger) {
  logger.warn(`no price source given: every price slot shows the fallback ${JSON.stringify(options.fallback)}`);
}

/**
 * @param {import('./options.js').ServeOptions} options
 * @param {import('./options.js').Logger} logger
 * @param {boolean} hasSlots whether the tree has price slots (no source is worth a warning only then)
 * @returns {PriceSource}
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
