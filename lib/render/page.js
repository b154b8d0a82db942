// @ts-check
import { AbortError, PrerenderError } from '../errors.js';
import { HEAVY_TYPES } from './block.js';
import { CHANGES_KEY, EVENTS_KEY, PENDING_KEY, pollInPage, settledInPage, serialiseDocument, trackInPage, waitForEventInPage, waitForSelectorInPage } from './inpage.js';
import { bounded } from './pool.js';

/**
 * Render one page in a tab (lib/render/tab.js): the main document is the one
 * our HTTP client already fetched (handed to the browser through request
 * interception: the origin sees one request per page), subresources come
 * from the origin, anything but GET/HEAD is aborted, and so are images,
 * media, fonts and blocked hosts by default. Then wait for the ready
 * conditions, within --render-timeout, and serialise the DOM.
 *
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
/** Conditions waited for inside the page. */
const IN_PAGE = /^(selector|event|flag):/;
/** Response headers not handed on to the browser with the main document's bytes. */
const DROPPED_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive']);

/** A page's script that never yields leaves this long to list what is still in flight. */
const LIST_GRACE_MS = 1000;

/**
 * How long networkidle waits, on the page's clock, for the page to settle once
 * the network is quiet: this, or --render-idle if longer. A page whose DOM
 * never stops changing (a ticker, an animation in the DOM) is read after it.
 */
const SETTLE_CAP_MS = 1000;
/** Past the cap, how long a settling waits for the page's answer (its script may not yield). */
const SETTLE_GRACE_MS = 1000;

/**
 * @typedef {{ requestId: string, networkId?: string, frameId: string, resourceType: string, request: { url: string, method: string, headers: Record<string, string> } }} PausedRequest
 *   a Fetch.requestPaused event (the fields used here)
 */

/**
 * @param {import('./tab.js').Tab} tab
 * @param {{ url: string, result: import('../fetch/http.js').LoadResult, settings: RenderSettings, signal: AbortSignal }} job
 * @returns {Promise<RenderOutcome>}
 */
