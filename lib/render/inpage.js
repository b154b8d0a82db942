// @ts-check
/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/* global window, document, requestIdleCallback, CSSStyleSheet, MutationObserver, Document, IDBFactory, CacheStorage, ServiceWorkerContainer, CookieStore, Element, HTMLFormElement -- this code runs in the browser */
/** Code that runs inside the rendered page: each function is sent as source text, so it uses nothing from this module's scope. */

/** Where the listeners keep the events seen, on the page's global. */
export const EVENTS_KEY = '__prerenderEvents';

/** Before any page script, so an early awaited event on `document` is not lost. @param {string} key @param {string[]} names */
export function listenForEvents(key, names) {
  const seen = new Set();
  Object.defineProperty(window, key, { value: seen, enumerable: false });
  for (const name of names) document.addEventListener(name, () => { seen.add(name); }, { capture: true });
}

/**
 * In every tab, nothing opens a new window: a popup would be a page outside the render's interception, its requests reaching
 * the origin and its storage the tab's next page. window.open returns null, as under a popup blocker; a link or form aimed at
 * another window is not followed.
 */
export function noPopups() {
  const own = (/** @type {string} */ target) => target === '' || /^_(self|parent|top)$/i.test(target);
  // Assigned, not frozen: a page that wraps window.open still runs, and its wrapper calls this one.
  window.open = () => null;
  const targetOf = (/** @type {Element} */ element) => (element.getAttribute('target') ?? element.ownerDocument.querySelector('base[target]')?.getAttribute('target') ?? '').trim();
  window.addEventListener('click', (event) => {
    const link = event.target instanceof Element ? event.target.closest('a[href], area[href]') : null;
    if (link && !own(targetOf(link))) event.preventDefault();
  }, { capture: true });
  window.addEventListener('submit', (event) => {
    const form = /** @type {HTMLFormElement} */ (event.target);
    const button = /** @type {SubmitEvent} */ (event).submitter;
    const target = button?.getAttribute('formtarget') ?? targetOf(form);
    if (!own(target.trim())) event.preventDefault();
  }, { capture: true });
  const submit = HTMLFormElement.prototype.submit;
  HTMLFormElement.prototype.submit = function () {
    if (own(targetOf(this))) submit.call(this);
  };
}

/** Where watchChanges keeps the time of the DOM's last change. */
export const CHANGES_KEY = '__prerenderChanges';

/**
 * With networkidle: when the main frame's DOM last changed after parsing, on the page's clock (nodes and text, not attributes,
 * which tickers change all the time). Its own copies of the clock, timer and idle callback, taken before any page script,
 * keep settledInPage working on a page that replaces them. @param {string} key
 */
