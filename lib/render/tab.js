// @ts-check
import { BrowserError } from '../errors.js';
import { CHANGES_KEY, EVENTS_KEY, listenForEvents, noPopups, watchChanges } from './inpage.js';

/**
 * A tab: a page target in a browser context of its own, driven through one raw DevTools session with only the domains a render
 * needs: Fetch (every request paused, the main document served from our bytes), Page, Inspector (a crash), and Network only for
 * `networkidle`. Puppeteer's `Page` turns on more domains and pairs each paused request with its Network event, which cost the
 * browser process about half its CPU per page (BENCHMARKS.md, "Rendering").
 * With --render-isolation slot a tab serves page after page; `resetTab` clears what a page can leave: cookies, session history,
 * and for every origin it loaded, storage, IndexedDB, Cache Storage, service workers and the like. The HTTP cache is kept: it holds
 * the origin's answers as their Cache-Control allows, nothing a script wrote, and clearing it costs CPU per page (BENCHMARKS.md, Rendering,
 * "Second pass"); isolation context gives every page an empty one. A script's later writes are sealed off before the DOM is read.
 * @typedef {import('puppeteer-core').Browser} Browser @typedef {import('puppeteer-core').BrowserContext} BrowserContext
 * @typedef {import('puppeteer-core').CDPSession} CDPSession
 * @typedef {{ context: BrowserContext, session: CDPSession, frameId: string, network: boolean, origins: Set<string>, pages: number,
 *   clean: boolean, gone: boolean, onGone: Set<(why: string) => void> }} Tab
 *   origins: of the documents loaded since the last reset; clean: its last render ended well (else it may still be busy, and is
 *   closed, not reused); gone: its session ended, and onGone is told why
 */

/** Every type Storage.clearDataForOrigin knows but the GPU shader cache, which no page can read and which costs CPU to empty (BENCHMARKS.md, Rendering, "Third pass"). */
const STORAGE_TYPES = 'cookies,file_systems,indexeddb,local_storage,websql,service_workers,cache_storage,interest_groups,shared_storage,storage_buckets';

const LOADED = "document.readyState === 'complete' || new Promise((resolve) => addEventListener('load', () => setTimeout(resolve), { once: true }))";

/** puppeteer's default for pages. */
const VIEWPORT = { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false };

/**
 * Puppeteer's event for a session that ended; puppeteer loads with the first browser, not with the CLI (BENCHMARKS.md, "Decisions").
 * @type {Promise<symbol | undefined> | null}
 */
let sessionEnded = null;
const SESSION_ENDED = () => (sessionEnded ??= import('puppeteer-core').then((puppeteer) => /** @type {{ Disconnected?: symbol }} */ (puppeteer.CDPSessionEvent).Disconnected));

/** @type {WeakMap<Browser, Promise<CDPSession>>} one session with the browser target per browser */
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
 * @param {Browser} browser @param {{ events: string[], network?: boolean }} options events: awaited by event: conditions; network: for networkidle
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
    const tab = { context, session, frameId: targetId, network, origins: new Set(), pages: 0, clean: true, gone: false, onGone: new Set() };
    /** @param {string} why */ const end = (why) => {
      if (tab.gone) return;
      tab.gone = true;
      for (const listener of tab.onGone) listener(why);
    };
    // The session ends with the tab, and with the browser's connection.
    if (ended) session.once(ended, () => end('the page was closed under the render (the browser went away)'));
    else browser.once('disconnected', () => end('the browser went away'));
    if (network) {
      // A worker's requests are paused here but end on its own target: attached, its Network events come here too.
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
    // The new target's about:blank loads on its own time: its load events carry no document id, so they must be over first.
    await session.send('Runtime.evaluate', { expression: LOADED, awaitPromise: true, returnByValue: true });
    return tab;
  } catch (error) {
    await context.close().catch(() => {});
    throw error;
  }
}

/** With networkidle: its workers. */
const WORKERS = [{ type: 'worker', exclude: false }, { type: 'shared_worker', exclude: false }, { type: 'service_worker', exclude: false }, { exclude: true }];

/**
 * Its Network events are handed to the tab's session, where a render listens; then it is let run.
 * @param {CDPSession} session the tab's @param {{ sessionId: string, waitingForDebugger: boolean }} event Target.attachedToTarget
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

/** @param {Tab} tab */
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
