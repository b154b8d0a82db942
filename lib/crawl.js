// @ts-check
import { EventEmitter } from 'node:events';
import { createHash } from 'node:crypto';
import { AbortError, PrerenderError } from './errors.js';
import { createFetcher } from './fetch.js';
import { Frontier } from './frontier.js';
import { ManifestWriter } from './manifest.js';
import { FileRegistry, defaultFileName, headerFileName, hostDirectory, isHtmlType, mimeOf } from './naming.js';
import { resolveCrawlOptions } from './options.js';
import { decodeScan, encodeScan, renderDocument, resolveLinks, scanDocument } from './page.js';
import { Scope } from './scope.js';
import { canonicalKey, parseHttpUrl } from './url.js';
import { TreeWriter } from './write.js';
import { detectCharset } from './charset.js';
import { loadListedRoots } from './sources.js';
import { SitemapWriter, isSitemapName } from './sitemap-writer.js';

/**
 * The crawl: roots -> scope -> frontier -> fetch -> parse -> name -> (stage)
 * then rewrite -> write -> manifest.
 *
 * Phase one fetches every in-scope page, names it and discovers its links;
 * HTML (and CSS with --assets) is staged on disk, everything else is written
 * at once. Phase two, when every name is known, rewrites each staged page and
 * writes it. Memory grows with the URL set only, never with page bodies.
 *
 * Events: 'page' (fetched and named), 'redirect', 'retry', 'failure',
 * 'warning', 'written', 'link' (every link discovered, with its scope decision).
 *
 * @typedef {import('./frontier.js').Entry} Entry
 * @typedef {import('./manifest.js').ManifestPage} ManifestPage
 * @typedef {{
 *   out: string, manifest: string | null, pages: number, failed: number, warnings: number, redirects: number,
 *   notCrawled: number, interrupted: boolean, durationMs: number,
 *   failures: { url: string, status?: number, message: string, referrers: string[] }[],
 * }} CrawlResult
 */

/**
 * One copy of each content type and charset string for the whole run.
 * @param {{ interned: Map<string, string> }} run
 * @param {string} text
 */
function intern(run, text) {
  let kept = run.interned.get(text);
  if (kept === undefined) {
    kept = text;
    if (run.interned.size < 1000) run.interned.set(text, text);
  }
  return kept;
}

/** @param {Buffer} body */
const sha256 = (body) => createHash('sha256').update(body).digest('hex');

/**
 * @param {Record<string, string | string[] | undefined>} headers
 * @param {string} name lower case
 */
