// @ts-check
import { AbortError, HttpStatusError, PrerenderError } from '../errors.js';
import { isHtmlType } from '../naming/file-names.js';
import { resolveLinks, scanDocument } from '../document/rewrite.js';
import { compilePattern } from '../roots/scope.js';
import { detectCharset } from '../document/charset.js';
import { warn } from '../warnings.js';
import { redirect } from '../engine/outcomes.js';
import { createBlocklist } from './block.js';
import { assertDriver, findBrowser } from './browser.js';
import { createPageRenderer, RendererCrashError } from './page.js';
import { BrowserGoneError, BrowserPool } from './pool.js';

/**
 * `--render`, between load and classify: the loader fetched the page (status, redirects, name header, retries, size cap stay its
 * own); a selected in-scope text/html 2xx page is rendered from those bytes, and its DOM (UTF-8) replaces the body.
 * Events: 'rendered' { url, renderMs, partial, aborted, abortedList, addedLinks? } (addedLinks only when someone listens),
 * 'browser' and 'browser-gone'.
 * @typedef {import('../engine/run.js').CrawlRun} CrawlRun @typedef {import('../engine/fetch-phase.js').PageInFlight} PageInFlight
 * @typedef {{ rendered: true, renderMs: number, partial?: true, aborted: import('./page.js').AbortCounts }} RenderInfo what a rendered page's manifest entry gains
 */

/**
 * @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {{ env?: Record<string, string | undefined>, tmpDir?: string }} [context]
 * @returns {import('../engine/run.js').Transform}
 */
export function createRenderStep(o, context = {}) {
  // Found now: a missing driver or browser ends the run (exit 2) before anything is fetched.
  assertDriver();
  const executablePath = o.browserEndpoint === undefined ? findBrowser({ browser: o.browser, env: context.env ?? o.env }) : '';
  /** @type {BrowserPool | null} */ let pool = null;
  /** @type {((url: string) => boolean) | null} */ let selected = null;
  /** @type {ReturnType<typeof createPageRenderer> | null} */ let renderPage = null;

  return {
    name: 'render',
    concurrency: o.renderConcurrency,
    async open(run) {
      const origins = [...run.origins];
      const only = o.renderOnly.flatMap((pattern) => compilePattern(pattern, origins));
      const skip = o.renderSkip.flatMap((pattern) => compilePattern(pattern, origins));
      selected = (url) => (only.length === 0 || only.some((p) => p.regex.test(url))) && !skip.some((p) => p.regex.test(url));
      renderPage = createPageRenderer({
        wait: o.renderWait, idle: o.renderIdle, timeout: o.renderTimeout, onTimeout: o.onRenderTimeout,
        stripScripts: o.renderScripts === 'strip', allResources: o.renderResources === 'all',
        blocked: createBlocklist(o), extraHeaders: o.headers, origins: run.origins, memory: o.renderMemory,
      });
      pool = new BrowserPool({
        executablePath,
        endpoint: o.browserEndpoint,
        recycle: o.renderRecycle,
        protocolTimeout: o.renderTimeout + 10_000,
        isolation: o.renderIsolation,
        events: o.renderWait.filter((cond) => cond.startsWith('event:')).map((cond) => cond.slice(6)),
        network: o.renderWait.includes('networkidle'),
        tmpDir: context.tmpDir,
        memory: o.renderMemory,
        onEvent: (type, data) => run.emit(type, data),
      });
      await pool.start();
    },
    async close() {
      await pool?.close();
    },
    async run(page, run) {
      const result = page.result;
      if (!result || !pool || !renderPage || !selected) return;
      if (result.location !== undefined || result.notModified || result.status < 200 || result.status >= 300) return;
      const contentType = result.headers['content-type'];
      if (!isHtmlType(String(Array.isArray(contentType) ? contentType[0] : contentType ?? ''))) return;
      if (!selected(page.key)) return;
      const job = { url: page.key, result, signal: run.signal };
      const render = renderPage;
      let outcome;
      try {
        outcome = await pool.withTab((tab) => render(tab, job));
      } catch (error) {
        if (run.signal.aborted) throw new AbortError('crawl interrupted', { cause: error });
        if (!(error instanceof BrowserGoneError || error instanceof RendererCrashError)) throw error;
        // The browser or the page's renderer went away: once more, in another tab.
        outcome = await pool.withTab((tab) => render(tab, job)).catch((again) => {
          if (run.signal.aborted) throw new AbortError('crawl interrupted', { cause: again });
          throw again;
        });
      }
      /** @type {RenderInfo} */ const info = { rendered: true, renderMs: outcome.renderMs, aborted: outcome.aborted };
      if (outcome.partial) {
        info.partial = true;
        warn(run, page.key, 'RENDER_PARTIAL', `${outcome.reason}: --on-render-timeout save kept the partial DOM`);
      }
      if (run.listening('rendered')) {
        run.emit('rendered', { url: page.key, renderMs: outcome.renderMs, partial: outcome.partial, aborted: outcome.aborted, abortedList: outcome.abortedList, addedLinks: addedLinks(page.key, result, outcome.html) });
      }
      if (await statusFromMeta(run, page, outcome)) return;
      page.record.render = info;
      const headers = { ...result.headers, 'content-type': utf8Type(result.headers['content-type']) };
      page.result = { ...result, headers, body: outcome.html };
    },
  };
}

