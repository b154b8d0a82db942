// @ts-check
import { EVENTS_KEY, listenForEvents } from './inpage.js';

/**
 * A tab: a page in a browser context of its own, with request interception
 * on and the event: listeners installed before any page script. With
 * --render-isolation slot a tab serves page after page; between two pages
 * `resetTab` removes everything a page can leave behind in the browser:
 *
 * - cookies of every site (Network.clearBrowserCookies: the context's jar);
 * - for every origin whose document or frame the page loaded: local and
 *   session storage, IndexedDB, Cache Storage, service workers, file systems,
 *   shared storage and storage buckets (Storage.clearDataForOrigin "all",
 *   DOMStorage.clear for session storage).
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
 * IndexedDB writes disabled). The JavaScript heap, window.name and history
 * go with the document: the next page is a new navigation of the tab.
 *
 * @typedef {import('puppeteer-core').Browser} Browser
 * @typedef {import('puppeteer-core').BrowserContext} BrowserContext
 * @typedef {import('puppeteer-core').Page} Page
 * @typedef {import('puppeteer-core').CDPSession} CDPSession
 * @typedef {{ context: BrowserContext, page: Page, client: CDPSession, origins: Set<string>, pages: number, clean: boolean }} Tab
 *   origins: of the documents (page and frames) loaded since the last reset;
 *   pages: rendered in this tab so far; clean: its last render ended well
 *   (a page that failed, timed out or was saved partial may still be busy:
 *   its tab is closed, not reused)
 */

/**
 * @param {Browser} browser
 * @param {{ events: string[] }} options events: names awaited by event: conditions
 * @returns {Promise<Tab>}
 */
export async function openTab(browser, { events }) {
  const context = await browser.createBrowserContext();
  try {
    const page = await context.newPage();
    await page.setRequestInterception(true);
    if (events.length > 0) await page.evaluateOnNewDocument(listenForEvents, EVENTS_KEY, events);
    const client = await page.createCDPSession();
    return { context, page, client, origins: new Set(), pages: 0, clean: true };
  } catch (error) {
    await context.close().catch(() => {});
    throw error;
  }
}

/**
 * Clear what the last page left in the tab's context (see above).
 * @param {Tab} tab
 */
export async function resetTab(tab) {
  const { client } = tab;
  /** @type {Promise<unknown>[]} */
  const calls = [client.send('Network.clearBrowserCookies')];
  for (const origin of tab.origins) {
    calls.push(client.send('Storage.clearDataForOrigin', { origin, storageTypes: 'all' }));
    calls.push(client.send('DOMStorage.clear', { storageId: { securityOrigin: origin, isLocalStorage: false } }));
  }
  await Promise.all(calls);
  tab.origins.clear();
}
