// @ts-check
import { HEAVY_TYPES } from './block.js';
import { askBriefly, send } from './cdp-session.js';

/**
 * A page's requests as the browser pauses them: the main document answered with our bytes, so the origin sees one request per
 * page; subresources go to the origin; other methods, images, media, fonts and blocked hosts are aborted.
 * @typedef {{ requestId: string, networkId?: string, frameId: string, resourceType: string, request: { url: string, method: string, headers: Record<string, string> } }} PausedRequest
 * @typedef {{ begun: () => void, ended: () => void, left: () => void }} RequestHooks left: the page tried to navigate away
 */

/** The counts go on past it. */
const MAX_LISTED = 20;
/** In-flight requests named in a timeout's reason. */
const MAX_NAMED = 5;
/** Response headers not handed on to the browser with the main document's bytes. */
const DROPPED_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive']);

export class PageRequests {
  /**
   * Let through and not seen to end: by Network request id when that domain is on, else every one let through (resource timing
   * says which ended, for a timeout's reason only). @type {Map<string, { label: string, url: string }>}
   */
  inFlight = new Map();
  mainKey = '';
  mainServed = false;
  /** @type {import('./page.js').AbortCounts} */ aborted = { methods: 0, resources: 0, blocked: 0 };
  /** @type {import('./page.js').AbortedRequest[]} */ abortedList = [];

  /**
   * @param {import('./tab.js').Tab} tab @param {import('../fetch/http.js').LoadResult} result the main document, as fetched
   * @param {import('./page.js').RenderSettings} settings @param {RequestHooks} hooks
   */
  constructor(tab, result, settings, hooks) {
    this.tab = tab;
    this.result = result;
    this.settings = settings;
    this.hooks = hooks;
  }

  /** @param {PausedRequest} event */
  paused = (event) => {
    const { requestId, request, frameId } = event;
    const { method, url: raw } = request;
    const type = event.resourceType.toLowerCase();
    const main = type === 'document' && frameId === this.tab.frameId;
    if (main && !this.mainServed) return this.#serveMain(event);
    if (main) return this.#stayOnPage(event);
    if (method !== 'GET' && method !== 'HEAD') return this.#abort(event, 'method');
    if (raw.startsWith('data:') || raw.startsWith('blob:')) return this.#send('Fetch.continueRequest', { requestId });
    let target;
    try {
      target = new URL(raw);
    } catch {
      return this.#abort(event, 'blocked');
    }
    // The browser's own favicon request is not the page's: dropped, not counted, never holding networkidle.
    if (type === 'other' && target.pathname.endsWith('/favicon.ico')) return this.#send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' });
    if (!this.settings.allResources && HEAVY_TYPES.has(type)) return this.#abort(event, 'resource');
    if (this.settings.blocked(target)) return this.#abort(event, 'blocked');
    if (type === 'document' && target.origin !== 'null') this.tab.origins.add(target.origin); // a frame: its storage is cleared after
    this.#track(event);
    const { extraHeaders } = this.settings;
    if (this.settings.origins.has(target.origin) && Object.keys(extraHeaders).length > 0) {
      const merged = { ...request.headers, ...extraHeaders };
      this.#send('Fetch.continueRequest', { requestId, headers: Object.entries(merged).map(([name, value]) => ({ name, value: String(value) })) });
    } else {
      this.#send('Fetch.continueRequest', { requestId });
    }
  };

  /** @param {{ requestId: string }} event Network.loadingFinished / loadingFailed */
  ended = (event) => {
    if (this.inFlight.delete(event.requestId)) this.hooks.ended();
  };

  /** @param {PausedRequest} event */
  #serveMain(event) {
    this.mainServed = true;
    this.tab.origins.add(new URL(event.request.url).origin);
    this.mainKey = this.#track(event);
    /** @type {{ name: string, value: string }[]} */ const headers = [];
    for (const [name, value] of Object.entries(this.result.headers)) {
      if (value === undefined || DROPPED_HEADERS.has(name)) continue;
      for (const one of Array.isArray(value) ? value : [value]) headers.push({ name, value: String(one) });
    }
    this.#send('Fetch.fulfillRequest', { requestId: event.requestId, responseCode: this.result.status, responseHeaders: headers, body: this.result.body.toString('base64') });
  }

  /** The render is of this page: "204 No Content" keeps the browser where it is, where a failed request would show an error page. @param {PausedRequest} event */
  #stayOnPage(event) {
    this.aborted.blocked++;
    if (this.abortedList.length < MAX_LISTED) this.abortedList.push({ method: event.request.method, url: event.request.url, why: 'navigation' });
    this.#send('Fetch.fulfillRequest', { requestId: event.requestId, responseCode: 204, responseHeaders: [], body: '' });
    this.hooks.left();
  }

  /** @param {PausedRequest} event @param {import('./page.js').AbortedRequest['why']} why */
  #abort(event, why) {
    if (why === 'method') this.aborted.methods++;
    else if (why === 'resource') this.aborted.resources++;
    else this.aborted.blocked++;
    if (this.abortedList.length < MAX_LISTED) this.abortedList.push({ method: event.request.method, url: event.request.url, why });
    this.#send('Fetch.failRequest', { requestId: event.requestId, errorReason: 'BlockedByClient' });
  }

  /** @param {PausedRequest} event */
  #track(event) {
    // A redirect's hops share their network id: named by its latest URL, matched against resource timing by its first.
    const key = event.networkId ?? event.requestId;
    const first = this.inFlight.get(key)?.url ?? event.request.url;
    this.inFlight.set(key, { label: `${event.request.method} ${event.request.url}`, url: first });
    this.hooks.begun();
    return key;
  }

  /** @param {string} method @param {Record<string, unknown>} params */
  #send(method, params) {
    send(this.tab.session, method, params);
  }

  /** For a timeout's reason: what is still in flight, named. */
  async describe() {
    const requests = await this.#stillInFlight();
    const { size } = this.inFlight;
    if (requests === null) return `${size} request${size === 1 ? '' : 's'} let through; which are still in flight is unknown: the page's script is busy`;
    const named = requests.slice(0, MAX_NAMED).join(', ') + (requests.length > MAX_NAMED ? `, … ${requests.length - MAX_NAMED} more` : '');
    return requests.length === 0 ? 'no request in flight' : `${requests.length} request${requests.length === 1 ? '' : 's'} in flight: ${named}`;
  }

  /** From Network's events when on; else resource timing's, null when the page's busy script did not answer. @returns {Promise<string[] | null>} */
  async #stillInFlight() {
    if (this.tab.network || this.inFlight.size === 0) return [...this.inFlight.values()].map((request) => request.label);
    const ended = await askBriefly(this.tab.session, 'performance.getEntriesByType("resource").map((entry) => entry.name)', 'list its requests');
    if (!Array.isArray(ended)) return null;
    /** @type {Map<string, number>} */ const counts = new Map();
    for (const name of ended) counts.set(name, (counts.get(name) ?? 0) + 1);
    return [...this.inFlight.values()].filter((request) => {
      const left = counts.get(request.url) ?? 0;
      if (left > 0) counts.set(request.url, left - 1);
      return left === 0;
    }).map((request) => request.label);
  }
}