export function watchChanges(key) {
  if (window !== window.top || key in window) return;
  const now = performance.now.bind(performance);
  const Observer = MutationObserver;
  const state = {
    last: 0,
    now,
    setTimeout: setTimeout.bind(window),
    idle: typeof requestIdleCallback === 'function' ? requestIdleCallback.bind(window) : null,
  };
  Object.defineProperty(window, key, { value: state, enumerable: false });
  const watch = () => {
    state.last = now();
    new Observer(() => { state.last = now(); }).observe(document, { subtree: true, childList: true, characterData: true });
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', watch, { once: true });
  else watch();
}

/**
 * The page's half of networkidle: after its idle callback, once the DOM has not changed for `quiet` ms of its clock; at most `cap`
 * ms, so a page that never stops changing is read as it is. Anything odd resolves at once: the network's quiet stands.
 * @param {{ key: string, quiet: number, cap: number }} options @returns {Promise<true>}
 */
export function settledInPage({ key, quiet, cap }) {
  /** @type {{ last: number, now: () => number, setTimeout: (f: () => void, ms: number) => unknown, idle: ((f: () => void, o: { timeout: number }) => unknown) | null } | undefined} */
  const state = /** @type {any} */ (window)[key];
  return new Promise((resolve) => {
    if (!state) return resolve(true);
    try {
      const begun = state.now();
      const check = () => {
        try {
          const now = state.now();
          const since = now - state.last;
          if (since >= quiet || now - begun >= cap) resolve(true);
          else state.setTimeout(check, Math.ceil(Math.min(quiet - since, cap - (now - begun))) + 1);
        } catch {
          resolve(true);
        }
      };
      state.setTimeout(check, cap); // should the idle callback never come
      if (state.idle) state.idle(check, { timeout: cap });
      else check();
    } catch {
      resolve(true);
    }
  });
}

/** Watching the DOM's changes, no polling. @param {string} selector @returns {Promise<true>} */
export function waitForSelectorInPage(selector) {
  return new Promise((resolve) => {
    if (document.querySelector(selector)) return resolve(true);
    const observer = new MutationObserver(() => {
      if (!document.querySelector(selector)) return;
      observer.disconnect();
      resolve(true);
    });
    observer.observe(document, { childList: true, subtree: true, attributes: true });
  });
}

/** Seen by listenForEvents, installed before any page script. @param {string} key @param {string} name @returns {Promise<true>} */
export function waitForEventInPage(key, name) {
  return new Promise((resolve) => {
    if (/** @type {any} */ (window)[key]?.has(name)) return resolve(true);
    document.addEventListener(name, () => resolve(true), { once: true, capture: true });
  });
}

/** An exception counts as false. @param {() => unknown} test @param {number} ms @returns {Promise<true>} */
export function pollInPage(test, ms) {
  return new Promise((resolve) => {
    const check = () => {
      let ok = false;
      try {
        ok = Boolean(test());
      } catch {
        // not yet
      }
      if (ok) resolve(true);
      else setTimeout(check, ms);
    };
    check();
  });
}

/** @typedef {{ html: string, status: string | null, headers: string[] }} Serialised */

/**
 * The rendered DOM: form state into attributes, CSSOM and adopted sheets into <style>, open shadow roots as declarative shadow
 * DOM, the charset declared UTF-8, prerender meta tags read and removed, scripts stripped on request; never a <base>. With
 * `seal`, timers are cleared and storage, cookie and worker writes disabled, so a late timer or unload handler leaves nothing
 * for the tab's next page. With `unlessNotReady`, null while window.prerenderReady is false.
 * @param {{ stripScripts: boolean, seal?: boolean, unlessNotReady?: boolean }} options @returns {Serialised | null}
 */
export function serialiseDocument({ stripScripts, seal = false, unlessNotReady = false }) {
  if (unlessNotReady && /** @type {any} */ (window).prerenderReady === false) return null;
  /** @type {(Document | ShadowRoot)[]} */ const roots = [document];
  /** @type {ShadowRoot[]} */ const shadowRoots = [];
  for (let i = 0; i < roots.length; i++) {
    for (const element of roots[i].querySelectorAll('*')) {
      const shadow = element.shadowRoot;
      if (shadow && shadow.mode === 'open') {
        roots.push(shadow);
        shadowRoots.push(shadow);
      }
    }
  }
  /** @param {CSSStyleSheet} sheet */ const rulesText = (sheet) => {
    try {
      return Array.from(sheet.cssRules, (rule) => rule.cssText).join('\n');
    } catch {
      return null; // a cross-origin sheet: not readable, and not ours to change
    }
  };
  for (const root of roots) {
    for (const input of root.querySelectorAll('input')) {
      if (input.type === 'checkbox' || input.type === 'radio') {
        if (input.checked) input.setAttribute('checked', '');
        else input.removeAttribute('checked');
      } else if (input.type !== 'password' && input.type !== 'file') {
        if (input.value !== (input.getAttribute('value') ?? '')) input.setAttribute('value', input.value);
      }
    }
    for (const area of root.querySelectorAll('textarea')) {
      if (area.value !== area.textContent) area.textContent = area.value;
    }
    for (const option of root.querySelectorAll('option')) {
      if (option.selected !== option.hasAttribute('selected')) {
        if (option.selected) option.setAttribute('selected', '');
        else option.removeAttribute('selected');
      }
    }
    // Rules added with insertRule live only in the CSSOM: write them into their element.
    for (const style of root.querySelectorAll('style')) {
      const sheet = style.sheet;
      if (!sheet) continue;
      const live = rulesText(sheet);
      if (live === null) continue;
      const probe = new CSSStyleSheet();
      try {
        probe.replaceSync(style.textContent ?? '');
      } catch {
        continue;
      }
      if (rulesText(probe) !== live) style.textContent = live;
    }
    // Constructed sheets (adoptedStyleSheets) have no element: give them one.
    const adopted = root.adoptedStyleSheets ?? [];
    if (adopted.length > 0) {
      const style = document.createElement('style');
      style.textContent = adopted.map((sheet) => rulesText(sheet) ?? '').join('\n');
      if (root === document) document.head.append(style);
      else root.prepend(style);
    }
  }
  const status = document.querySelector('meta[name="prerender-status-code" i]');
  const headerTags = document.querySelectorAll('meta[name="prerender-header" i]');
  const found = { status: status?.getAttribute('content') ?? null, headers: Array.from(headerTags, (tag) => tag.getAttribute('content') ?? '') };
  status?.remove();
  for (const tag of headerTags) tag.remove();
  // The bytes written are UTF-8: say so, once, first in <head>.
  for (const tag of document.querySelectorAll('meta[charset], meta[http-equiv="content-type" i]')) tag.remove();
  const charset = document.createElement('meta');
  charset.setAttribute('charset', 'utf-8');
  if (document.head) document.head.prepend(charset);
  if (stripScripts) {
    const executable = /^(|module|text\/javascript|application\/javascript|text\/ecmascript|application\/ecmascript|text\/jscript|text\/livescript|application\/x-javascript|application\/x-ecmascript|text\/javascript1\.[0-5])$/;
    for (const root of roots) {
      for (const script of root.querySelectorAll('script')) {
        if (executable.test((script.getAttribute('type') ?? '').trim().toLowerCase())) script.remove();
      }
    }
  }
  const doctype = document.doctype;
  let head = '';
  if (doctype) {
    head = `<!DOCTYPE ${doctype.name}`;
    if (doctype.publicId) head += ` PUBLIC "${doctype.publicId}"`;
    if (doctype.systemId) head += `${doctype.publicId ? '' : ' SYSTEM'} "${doctype.systemId}"`;
    head += '>\n';
  }
  const html = document.documentElement;
  const attributes = Array.from(html.attributes, (attr) => ` ${attr.name}="${attr.value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/\u00a0/g, '&nbsp;')}"`).join('');
  const inner = html.getHTML({ serializableShadowRoots: true, shadowRoots: shadowRoots });
  if (seal) {
    const last = Number(window.setTimeout(() => {}, 0));
    for (let id = last; id > 0; id--) {
      clearTimeout(id);
      clearInterval(id);
    }
    const refuse = () => { throw new DOMException('the render of this page is over', 'InvalidStateError'); };
    const refused = () => Promise.reject(new DOMException('the render of this page is over', 'InvalidStateError'));
    Storage.prototype.setItem = refuse;
    Storage.prototype.removeItem = refuse;
    Storage.prototype.clear = refuse;
    Object.defineProperty(Document.prototype, 'cookie', { configurable: true, get: () => '', set: refuse });
    if (typeof IDBFactory !== 'undefined') IDBFactory.prototype.open = refuse;
    if (typeof CacheStorage !== 'undefined') CacheStorage.prototype.open = refused;
    if (typeof ServiceWorkerContainer !== 'undefined') ServiceWorkerContainer.prototype.register = refused;
    if (typeof CookieStore !== 'undefined') CookieStore.prototype.set = refused;
    window.name = '';
  }
  return { html: `${head}<html${attributes}>${inner}</html>\n`, ...found };
}

/** Where the in-page waits list what they still wait for. */
export const PENDING_KEY = '__prerenderPending';

/**
 * Kept under `key`, not enumerable, so a timeout can ask the page what is still awaited.
 * @template T @param {string} key @param {string} name @param {Promise<T>} promise @returns {Promise<T>}
 */
export function trackInPage(key, name, promise) {
  const w = /** @type {any} */ (window);
  if (!w[key]) Object.defineProperty(window, key, { value: new Set(), enumerable: false });
  w[key].add(name);
  return promise.then((value) => {
    w[key].delete(name);
    return value;
  });
}