function headerValue(headers, name) {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export class Crawler extends EventEmitter {
  /** @param {Record<string, any>} options see README, "API" */
  constructor(options) {
    super();
    this.options = resolveCrawlOptions(options);
    this.stats = { fetched: 0, failed: 0, written: 0, active: 0, queued: 0, startedAt: 0 };
  }

  /** @returns {Promise<CrawlResult>} */
  async run() {
    const o = this.options;
    const startedAt = performance.now();
    this.stats.startedAt = Date.now();
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    if (o.signal?.aborted) controller.abort();
    o.signal?.addEventListener('abort', onAbort, { once: true });

    const fetcher = createFetcher({
      concurrency: o.concurrency,
      timeout: o.timeout,
      retries: o.retries,
      maxPageBytes: o.maxPageBytes,
      headers: o.headers,
      retryDelay: o.retryDelay,
      signal: controller.signal,
      onRetry: (info) => this.emit('retry', { url: info.url, attempt: info.attempt, delayMs: info.delayMs, message: info.error.message }),
    });
    const writer = new TreeWriter(o.out);
    /** @type {{ url: string, message: string }[]} */
    const warnings = [];
    try {
      const listed = await loadListedRoots(this.options, (url, message) => this.#warnEarly(warnings, url, message));
      const scope = new Scope({ roots: o.roots, include: o.include, exclude: o.exclude, listed });
      const frontier = new Frontier({ maxPages: o.maxPages });
      if (!o.dryRun) await writer.init();
      const origins = new Set([...o.roots, ...listed].map((root) => new URL(root).origin));
      /** @type {RunState} */
      const run = {
        scope,
        frontier,
        writer,
        fetcher,
        registry: new FileRegistry({ reserved: o.writeSitemap ? isSitemapName : undefined }),
        multiOrigin: origins.size > 1,
        staticRoot: origins.size > 1 ? new URL('http://prerender.invalid/') : new URL(`${[...origins][0]}/`),
        origins,
        warnings,
        redirects: [],
        interned: new Map(),
        signal: controller.signal,
        sources: this.#sources(listed.length),
      };
      for (const root of [...o.roots, ...listed]) {
        const decision = scope.decide(root);
        if (decision.decision === 'crawl') this.#admit(run, root, null, 'navigation', decision);
        else this.emit('link', { from: null, url: root, kind: 'navigation', followed: false, ...decision });
      }
      await this.#discoverAll(run);
      const interrupted = controller.signal.aborted;
      this.#assignNames(run);
      if (frontier.overLimit > 0) {
        this.#warn(run, o.roots[0] ?? listed[0], `--max-pages ${o.maxPages} reached: ${frontier.overLimitSaturated ? 'at least ' : ''}${frontier.overLimit} more in-scope URLs were not crawled; links to them stay live`);
      }
      if (!o.dryRun) await this.#writeAll(run, interrupted);
      const failures = [...frontier.entries.values()].filter((entry) => entry.state === 'failed').map(toManifestError);
      return {
        out: writer.out,
        manifest: o.dryRun ? null : `${writer.out}/prerender-manifest.json`,
        pages: o.dryRun ? this.stats.fetched : this.stats.written,
        failed: failures.length,
        warnings: run.warnings.length,
        redirects: run.redirects.length,
        notCrawled: frontier.overLimit,
        interrupted,
        durationMs: Math.round(performance.now() - startedAt),
        failures,
      };
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
      await fetcher.close().catch(() => {});
      if (!o.dryRun) await writer.cleanup().catch(() => {});
    }
  }

  /** @param {number} listedCount */
  #sources(listedCount) {
    const o = this.options;
    /** @type {Record<string, unknown>} */
    const sources = {};
    if (o.sitemap.length > 0) sources.sitemaps = o.sitemap;
    if (o.urls !== undefined) sources.urlList = o.urls === '-' ? 'stdin' : o.urls;
    if (listedCount > 0) sources.listedUrls = listedCount;
    return sources;
  }

  /** Phase one: fetch everything in scope, with bounded concurrency. */
  /** @param {RunState} run */
  #discoverAll(run) {
    const { frontier, signal } = run;
    const limit = this.options.concurrency;
    return new Promise((resolve) => {
      const pump = () => {
        if (!signal.aborted) {
          for (let entry = this.stats.active < limit ? frontier.next() : undefined; entry; entry = this.stats.active < limit ? frontier.next() : undefined) {
            this.stats.active++;
            this.#visit(run, entry).finally(() => {
              this.stats.active--;
              pump();
            });
          }
        }
        this.stats.queued = frontier.pending;
        if (this.stats.active === 0) resolve(undefined);
      };
      pump();
    });
  }

  /**
   * @param {RunState} run
   * @param {Entry} entry
   */
  async #visit(run, entry) {
    try {
      const response = await run.fetcher.fetchPage(entry.key);
      if (response.location !== undefined) this.#redirect(run, entry, response.status, response.location);
      else await this.#accept(run, entry, response);
    } catch (error) {
      if (error instanceof AbortError) {
        run.frontier.requeue(entry);
        return;
      }
      this.#fail(entry, error);
    }
  }

  /**
   * @param {Entry} entry
   * @param {any} error
   */
  #fail(entry, error) {
    entry.state = 'failed';
    entry.error = { message: error?.message ?? String(error) };
    if (error?.status) entry.error.status = error.status;
    if (error instanceof PrerenderError) entry.error.code = error.code;
    else if (error?.code) entry.error.code = error.code;
    entry.meta = undefined;
    this.stats.failed++;
    this.emit('failure', { url: entry.key, status: error?.status, message: entry.error.message, code: entry.error.code });
  }

  /**
   * @param {RunState} run
   * @param {Entry} entry
   * @param {number} status
   * @param {string} location
   */
  #redirect(run, entry, status, location) {
    const target = parseHttpUrl(location, entry.key);
    if (!target) {
      this.#fail(entry, new PrerenderError(`HTTP ${status} redirect to an unusable location ${JSON.stringify(location)}`));
      return;
    }
    const key = canonicalKey(target);
    entry.state = 'redirect';
    entry.location = key;
    entry.referrers = undefined;
    run.redirects.push({ url: entry.key, location: key, status });
    const decision = run.scope.decide(key);
    if (decision.decision === 'crawl') this.#admit(run, key, entry.key, entry.kind, decision);
    this.emit('redirect', { url: entry.key, location: key, status, decision: decision.decision });
  }

  /**
   * A page arrived: find the name it wants, discover its links, stage it.
   * Names are handed out after phase one, in URL order, so that collisions
   * resolve the same way whatever the fetch order.
   * @param {RunState} run
   * @param {Entry} entry
   * @param {import('./fetch.js').FetchedResponse} response
   */
  async #accept(run, entry, response) {
    const o = this.options;
    const contentType = intern(run, headerValue(response.headers, 'content-type') ?? 'application/octet-stream');
    const html = isHtmlType(contentType);
    const css = mimeOf(contentType) === 'text/css' && o.assets;
    const url = new URL(entry.key);
    entry.file = this.#wantedName(run, entry.key, url, contentType, response.headers);
    /** @type {import('./frontier.js').PageMeta} every field declared: one object shape */
    const meta = {
      status: response.status,
      contentType,
      type: html ? 'html' : css ? 'css' : 'other',
      etag: headerValue(response.headers, 'etag'),
      lastModified: headerValue(response.headers, 'last-modified'),
      charset: undefined,
      bytes: undefined,
      sha256: undefined,
    };
    /** @type {Buffer[]} */
    let staged = [response.body];
    if (html || css) {
      meta.charset = intern(run, detectCharset(contentType, response.body));
      const scan = this.#discover(run, entry, url, response.body, html ? 'html' : 'css', meta.charset);
      if (!o.dryRun) staged = [response.body, encodeScan(scan)];
    } else {
      meta.bytes = response.body.length;
      meta.sha256 = sha256(response.body);
    }
    if (!o.dryRun) {
      entry.stagedAt = await run.writer.stage(staged);
      entry.stagedBody = staged[0].length;
      entry.stagedScan = staged.length > 1 ? staged[1].length : 0;
    }
    entry.referrers = undefined; // only failures need them
    entry.meta = meta;
    entry.state = 'done';
    this.stats.fetched++;
    this.emit('page', { url: entry.key, wantedFile: entry.file, status: response.status, contentType, bytes: response.body.length });
  }

  /**
   * The file a page asks for: its name header, else the default name.
   * @param {RunState} run
   * @param {string} key the page's canonical URL
   * @param {URL} url the same, parsed
   * @param {string} contentType
   * @param {Record<string, string | string[] | undefined>} headers
   */
  #wantedName(run, key, url, contentType, headers) {
    let wanted;
    const header = headerValue(headers, 'x-builder-filename') ?? headerValue(headers, 'xbuilder-filename');
    if (header !== undefined) {
      try {
        wanted = headerFileName(header, url, contentType);
      } catch (error) {
        this.#warn(run, key, error.message);
      }
    }
    wanted ??= defaultFileName(url, contentType);
    return run.multiOrigin ? `${hostDirectory(url)}/${wanted}` : wanted;
  }

  /**
   * Give every fetched page its file, in URL order; collisions get a suffix
   * and a warning.
   * @param {RunState} run
   */
  #assignNames(run) {
    const fetched = [...run.frontier.entries.values()].filter((entry) => entry.state === 'done');
    fetched.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const listening = this.listenerCount('named') > 0;
    for (const entry of fetched) {
      const wanted = /** @type {string} */ (entry.file);
      const { file, collidedWith } = run.registry.claim(wanted, entry.key);
      if (collidedWith) this.#warn(run, entry.key, `file name collision: "${wanted}" is taken by ${collidedWith}; written as "${file}"`);
      entry.file = file;
      if (listening) this.emit('named', { url: entry.key, file, wanted, status: entry.meta?.status });
    }
  }

  /**
   * @param {RunState} run
   * @param {Entry} entry
   * @param {URL} url the page's canonical URL
   * @param {Buffer} body
   * @param {'html' | 'css'} type
   * @param {string} charset
   */
  #discover(run, entry, url, body, type, charset) {
    const scan = scanDocument(body, type, charset);
    resolveLinks(scan, url);
    const listening = this.listenerCount('link') > 0;
    const followRequisites = this.options.assets;
    for (const link of scan.links) {
      const key = link.key;
      if (!key) continue;
      const decision = run.scope.decide(key);
      const follow = decision.decision === 'crawl' && (link.kind === 'navigation' || followRequisites);
      if (follow) this.#admit(run, key, entry.key, link.kind, decision);
      if (listening) this.emit('link', { from: entry.key, url: key, kind: link.kind, followed: follow, ...decision });
    }
    return scan;
  }

  /**
   * Add an in-scope URL to the frontier; tell listeners about each new one.
   * @param {RunState} run
   * @param {string} key
   * @param {string | null} from the page that led here (null for roots)
   * @param {'navigation' | 'requisite'} kind
   * @param {import('./scope.js').ScopeDecision} decision
   */
  #admit(run, key, from, kind, decision) {
    const outcome = run.frontier.add(key, from ? { referrer: from, kind } : { kind });
    if (outcome !== 'known' && this.listenerCount('admit') > 0) {
      this.emit('admit', { url: key, from, pattern: decision.pattern, root: decision.root, admitted: outcome === 'added' });
    }
  }

  /**
   * Phase two: rewrite and write every staged page, stream the manifest.
   * @param {RunState} run
   * @param {boolean} interrupted
   */
  async #writeAll(run, interrupted) {
    const o = this.options;
    const manifest = new ManifestWriter(run.writer.out, {
      roots: o.roots,
      scope: run.scope.toJSON(),
      placeholderMode: o.placeholders,
      sources: run.sources,
    });
    const sitemap = o.writeSitemap && o.siteUrl ? new SitemapWriter(run.writer.out, o.siteUrl) : null;
    try {
      /** @param {ManifestPage} page */
      const record = async (page) => {
        await manifest.addPage(page);
        if (sitemap && isHtmlType(page.contentType)) await sitemap.add(page.file);
      };
      /** @type {Promise<ManifestPage | null>[]} */
      const window = [];
      for (const entry of run.frontier.entries.values()) {
        if (entry.state !== 'done') continue;
        window.push(this.#finish(run, entry));
        if (window.length >= 8) {
          const page = await window.shift();
          if (page) await record(page);
        }
      }
      for (const pending of window) {
        const page = await pending;
        if (page) await record(page);
      }
      const errors = [...run.frontier.entries.values()].filter((entry) => entry.state === 'failed').map(toManifestError);
      if (sitemap) await sitemap.finish();
      await manifest.finish({ errors, warnings: run.warnings, redirects: run.redirects, interrupted });
    } catch (error) {
      await manifest.abort();
      throw error;
    }
  }

  /**
   * @param {RunState} run
   * @param {Entry} entry
   * @returns {Promise<ManifestPage | null>}
   */
  async #finish(run, entry) {
    const o = this.options;
    const meta = /** @type {import('./frontier.js').PageMeta} */ (entry.meta);
    const file = /** @type {string} */ (entry.file);
    let placeholders = /** @type {ManifestPage['placeholders']} */ ([]);
    try {
      const stagedBody = /** @type {number} */ (entry.stagedBody);
      const stagedScan = /** @type {number} */ (entry.stagedScan);
      const staged = await run.writer.readStaged(/** @type {number} */ (entry.stagedAt), stagedBody + stagedScan);
      if (meta.type === 'other') {
        await run.writer.write(file, staged);
      } else {
        const raw = staged.subarray(0, stagedBody);
        const result = renderDocument({
          body: raw,
          scan: decodeScan(staged.subarray(stagedBody)),
          type: meta.type === 'css' ? 'css' : 'html',
          charset: meta.charset ?? 'utf-8',
          placeholderMode: o.placeholders,
          pricePath: o.pricePath,
          pageUrl: new URL(entry.key),
          file,
          targetFile: (key) => {
            const target = run.frontier.resolve(key);
            return target?.state === 'done' && target.file ? target.file : null;
          },
          staticRoot: run.staticRoot,
          dynamicBase: o.dynamicBase,
          crawlOrigins: run.origins,
        });
        for (const message of result.warnings) this.#warn(run, entry.key, message);
        await run.writer.write(file, result.body);
        meta.bytes = result.body.length;
        meta.sha256 = sha256(result.body);
        placeholders = result.placeholders;
      }
    } catch (error) {
      this.#fail(entry, error);
      return null;
    }
    entry.meta = undefined;
    entry.referrers = undefined;
    this.stats.written++;
    this.emit('written', { url: entry.key, file, bytes: meta.bytes, placeholders: placeholders.length });
    /** @type {ManifestPage} */
    const page = {
      url: entry.key,
      file,
      status: meta.status,
      contentType: meta.contentType,
      bytes: /** @type {number} */ (meta.bytes),
      sha256: /** @type {string} */ (meta.sha256),
      placeholders,
    };
    if (meta.etag) page.etag = meta.etag;
    if (meta.lastModified) page.lastModified = meta.lastModified;
    return page;
  }

  /**
   * @param {{ url: string, message: string }[]} warnings
   * @param {string} url
   * @param {string} message
   */
  #warnEarly(warnings, url, message) {
    warnings.push({ url, message });
    this.emit('warning', { url, message });
  }

  /**
   * @param {RunState} run
   * @param {string} url
   * @param {string} message
   */
  #warn(run, url, message) {
    run.warnings.push({ url, message });
    this.emit('warning', { url, message });
  }
}

