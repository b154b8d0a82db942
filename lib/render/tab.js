// @ts-check
import { BrowserError } from '../errors.js';
import { CHANGES_KEY, EVENTS_KEY, listenForEvents, noPopups, watchChanges } from './inpage.js';

/**
 * A tab: a page target in a browser context of its own, driven through one
 * raw DevTools session with only the domains a render needs: Fetch (every
 * request of the page paused, so that the main document is served from our
 * bytes and the rest let through, or aborted), Page (DOMContentLoaded and
 * load), Inspector (a renderer crash), and Network only when `networkidle`
 * is awaited (it alone needs to know when a request ends). No puppeteer
 * `Page`: it enables Network, Runtime, Log, Performance and lifecycle events
 * on every tab and pairs each paused request with its Network event, which
 * cost the browser process, the one process every tab goes through, about
 * half of its CPU per page (BENCHMARKS.md, "Rendering").
 *
 * With --render-isolation slot a tab serves page after page; between two
 * pages `resetTab` removes everything a page can leave behind in the browser:
 *
 * - cookies of every site (Network.clearBrowserCookies: the context's jar);
 * - the tab's session history (Page.resetNavigationHistory: history.length
 *   is then what a fresh tab's would be);
 * - for every origin whose document or frame the page loaded: local and
 *   session storage, IndexedDB, Cache Storage, service workers, file systems,
 *   shared storage, interest groups and storage buckets
 *   (Storage.clearDataForOrigin, DOMStorage.clear for session storage).
 *
 * The HTTP cache is kept: it holds the origin's responses by URL, reused
 * only as their own Cache-Control/Vary allow (as any browser would), not
 * anything a page's script wrote. Clearing it too (Network.clearBrowserCache)
 * cost 10-30 ms of CPU per page (BENCHMARKS.md); --render-isolation context
 * gives every page an empty one.
 *
 * What the page's script could still do after its DOM was read (a timer, an
 * unload handler writing storage) is stopped before that, inside the page
 * (serialiseDocument's `seal`: its timers cleared, its storage, cookie and
 * IndexedDB writes disabled). The JavaScript heap and window.name go with
 * the document: the next page is a new navigation of the tab.
 *
 * @typedef {import('puppeteer-core').Browser} Browser
 * @typedef {import('puppeteer-core').BrowserContext} BrowserContext
 * @typedef {import('puppeteer-core').CDPSession} CDPSession
 * @typedef {{
 *   context: BrowserContext, session: CDPSession, frameId: string, network: boolean,
 *   origins: Set<string>, pages: number, clean: boolean, gone: boolean, onGone: Set<(why: string) => void>,
 *   pid: number | null, start: string | null, memory: import('./memory.js').TabMemory,
 * }} Tab
 *   frameId: the main frame's id (a page target's id);
 *   network: the Network domain is on (requests are seen to end: networkidle);
 *   origins: of the documents (page and frames) loaded since the last reset;
 *   pages: rendered in this tab so far; clean: its last render ended well
 *   (a page that failed, timed out or was saved partial may still be busy:
 *   its tab is closed, not reused); gone: its session ended (the tab or the
 *   browser closed), and onGone is told why; pid, start, memory: its renderer
 *   process when known, and what the memory watch read of it (lib/render/memory.js)
 */

/**
 * What a page can keep for an origin, cleared after it: every type
 * Storage.clearDataForOrigin knows but the GPU's shader cache, which no page
 * can read (clearing it empties the whole on-disk cache every time: 3-4 ms
 * of CPU a page, BENCHMARKS.md).
 */
const STORAGE_TYPES = 'cookies,file_systems,indexeddb,local_storage,websql,service_workers,cache_storage,interest_groups,shared_storage,storage_buckets';

/** Resolves once the document's load event has fired. */
const LOADED = "document.readyState === 'complete' || new Promise((resolve) => addEventListener('load', () => setTimeout(resolve), { once: true }))";

/** The viewport every tab gets (puppeteer's default for pages). */
const VIEWPORT = { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false };

/**
 * Puppeteer's session event for a session that ended (detached, or its
 * connection closed). Puppeteer is loaded when the first browser starts, not
 * with the CLI (it costs every command a tenth of a second).
 * @type {Promise<symbol | undefined> | null}
 */
let sessionEnded = null;
const SESSION_ENDED = () => (sessionEnded ??= import('puppeteer-core').then((puppeteer) => /** @type {{ Disconnected?: symbol }} */ (puppeteer.CDPSessionEvent).Disconnected));

/** @type {WeakMap<Browser, Promise<CDPSession>>} a session with the browser target, one per browser */
const browserSessions = new WeakMap();

