// @ts-check
import { EVENTS_KEY, PENDING_KEY, pollInPage, serialiseDocument, trackInPage, waitForEventInPage, waitForSelectorInPage } from './inpage.js';
import { askBriefly } from './cdp-session.js';

/**
 * The in-page expressions a render sends, built once per crawl from --render-wait.
 * @typedef {{ own: string[], inPage: Map<string, string>, oneCall: string | null, ready: string, readIfReady: string, read: string,
 *   readPartial: string }} WaitPlan own: the selector:, event: and flag: conditions; oneCall: when every condition is the page's own,
 *   one expression that waits and reads the DOM; readIfReady: null while window.prerenderReady === false; readPartial: after a timeout
 */

/** Of flag: and prerenderReady waits, inside the page. */
const POLL_MS = 20;
const IN_PAGE = /^(selector|event|flag):/;

/** @param {import('./page.js').RenderSettings} settings @returns {WaitPlan} */
export function planWaits(settings) {
  const serialise = { stripScripts: settings.stripScripts, seal: true, unlessNotReady: true };
  const read = `(${serialiseDocument})(${JSON.stringify({ ...serialise, unlessNotReady: false })})`;
  const ready = `(${pollInPage})(() => window.prerenderReady === true, ${POLL_MS})`;
  const own = settings.wait.filter((cond) => IN_PAGE.test(cond));
  /** @type {string | null} */ let oneCall = null;
  if (settings.wait.every((cond) => cond === 'domcontentloaded' || IN_PAGE.test(cond))) {
    // Then window.prerenderReady: a page whose flag is false once its conditions hold is waited for until it is true.
    const waits = own.map((cond) => tracked(cond, inPageWait(cond)));
    const flag = `(window.prerenderReady === false ? ${tracked('window.prerenderReady === true', ready)} : true)`;
    oneCall = `(async () => { await Promise.all([${waits.join(', ')}]); await ${flag}; return ${read}; })()`;
  }
  return {
    own,
    inPage: new Map(own.map((cond) => [cond, inPageWait(cond)])),
    oneCall,
    ready,
    readIfReady: `(${serialiseDocument})(${JSON.stringify(serialise)})`,
    read,
    readPartial: `(${serialiseDocument})(${JSON.stringify({ stripScripts: settings.stripScripts, seal: true })})`,
  };
}

/** A promise, page-side. @param {string} cond */
function inPageWait(cond) {
  if (cond.startsWith('selector:')) return `(${waitForSelectorInPage})(${JSON.stringify(cond.slice(9))})`;
  if (cond.startsWith('event:')) return `(${waitForEventInPage})(${JSON.stringify(EVENTS_KEY)}, ${JSON.stringify(cond.slice(6))})`;
  return `(${pollInPage})(() => (${cond.slice(5)}), ${POLL_MS})`;
}

/** Noted as awaited in the page until it holds. @param {string} name @param {string} expression a promise */
function tracked(name, expression) {
  return `(${trackInPage})(${JSON.stringify(PENDING_KEY)}, ${JSON.stringify(name)}, ${expression})`;
}

/**
 * The in-page waits of oneCall the page still waits for, or every in-page condition when its script does not yield.
 * @param {import('./cdp-session.js').CDPSession} session @param {WaitPlan} plan @returns {Promise<string>}
 */
export async function pendingInPage(session, plan) {
  const listed = await askBriefly(session, `Array.from(window[${JSON.stringify(PENDING_KEY)}] ?? [])`, 'list its waits');
  if (Array.isArray(listed)) return listed.length > 0 ? listed.join(', ') : 'the DOM to be serialised';
  return `${plan.own.join(', ') || 'the DOM to be serialised'}, or the DOM to be serialised (the page's script is busy)`;
}