export async function renderPage(tab, { url, result, settings, signal }) {
  const started = performance.now();
  const { session } = tab;
  tab.pages++;
  tab.clean = false; // until the render ends well: a tab left in any other state is not reused
  /**
   * Requests let through and not seen to end: by Network request id when the
   * Network domain is on (networkidle), else every one let through (which of
   * them ended is asked of the page's resource timing, only for a timeout's reason).
   * @type {Map<string, { label: string, url: string }>}
   */
  const inFlight = new Map();
  let mainKey = '';
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
  /** @type {() => void} */
  let onParsed = () => {};
  const parsed = new Promise((resolve) => { onParsed = () => resolve(undefined); });
  let mainServed = false;
  /** @type {(error: Error) => void} */
  let fail = () => {};
  const failed = new Promise((_, reject) => { fail = reject; });
  failed.catch(() => {});

  // Idle: the load event has fired, no request was in flight for settings.idle ms, and then
  // the page settled (settledInPage) with still none begun. The network's quiet is timed on
  // our clock, from the browser's events; a renderer short of CPU may not yet have run what
  // the last response starts (its script, the DOM it builds, the requests it makes), and a
  // script may build the page in many short tasks after it. The page's own idle callback and
  // the time of its DOM's last change, on its own clock, cover both: a loaded machine or a
  // scheduler that yields does not get a half-built page read.
  /** @type {() => void} */
  let markIdle = () => {};
  const idle = new Promise((resolve) => { markIdle = () => resolve(undefined); });
  /** @type {NodeJS.Timeout | undefined} */
  let idleTimer;
  /** Requests begun so far: a settling holds only if none began meanwhile. */
  let begun = 0;
  /** Settlings asked of the page and not answered yet (its script may be busy, its DOM still changing). */
  let settling = 0;
  const settle = () => {
    if (inFlight.size !== 0) return;
    const seen = begun;
    const cap = Math.max(settings.idle, SETTLE_CAP_MS);
    settling++;
    // Bounded here too: a page whose script never yields gets networkidle as before, and the
    // read of its DOM is what times out; a settling that fails leaves the network's quiet standing.
    const asked = bounded(evaluate(settledInPage, { key: CHANGES_KEY, quiet: settings.idle, cap }), cap + SETTLE_GRACE_MS, 'settle');
    const after = () => {
      settling--;
      if (seen === begun && inFlight.size === 0) markIdle(); // else the request begun meanwhile checks again when it ends
    };
    asked.then(after, after);
  };
  const checkIdle = () => {
    clearTimeout(idleTimer);
    if (loaded && inFlight.size === 0) idleTimer = setTimeout(settle, settings.idle);
  };

  /** @param {string} method @param {Record<string, unknown>} [params] */
  const send = (method, params) => { session.send(/** @type {any} */ (method), /** @type {any} */ (params)).catch(() => {}); };

  /** @param {PausedRequest} event @param {AbortedRequest['why']} why */
  const abort = (event, why) => {
    if (why === 'method') aborted.methods++;
    else if (why === 'resource') aborted.resources++;
    else aborted.blocked++;
    if (abortedList.length < MAX_LISTED) abortedList.push({ method: event.request.method, url: event.request.url, why });
    send('Fetch.failRequest', { requestId: event.requestId, errorReason: 'BlockedByClient' });
  };
  /** @param {PausedRequest} event */
  const track = (event) => {
    // A redirect's hops share their network id: one request, named by its latest URL, matched
    // against resource timing by its first (the URL its entry has).
    const key = event.networkId ?? event.requestId;
    const first = inFlight.get(key)?.url ?? event.request.url;
    inFlight.set(key, { label: `${event.request.method} ${event.request.url}`, url: first });
    begun++;
    clearTimeout(idleTimer);
    return key;
  };
  /** @param {PausedRequest} event */
  const onPaused = (event) => {
    const { requestId, request, frameId } = event;
    const { method, url: raw } = request;
    const type = event.resourceType.toLowerCase();
    const main = type === 'document' && frameId === tab.frameId;
    if (main && !mainServed) {
      mainServed = true;
      tab.origins.add(new URL(raw).origin);
      mainKey = track(event);
      /** @type {{ name: string, value: string }[]} */
      const headers = [];
      for (const [name, value] of Object.entries(result.headers)) {
        if (value === undefined || DROPPED_HEADERS.has(name)) continue;
        for (const one of Array.isArray(value) ? value : [value]) headers.push({ name, value: String(one) });
      }
      send('Fetch.fulfillRequest', { requestId, responseCode: result.status, responseHeaders: headers, body: result.body.toString('base64') });
      return;
    }
    if (main) {
      // A script leaving the page (location.href=, a form submitted, reload): the render is of
      // this one. Answered "204 No Content", which a browser takes as "stay where you are";
      // failing the request would replace the page with the browser's error page.
      aborted.blocked++;
      if (abortedList.length < MAX_LISTED) abortedList.push({ method, url: raw, why: 'navigation' });
      send('Fetch.fulfillRequest', { requestId, responseCode: 204, responseHeaders: [], body: '' });
      // A navigation begun while the page still loads stops its loading: DOMContentLoaded and
      // load may never come. What the document holds is then all it will hold.
      if (!loaded) setTimeout(() => { void afterLeaving(); }, 20);
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') return abort(event, 'method');
    if (raw.startsWith('data:') || raw.startsWith('blob:')) {
      send('Fetch.continueRequest', { requestId });
      return;
    }
    let target;
    try {
      target = new URL(raw);
    } catch {
      return abort(event, 'blocked');
    }
    // The browser's own favicon request is not the page's: dropped, not counted (it must not hold networkidle).
    if (type === 'other' && target.pathname.endsWith('/favicon.ico')) {
      send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' });
      return;
    }
    if (!settings.allResources && HEAVY_TYPES.has(type)) return abort(event, 'resource');
    if (settings.blocked(target)) return abort(event, 'blocked');
    if (type === 'document' && target.origin !== 'null') tab.origins.add(target.origin); // a frame: its storage is cleared after
    track(event);
    if (settings.origins.has(target.origin) && Object.keys(settings.extraHeaders).length > 0) {
      const merged = { ...request.headers, ...settings.extraHeaders };
      send('Fetch.continueRequest', { requestId, headers: Object.entries(merged).map(([name, value]) => ({ name, value: String(value) })) });
    } else {
      send('Fetch.continueRequest', { requestId });
    }
  };
  /** @param {{ requestId: string }} event Network.loadingFinished / loadingFailed */
  const onEnded = (event) => {
    if (inFlight.delete(event.requestId)) checkIdle();
  };

  // The main frame's documents: ours, then none. Another is the page replaced before it was read
  // (history.back() to the tab's first entry, a navigation no request stood for): never written.
  let committed = false;
  /** @param {{ frame: { id: string, parentId?: string, url: string } }} event Page.frameNavigated */
  const onNavigated = ({ frame }) => {
    if (frame.parentId || frame.id !== tab.frameId) return;
    if (!committed) {
      committed = true;
      return;
    }
    fail(new RenderError(`the page left itself for ${frame.url.startsWith('chrome-error:') ? 'an error page' : frame.url} before it was read (history.back(), or a navigation the render could not stop)`));
  };
  const afterLeaving = async () => {
    const state = await session.send('Runtime.evaluate', { expression: 'document.readyState', returnByValue: true }).catch(() => null);
    const readyState = state?.result?.value;
    if (readyState === 'loading' || readyState === undefined || loaded) return;
    onParsedEvent();
    onLoad();
  };
  /** alert(), confirm(), prompt(): dismissed (a render has no one to answer them), never waited on. */
  const onDialog = () => send('Page.handleJavaScriptDialog', { accept: false });

  const onAbort = () => fail(new AbortError('crawl interrupted'));
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  /** @type {NodeJS.Timeout | undefined} */
  let deadlineTimer;
  const deadline = new Promise((resolve) => { deadlineTimer = setTimeout(() => resolve('timeout'), Math.max(0, settings.timeout - (performance.now() - started))); });

  /** @template T @param {Promise<T>} work @returns {Promise<T | 'timeout'>} */
  const race = (work) => /** @type {Promise<T | 'timeout'>} */ (Promise.race([work, deadline, failed]));

  const onCrash = () => fail(new RendererCrashError('the page\'s renderer crashed'));
  /** @param {string} why */
  const onGone = (why) => fail(new RendererCrashError(why));
  const onParsedEvent = () => {
    pending.delete('domcontentloaded');
    onParsed();
  };
  const onLoad = () => {
    loaded = true;
    pending.delete('load');
    onLoaded();
    checkIdle();
  };
  const listeners = /** @type {[string, (event: any) => void][]} */ ([
    ['Fetch.requestPaused', onPaused],
    ['Page.domContentEventFired', onParsedEvent],
    ['Page.loadEventFired', onLoad],
    ['Inspector.targetCrashed', onCrash],
    ['Page.frameNavigated', onNavigated],
    ['Page.javascriptDialogOpening', onDialog],
    ...(tab.network ? [['Network.loadingFinished', onEnded], ['Network.loadingFailed', onEnded]] : []),
  ]);
  try {
    for (const [name, listener] of listeners) session.on(name, listener);
    tab.onGone.add(onGone);
    if (tab.gone) onGone('the browser went away');

    const navigation = session.send('Page.navigate', { url }).then((answer) => {
      if (answer.errorText) throw new RenderError(`the browser could not load the page: ${answer.errorText}`);
    }, (error) => {
      throw new RenderError(`the browser could not load the page: ${/** @type {Error} */ (error).message}`);
    });
    navigation.catch(() => {});
    if ((await race(navigation)) === 'timeout') throw await timedOut('the document to be parsed (DOMContentLoaded; the navigation did not commit)');
    if (!tab.network) inFlight.delete(mainKey); // our own bytes, all handed over with the answer
    if ((await race(parsed)) === 'timeout') throw await timedOut('the document to be parsed (DOMContentLoaded)');

    const serialise = { stripScripts: settings.stripScripts, seal: true, unlessNotReady: true };
    /** @type {import('./inpage.js').Serialised | null | 'timeout'} */
    let serialised;
    if (settings.wait.every((cond) => cond === 'domcontentloaded' || IN_PAGE.test(cond))) {
      // Every condition is the page's own: one call waits for them, then for
      // window.prerenderReady (compatibility), and reads the DOM.
      const waits = settings.wait.filter((cond) => IN_PAGE.test(cond)).map((cond) => tracked(cond, inPageWait(cond)));
      // As on the other path: a page whose flag is false once its conditions hold is waited for until it is true.
      const ready = `(window.prerenderReady === false ? ${tracked('window.prerenderReady === true', `(${pollInPage})(() => window.prerenderReady === true, ${POLL_MS})`)} : true)`;
      serialised = await race(evaluate(`(async () => { await Promise.all([${waits.join(', ')}]); await ${ready}; return (${serialiseDocument})(${JSON.stringify({ ...serialise, unlessNotReady: false })}); })()`));
      if (serialised === 'timeout') throw await timedOut(await pendingInPage());
    } else {
      /** @type {Promise<unknown>[]} */
      const conditions = settings.wait.map((cond) => waitFor(cond).then(() => { pending.delete(cond); }));
      if ((await race(Promise.all(conditions))) === 'timeout') throw await timedOut();
      // One call reads the DOM, unless the page said window.prerenderReady = false (compatibility):
      // then it is waited for until it says true, and read.
      serialised = await race(evaluate(serialiseDocument, serialise));
      if (serialised === 'timeout') throw await timedOut('the DOM to be serialised (the page\'s script is busy)');
      if (serialised === null) {
        pending.add('window.prerenderReady === true');
        const ready = inPage(evaluate(`(${pollInPage})(() => window.prerenderReady === true, ${POLL_MS})`));
        if ((await race(ready)) === 'timeout') throw await timedOut();
        pending.clear();
        serialised = await race(evaluate(serialiseDocument, { ...serialise, unlessNotReady: false }));
        if (serialised === 'timeout') throw await timedOut('the DOM to be serialised (the page\'s script is busy)');
      }
    }
    if (!serialised) throw new RenderError('the page could not be read');
    tab.clean = true;
    return outcome(/** @type {import('./inpage.js').Serialised} */ (serialised), false);
  } catch (error) {
    if (!(error instanceof RenderTimeoutError) || settings.onTimeout !== 'save') throw error;
    // --on-render-timeout save: keep what is there, marked partial.
    const serialised = await bounded(evaluate(serialiseDocument, { stripScripts: settings.stripScripts, seal: true }), SAVE_GRACE_MS, 'serialise the DOM').catch(() => null);
    if (!serialised) throw new RenderTimeoutError(`${error.message}; the partial DOM could not be read either (the page's script is busy)`);
    return { ...outcome(/** @type {import('./inpage.js').Serialised} */ (serialised), true), reason: error.message };
  } finally {
    clearTimeout(deadlineTimer);
    clearTimeout(idleTimer);
    signal.removeEventListener('abort', onAbort);
    tab.onGone.delete(onGone);
    for (const [name, listener] of listeners) session.off(name, listener);
  }

  /**
   * Run a function (with one JSON argument) or an expression in the page, and return its value.
   * @param {Function | string} code
   * @param {unknown} [arg]
   * @returns {Promise<any>}
   */
  async function evaluate(code, arg) {
    const expression = typeof code === 'string' ? code : `(${code})(${JSON.stringify(arg)})`;
    const answer = await session.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (answer.exceptionDetails) {
      const text = answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text;
      throw new RenderError(`a script of the render failed in the page: ${text.split('\n')[0]}`);
    }
    return answer.result.value;
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

  /**
   * The page-side expression of a selector:, event: or flag: condition (a promise).
   * @param {string} cond
   */
  function inPageWait(cond) {
    if (cond.startsWith('selector:')) return `(${waitForSelectorInPage})(${JSON.stringify(cond.slice(9))})`;
    if (cond.startsWith('event:')) return `(${waitForEventInPage})(${JSON.stringify(EVENTS_KEY)}, ${JSON.stringify(cond.slice(6))})`;
    return `(${pollInPage})(() => (${cond.slice(5)}), ${POLL_MS})`;
  }

  /**
   * An in-page wait that notes itself as awaited in the page until it holds.
   * @param {string} name
   * @param {string} expression a promise
   */
  function tracked(name, expression) {
    return `(${trackInPage})(${JSON.stringify(PENDING_KEY)}, ${JSON.stringify(name)}, ${expression})`;
  }

  /**
   * What the page says it still waits for (the in-page waits), or, when its
   * script does not yield, every in-page condition.
   * @returns {Promise<string>}
   */
  async function pendingInPage() {
    const listed = await bounded(evaluate(`Array.from(window[${JSON.stringify(PENDING_KEY)}] ?? [])`), LIST_GRACE_MS, 'list its waits').catch(() => null);
    if (Array.isArray(listed)) return listed.length > 0 ? listed.join(', ') : 'the DOM to be serialised';
    return `${settings.wait.filter((cond) => IN_PAGE.test(cond)).join(', ') || 'the DOM to be serialised'}, or the DOM to be serialised (the page's script is busy)`;
  }

  /** @param {string} cond */
  function waitFor(cond) {
    if (cond === 'load') return loadedEvent;
    if (cond === 'domcontentloaded') return Promise.resolve(); // waited for before any condition
    if (cond === 'networkidle') return idle;
    // Waited for inside the page (no polling from here, no helper script injected into each page).
    if (IN_PAGE.test(cond)) return inPage(evaluate(inPageWait(cond)));
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

  /**
   * The requests still in flight: known from Network's events when it is on;
   * else those let through that the page's resource timing does not list as
   * ended (null: the page did not answer, its script is busy).
   * @returns {Promise<string[] | null>}
   */
  async function stillInFlight() {
    if (tab.network || inFlight.size === 0) return [...inFlight.values()].map((request) => request.label);
    const ended = await bounded(evaluate('performance.getEntriesByType("resource").map((entry) => entry.name)'), LIST_GRACE_MS, 'list its requests').catch(() => null);
    if (!Array.isArray(ended)) return null;
    /** @type {Map<string, number>} */
    const counts = new Map();
    for (const name of ended) counts.set(name, (counts.get(name) ?? 0) + 1);
    return [...inFlight.values()].filter((request) => {
      const left = counts.get(request.url) ?? 0;
      if (left > 0) counts.set(request.url, left - 1);
      return left === 0;
    }).map((request) => request.label);
  }

  /** @param {string} [stage] what was awaited instead of the conditions */
  async function timedOut(stage) {
    const unsettled = settling > 0 && inFlight.size === 0;
    const waiting = [...pending].map((cond) => (cond === 'networkidle' && unsettled ? 'networkidle (the network is quiet; the page has not settled: its script is busy or its DOM still changing)' : cond));
    const what = stage ?? (waiting.join(', ') || 'the page');
    const requests = await stillInFlight();
    let flight;
    if (requests === null) {
      flight = `${inFlight.size} request${inFlight.size === 1 ? '' : 's'} let through; which are still in flight is unknown, the page's script does not yield`;
    } else {
      const named = requests.slice(0, MAX_NAMED).join(', ') + (requests.length > MAX_NAMED ? `, … ${requests.length - MAX_NAMED} more` : '');
      flight = requests.length === 0 ? 'no request in flight' : `${requests.length} request${requests.length === 1 ? '' : 's'} in flight: ${named}`;
    }
    return new RenderTimeoutError(`render timed out after ${settings.timeout} ms waiting for ${what} (${flight})`);
  }
}
