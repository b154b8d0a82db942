// @ts-check
import { AbortError, PrerenderError } from '../errors.js';
import { HEAVY_TYPES } from './block.js';
import { EVENTS_KEY, pollInPage, serialiseDocument, waitForEventInPage, waitForSelectorInPage } from './inpage.js';
import { bounded } from './pool.js';

/**
 * Render one page in a tab (lib/render/tab.js): the main document is the one
 * our HTTP client already fetched (handed to the browser through request
 * interception: the origin sees one request per page), subresources come
 * from the origin, anything but GET/HEAD is aborted, and so are images,
 * media, fonts and blocked hosts by default. Then wait for the ready
 * conditions, within --render-timeout, and serialise the DOM.
 *
 * @typedef {import('puppeteer-core').HTTPRequest} HTTPRequest
 * @typedef {import('puppeteer-core').Page} Page
 * @typedef {{ method: string, url: string, why: 'method' | 'resource' | 'blocked' | 'navigation' }} AbortedRequest
 * @typedef {{ methods: number, resources: number, blocked: number }} AbortCounts
 *   methods: requests other than GET/HEAD; resources: images, media, fonts;
 *   blocked: built-in list, --render-block, and navigations away from the page
 * @typedef {{
 *   html: Buffer, renderMs: number, partial: boolean, reason?: string,
 *   status: string | null, headers: string[], aborted: AbortCounts, abortedList: AbortedRequest[],
 * }} RenderOutcome
 * @typedef {{
 *   wait: string[], idle: number, timeout: number, onTimeout: 'fail' | 'save', stripScripts: boolean,
 *   allResources: boolean, blocked: (url: URL) => boolean, extraHeaders: Record<string, string>, origins: Set<string>,
 * }} RenderSettings
 */

/** The page failed to render within --render-timeout. */
export class RenderTimeoutError extends PrerenderError {
  code = 'RENDER_TIMEOUT';
}

/** The page's renderer process crashed (or was killed): retried once. */
export class RendererCrashError extends PrerenderError {
  code = 'RENDERER_CRASHED';
  retryable = true;
}

/** The browser could not load the page at all. */
export class RenderError extends PrerenderError {
  code = 'RENDER';
}

/** Aborted requests listed per page (the counts go on past it). */
const MAX_LISTED = 20;
/** In-flight requests named in a timeout's reason. */
const MAX_NAMED = 5;
/** Time given to read the DOM of a page that timed out, with --on-render-timeout save. */
const SAVE_GRACE_MS = 2000;
/** Polling interval of flag: and prerenderReady waits, inside the page. */
const POLL_MS = 20;
/** Response headers not handed on to the browser with the main document's bytes. */
const DROPPED_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive']);

/**
 * @param {import('./tab.js').Tab} tab
 * @param {{ url: string, result: import('../load/http.js').LoadResult, settings: RenderSettings, signal: AbortSignal }} job
 * @returns {Promise<RenderOutcome>}
 */