/**
 * @typedef {{
 *   scope: Scope, frontier: Frontier, writer: TreeWriter, fetcher: ReturnType<typeof createFetcher>,
 *   registry: FileRegistry, multiOrigin: boolean, staticRoot: URL, origins: Set<string>,
 *   warnings: { url: string, message: string }[], redirects: { url: string, location: string, status: number }[],
 *   interned: Map<string, string>, signal: AbortSignal, sources: Record<string, unknown>,
 * }} RunState
 */

/** @param {Entry} entry */
function toManifestError(entry) {
  /** @type {{ url: string, status?: number, message: string, code?: string, referrers: string[] }} */
  const error = { url: entry.key, message: entry.error?.message ?? 'failed', referrers: entry.referrers ?? [] };
  if (entry.error?.status) error.status = entry.error.status;
  if (entry.error?.code) error.code = entry.error.code;
  return error;
}

/**
 * Crawl and write the static tree. Resolves with the summary; page failures
 * are data (in the result and the manifest), not exceptions.
 * @param {Record<string, any>} options
 * @returns {Promise<CrawlResult>}
 */
export function crawl(options) {
  const { onEvent, ...rest } = options;
  const crawler = new Crawler(rest);
  if (typeof onEvent === 'function') {
    for (const name of ['page', 'redirect', 'retry', 'failure', 'warning', 'written']) {
      crawler.on(name, (data) => onEvent({ type: name, ...data }));
    }
  }
  return crawler.run();
}