/** The page's type, in UTF-8. @param {string | string[] | undefined} header */
function utf8Type(header) {
  const type = String(Array.isArray(header) ? header[0] : header ?? 'text/html').split(';')[0].trim() || 'text/html';
  return `${type}; charset=utf-8`;
}

/**
 * `<meta name="prerender-status-code">`: an error status is a recorded failure, nothing written; 301/302 with a `prerender-header`
 * Location is a redirect. True when the page ends here. @param {CrawlRun} run @param {PageInFlight} page @param {import('./page.js').RenderOutcome} outcome
 */
async function statusFromMeta(run, page, outcome) {
  if (outcome.status === null) return false;
  const status = Number(outcome.status.trim());
  if (!Number.isInteger(status) || status < 100 || status > 599) {
    warn(run, page.key, 'RENDER_STATUS', `<meta name="prerender-status-code" content=${JSON.stringify(outcome.status)}> is not a status code: ignored`);
    return false;
  }
  if (status >= 200 && status < 300) return false;
  if (status >= 300 && status < 400) {
    const header = outcome.headers.find((text) => /^\s*location\s*:/i.test(text));
    const location = header?.slice(header.indexOf(':') + 1).trim();
    if (!location) throw new PrerenderError(`the rendered page says status ${status} (<meta name="prerender-status-code">) but gives no <meta name="prerender-header" content="Location: ...">`, { code: 'BAD_REDIRECT' });
    await redirect(run, page, status, location);
    page.finished = true;
    return true;
  }
  const error = new HttpStatusError(status);
  error.message = `HTTP ${status} (from <meta name="prerender-status-code"> in the rendered page)`;
  error.retryable = false; // the page said so: asking again renders the same
  throw error;
}

/** For preview. @param {string} key @param {import('../fetch/http.js').LoadResult} raw @param {Buffer} rendered */
function addedLinks(key, raw, rendered) {
  const url = new URL(key);
  const type = String(raw.headers['content-type'] ?? '');
  const before = scanDocument(raw.body, 'html', detectCharset(type, raw.body));
  resolveLinks(before, url);
  const after = scanDocument(rendered, 'html', 'utf-8');
  resolveLinks(after, url);
  const known = new Set(before.links.map((link) => link.key));
  /** @type {Set<string>} */ const added = new Set();
  for (const link of after.links) if (link.key && !known.has(link.key)) added.add(link.key);
  return [...added];
}