export async function renderPage(tab, { url, result, settings, signal }) {
  const started = performance.now();
  const { page } = tab;
  tab.pages++;
  tab.clean = false; // until the render ends well: a tab left in any other state is not reused
  /** @type {Map<HTTPRequest, string>} */
  const inFlight = new Map();
  /** @type {AbortCounts} */
  const aborted = { methods: 0, resources: 0, blocked: 0 };
  /** @type {AbortedRequest[]} */
  const abortedList = [];
  /** @type {Set<string>} conditions not met yet */
  const pending = new Set(settings.wait);
  let loaded = false;
  /** @type {() => void} */
  let onLoaded = () => {};
  const loadedEvent = new Promise((resolve) => { onLoaded = () => resolve(undefined); });
  let mainServed = false;
  /** @type {(error: Error) => void} */
  let fail = () => {};
  const failed = new Promise((_, reject) => { fail = reject; });
  failed.catch(() => {});

  // Idle: the load event has fired and no request was in flight for settings.idle ms.
  /** @type {() => void} */
  let markIdle = () => {};
  const idle = new Promise((resolve) => { markIdle = () => resolve(undefined); });
  /** @type {NodeJS.Timeout | undefined} */
  let idleTimer;
  const checkIdle = () => {
    clearTimeout(idleTimer);
    if (loaded && inFlight.size === 0) idleTimer = setTimeout(() => { if (inFlight.size === 0) markIdle(); }, settings.idle);
  };

  /** @param {HTTPRequest} request @param {AbortedRequest['why']} why */
  const abort = (request, why) => {
    if (why === 'method') aborted.methods++;
    else if (why === 'resource') aborted.resources++;
    else aborted.blocked++;
    if (abortedList.length < MAX_LISTED) abortedList.push({ method: request.method(), url: request.url(), why });
    request.abort('blockedbyclient').catch(() => {});
  };
  /** @param {HTTPRequest} request */
  const onRequest = (request) => {
    if (request.isInterceptResolutionHandled()) return;
    const method = request.method();
    const main = request.isNavigationRequest() && request.frame() === page.mainFrame();
    if (main && !mainServed) {
      mainServed = true;
      tab.origins.add(new URL(request.url()).origin);
      inFlight.set(request, `${method} ${request.url()}`);
      /** @type {Record<string, string | string[]>} */
      const headers = {};
      for (const [name, value] of Object.entries(result.headers)) if (value !== undefined && !DROPPED_HEADERS.has(name)) headers[name] = value;
      request.respond({ status: result.status, headers, body: result.body }).catch(() => {});
      return;
    }
    if (main) return abort(request, 'navigation'); // a script leaving the page: the render is of this one
    if (method !== 'GET' && method !== 'HEAD') return abort(request, 'method');
    const raw = request.url();
    if (raw.startsWith('data:') || raw.startsWith('blob:')) {
      request.continue().catch(() => {});
      return;
    }
    let target;
    try {
      target = new URL(raw);
    } catch {
      return abort(request, 'blocked');
    }
    // The browser's own favicon request is not the page's: dropped, not counted (it must not hold networkidle).
    if (request.resourceType() === 'other' && target.pathname.endsWith('/favicon.ico')) {
      request.abort('blockedbyclient').catch(() => {});
      return;
    }
    if (!settings.allResources && HEAVY_TYPES.has(request.resourceType())) return abort(request, 'resource');
    if (settings.blocked(target)) return abort(request, 'blocked');
    if (request.resourceType() === 'document' && target.origin !== 'null') tab.origins.add(target.origin); // a frame: its storage is cleared after
    inFlight.set(request, `${method} ${raw}`);
    clearTimeout(idleTimer);
    const extra = settings.origins.has(target.origin) && Object.keys(settings.extraHeaders).length > 0;
    request.continue(extra ? { headers: { ...request.headers(), ...settings.extraHeaders } } : undefined).catch(() => {});
  };
  /** @param {HTTPRequest} request */
  const onDone = (request) => {
    if (inFlight.delete(request)) checkIdle();
  };

  const onAbort = () => fail(new AbortError('crawl interrupted'));
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  /** @type {NodeJS.Timeout | undefined} */
  let deadlineTimer;
  const deadline = new Promise((resolve) => { deadlineTimer = setTimeout(() => resolve('timeout'), Math.max(0, settings.timeout - (performance.now() - started))); });

  /** @template T @param {Promise<T>} work @returns {Promise<T | 'timeout'>} */
  const race = (work) => /** @type {Promise<T | 'timeout'>} */ (Promise.race([work, deadline, failed]));

  /** @param {Error} error */
  const onError = (error) => fail(new RendererCrashError(`the page's renderer crashed (${error.message})`));
  const onClose = () => fail(new RendererCrashError('the page was closed under the render (the browser went away)'));
  const onDomContentLoaded = () => pending.delete('domcontentloaded');
  const onLoad = () => {
    loaded = true;
    pending.delete('load');
    onLoaded();
    checkIdle();
  };
  try {
    page.on('error', onError);
    page.on('close', onClose);
    page.on('request', onRequest);
    page.on('requestfinished', onDone);
    page.on('requestfailed', onDone);
    page.on('domcontentloaded', onDomContentLoaded);
    page.on('load', onLoad);

    /** @type {Error | null} */
    let navError = null;
    const navigation = page.goto(url, { waitUntil: 'domcontentloaded', timeout: 0 }).catch((error) => { navError = error; });
    if ((await race(navigation)) === 'timeout') throw timedOut('the document to be parsed (DOMContentLoaded)');
    if (navError) throw new RenderError(`the browser could not load the page: ${/** @type {Error} */ (navError).message}`);

    /** @type {Promise<unknown>[]} */
    const conditions = settings.wait.map((cond) => waitFor(cond).then(() => { pending.delete(cond); }));
    if ((await race(Promise.all(conditions))) === 'timeout') throw timedOut();
    // One call reads the DOM, unless the page said window.prerenderReady = false (compatibility):
    // then it is waited for until it says true, and read.
    const serialise = { stripScripts: settings.stripScripts, seal: true, unlessNotReady: true };
    let serialised = await race(page.evaluate(serialiseDocument, serialise));
    if (serialised === 'timeout') throw timedOut('the DOM to be serialised (the page\'s script is busy)');
    if (serialised === null) {
      pending.add('window.prerenderReady === true');
      const ready = inPage(page.evaluate(`(${pollInPage})(() => window.prerenderReady === true, ${POLL_MS})`));
      if ((await race(ready)) === 'timeout') throw timedOut();
      pending.clear();
      serialised = await race(page.evaluate(serialiseDocument, { ...serialise, unlessNotReady: false }));
      if (serialised === 'timeout') throw timedOut('the DOM to be serialised (the page\'s script is busy)');
    }
    if (serialised === null) throw new RenderError('the page could not be read');
    tab.clean = true;
    return outcome(serialised, false);
  } catch (error) {
    if (!(error instanceof RenderTimeoutError) || settings.onTimeout !== 'save') throw error;
    // --on-render-timeout save: keep what is there, marked partial.
    const serialised = await bounded(page.evaluate(serialiseDocument, { stripScripts: settings.stripScripts, seal: true }), SAVE_GRACE_MS, 'serialise the DOM').catch(() => null);
    if (!serialised) throw new RenderTimeoutError(`${error.message}; the partial DOM could not be read either (the page's script is busy)`);
    return { ...outcome(serialised, true), reason: error.message };
  } finally {
    clearTimeout(deadlineTimer);
    clearTimeout(idleTimer);
    signal.removeEventListener('abort', onAbort);
    page.off('error', onError);
    page.off('close', onClose);
    page.off('request', onRequest);
    page.off('requestfinished', onDone);
    page.off('requestfailed', onDone);
    page.off('domcontentloaded', onDomContentLoaded);
    page.off('load', onLoad);
  }

  /**
   * @param {import('./inpage.js').Serialised} serialised
   * @param {boolean} partial
   * @returns {RenderOutcome}
   */
  function outcome(serialised, partial) {
    return {
      html: Buffer.from(serialised.html, 'utf8'),
      renderMs: Math.round(performance.now() - started),
      partial,
      status: serialised.status,
      headers: serialised.headers,
      aborted,
      abortedList,
    };
  }

  /** @param {string} cond */
  function waitFor(cond) {
    if (cond === 'load') return loadedEvent;
    if (cond === 'domcontentloaded') return Promise.resolve(); // goto waited for it
    if (cond === 'networkidle') return idle;
    // Waited for inside the page (no polling from here, no helper script injected into each page).
    if (cond.startsWith('selector:')) return inPage(page.evaluate(waitForSelectorInPage, cond.slice(9)));
    if (cond.startsWith('event:')) return inPage(page.evaluate(waitForEventInPage, EVENTS_KEY, cond.slice(6)));
    if (cond.startsWith('flag:')) return inPage(page.evaluate(`(${pollInPage})(() => (${cond.slice(5)}), ${POLL_MS})`));
    throw new RenderError(`unknown --render-wait condition ${JSON.stringify(cond)}`);
  }

  /**
   * A wait running inside the page: it ends with the page's document (the
   * next navigation of the tab rejects it), when nobody listens any more.
   * @template T @param {Promise<T>} promise
   */
  function inPage(promise) {
    promise.catch(() => {});
    return promise;
  }

  /** @param {string} [stage] what was awaited instead of the conditions */
  function timedOut(stage) {
    const what = stage ?? ([...pending].join(', ') || 'the page');
    const requests = [...inFlight.values()];
    const named = requests.slice(0, MAX_NAMED).join(', ') + (requests.length > MAX_NAMED ? `, … ${requests.length - MAX_NAMED} more` : '');
    const flight = requests.length === 0 ? 'no request in flight' : `${requests.length} request${requests.length === 1 ? '' : 's'} in flight: ${named}`;
    return new RenderTimeoutError(`render timed out after ${settings.timeout} ms waiting for ${what} (${flight})`);
  }
}