/** @param {Browser} browser */
function browserSession(browser) {
  let session = browserSessions.get(browser);
  if (!session) {
    session = browser.target().createCDPSession();
    session.catch(() => browserSessions.delete(browser));
    browserSessions.set(browser, session);
  }
  return session;
}

/**
 * @param {Browser} browser
 * @param {{ events: string[], network?: boolean }} options
 *   events: names awaited by event: conditions; network: turn the Network domain on (networkidle)
 * @returns {Promise<Tab>}
 */
export async function openTab(browser, { events, network = false }) {
  const ended = await SESSION_ENDED();
  const context = await browser.createBrowserContext();
  try {
    const root = await browserSession(browser);
    const { targetId } = await root.send('Target.createTarget', { url: 'about:blank', browserContextId: context.id });
    const { sessionId } = await root.send('Target.attachToTarget', { targetId, flatten: true });
    const session = root.connection()?.session(sessionId);
    if (!session) throw new BrowserError('the browser gave no session for a new tab', { code: 'BROWSER_SESSION' });
    /** @type {Tab} */
    const tab = { context, session, frameId: targetId, network, origins: new Set(), pages: 0, clean: true, gone: false, onGone: new Set(), pid: null, start: null, memory: { last: 0, killed: 0 } };
    /** @param {string} why */
    const end = (why) => {
      if (tab.gone) return;
      tab.gone = true;
      for (const listener of tab.onGone) listener(why);
    };
    // The session ends with the tab, and with the browser's connection.
    if (ended) session.once(ended, () => end('the page was closed under the render (the browser went away)'));
    else browser.once('disconnected', () => end('the browser went away'));
    if (network) {
      // A worker's requests are paused here (Fetch) but end on the worker's own
      // target: attached, its Network events come to this session too.
      session.on('Target.attachedToTarget', (event) => { void watchWorker(session, event); });
    }
    await Promise.all([
      network ? session.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: WORKERS }) : null,
      session.send('Page.enable'),
      session.send('Inspector.enable'),
      session.send('Fetch.enable', { patterns: [{ urlPattern: '*', requestStage: 'Request' }] }),
      session.send('Page.addScriptToEvaluateOnNewDocument', { source: `(${noPopups})()` }),
      session.send('Emulation.setDeviceMetricsOverride', VIEWPORT),
      network ? session.send('Network.enable') : null,
      network ? session.send('Page.addScriptToEvaluateOnNewDocument', { source: `(${watchChanges})(${JSON.stringify(CHANGES_KEY)})` }) : null,
      events.length > 0
        ? session.send('Page.addScriptToEvaluateOnNewDocument', { source: `(${listenForEvents})(${JSON.stringify(EVENTS_KEY)}, ${JSON.stringify(events)})` })
        : null,
    ]);
    // The new target's first document (about:blank) loads on its own time: wait
    // until it has, so that its DOMContentLoaded and load events (which carry no
    // document id) are over before the first render listens for a page's.
    await session.send('Runtime.evaluate', { expression: LOADED, awaitPromise: true, returnByValue: true });
    return tab;
  } catch (error) {
    await context.close().catch(() => {});
    throw error;
  }
}

/** The targets auto-attached to a tab (with networkidle): its workers. */
const WORKERS = [{ type: 'worker', exclude: false }, { type: 'shared_worker', exclude: false }, { type: 'service_worker', exclude: false }, { exclude: true }];

/**
 * A worker of the tab's page: its Network events are handed to the tab's
 * session (where a render listens), then it is let run.
 * @param {CDPSession} session the tab's
 * @param {{ sessionId: string, waitingForDebugger: boolean }} event Target.attachedToTarget
 */
async function watchWorker(session, event) {
  const child = session.connection()?.session(event.sessionId);
  if (!child) return;
  for (const name of ['Network.loadingFinished', 'Network.loadingFailed']) {
    child.on(name, (params) => { session.emit(/** @type {any} */ (name), params); });
  }
  await child.send('Network.enable').catch(() => {});
  if (event.waitingForDebugger) await child.send('Runtime.runIfWaitingForDebugger').catch(() => {});
}

/**
 * Clear what the last page left in the tab's context (see above).
 * @param {Tab} tab
 */
export async function resetTab(tab) {
  const { session } = tab;
  /** @type {Promise<unknown>[]} */
  // The session history too: history.length would tell a page how many came before it in the tab.
  const calls = [session.send('Network.clearBrowserCookies'), session.send('Page.resetNavigationHistory')];
  for (const origin of tab.origins) {
    calls.push(session.send('Storage.clearDataForOrigin', { origin, storageTypes: STORAGE_TYPES }));
    calls.push(session.send('DOMStorage.clear', { storageId: { securityOrigin: origin, isLocalStorage: false } }));
  }
  await Promise.all(calls);
  tab.origins.clear();
}
