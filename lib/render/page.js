// @ts-check
import { AbortError } from '../errors.js';
import { NetworkIdle } from './idle.js';
import { bounded } from './pool.js';
import { RenderError, RendererCrashError, RenderTimeoutError } from './render-errors.js';
import { PageRequests } from './requests.js';
import { evaluate, inPage, send } from './cdp-session.js';
import { pendingInPage, planWaits } from './waits.js';

export { RenderError, RendererCrashError, RenderTimeoutError };

/**
 * One page rendered in a tab from the bytes our client fetched, the ready conditions awaited within --render-timeout, the DOM
 * serialised. The in-page expressions are built once per crawl (waits.js); the rest is per page.
 * @typedef {{ method: string, url: string, why: 'method' | 'resource' | 'blocked' | 'navigation' }} AbortedRequest
 * @typedef {{ methods: number, resources: number, blocked: number }} AbortCounts methods: other than GET/HEAD; resources: images, media, fonts
 * @typedef {{ html: Buffer, renderMs: number, partial: boolean, reason?: string, status: string | null, headers: string[],
 *   aborted: AbortCounts, abortedList: AbortedRequest[] }} RenderOutcome
 * @typedef {{ wait: string[], idle: number, timeout: number, onTimeout: 'fail' | 'save', stripScripts: boolean, allResources: boolean,
 *   blocked: (url: URL) => boolean, extraHeaders: Record<string, string>, origins: Set<string> }} RenderSettings
 * @typedef {{ url: string, result: import('../fetch/http.js').LoadResult, signal: AbortSignal }} RenderJob
 * @typedef {import('./inpage.js').Serialised} Serialised
 */

/** With --on-render-timeout save, to read a timed-out page's DOM. */
const SAVE_GRACE_MS = 2000;
/** Named when the conditions were met but the page's script did not let its DOM be read. */
const BUSY = 'the DOM to be serialised (the page\'s script is busy)';

/** @param {RenderSettings} settings @returns {(tab: import('./tab.js').Tab, job: RenderJob) => Promise<RenderOutcome>} */
export function createPageRenderer(settings) {
  const plan = planWaits(settings);
  return (tab, job) => new PageRender(tab, job, settings, plan).run();
}

class PageRender {
  started = performance.now();
  /** @type {(error: Error) => void} */ fail = () => {};
  failed = new Promise((_, reject) => { this.fail = reject; });
  /** @type {() => void} */ #parsedNow = () => {};
  parsed = new Promise((resolve) => { this.#parsedNow = () => resolve(undefined); });
  /** @type {() => void} */ #loadedNow = () => {};
  loaded = new Promise((resolve) => { this.#loadedNow = () => resolve(undefined); });
  /** @type {Promise<unknown>} */ deadline = Promise.resolve();
  /** @type {NodeJS.Timeout | undefined} */ #deadlineTimer;
  /** The main frame's documents: ours, then none. */
  #committed = false;

  /** @param {import('./tab.js').Tab} tab @param {RenderJob} job @param {RenderSettings} settings @param {import('./waits.js').WaitPlan} plan */
  constructor(tab, { url, result, signal }, settings, plan) {
    this.tab = tab;
    this.url = url;
    this.signal = signal;
    this.settings = settings;
    this.plan = plan;
    tab.pages++;
    tab.clean = false; // until the render ends well: a tab left in any other state is not reused
    this.failed.catch(() => {});
    /** Conditions not met yet. */
    this.pending = new Set(settings.wait);
    this.requests = new PageRequests(tab, result, settings, {
      begun: () => this.idle.begin(),
      ended: () => this.idle.check(),
      // A navigation begun while the page still loads stops its loading: DOMContentLoaded and load may never come.
      left: () => { if (!this.idle.loaded) setTimeout(() => { void this.#afterLeaving(); }, 20); },
    });
    this.idle = new NetworkIdle(tab.session, settings.idle, this.requests.inFlight);
    this.listeners = /** @type {[string, (event: any) => void][]} */ ([
      ['Fetch.requestPaused', this.requests.paused],
      ['Page.domContentEventFired', this.#onParsed],
      ['Page.loadEventFired', this.#onLoad],
      ['Inspector.targetCrashed', this.#onCrash],
      ['Page.frameNavigated', this.#onNavigated],
      ['Page.javascriptDialogOpening', this.#onDialog],
      ...(tab.network ? [['Network.loadingFinished', this.requests.ended], ['Network.loadingFailed', this.requests.ended]] : []),
    ]);
  }

  /** @returns {Promise<RenderOutcome>} */
  async run() {
    const { signal, settings, tab } = this;
    signal.addEventListener('abort', this.#onAbort, { once: true });
    if (signal.aborted) this.#onAbort();
    this.deadline = new Promise((resolve) => { this.#deadlineTimer = setTimeout(() => resolve('timeout'), Math.max(0, settings.timeout - (performance.now() - this.started))); });
    try {
      for (const [name, listener] of this.listeners) tab.session.on(name, listener);
      tab.onGone.add(this.#onGone);
      if (tab.gone) this.#onGone('the browser went away');
      return await this.#render();
    } catch (error) {
      if (!(error instanceof RenderTimeoutError) || settings.onTimeout !== 'save') throw error;
      return await this.#savePartial(error);
    } finally {
      clearTimeout(this.#deadlineTimer);
      this.idle.stop();
      signal.removeEventListener('abort', this.#onAbort);
      tab.onGone.delete(this.#onGone);
      for (const [name, listener] of this.listeners) tab.session.off(name, listener);
    }
  }

  async #render() {
    const navigation = this.tab.session.send('Page.navigate', { url: this.url }).then((answer) => {
      if (answer.errorText) throw new RenderError(`the browser could not load the page: ${answer.errorText}`);
    }, (error) => {
      throw new RenderError(`the browser could not load the page: ${/** @type {Error} */ (error).message}`);
    });
    navigation.catch(() => {});
    if ((await this.#race(navigation)) === 'timeout') throw await this.#timedOut('the document to be parsed (DOMContentLoaded; the navigation did not commit)');
    if (!this.tab.network) this.requests.inFlight.delete(this.requests.mainKey); // our own bytes, all handed over with the answer
    if ((await this.#race(this.parsed)) === 'timeout') throw await this.#timedOut('the document to be parsed (DOMContentLoaded)');
    const serialised = this.plan.oneCall === null ? await this.#waitThenRead() : await this.#readInOneCall(this.plan.oneCall);
    if (!serialised) throw new RenderError('the page could not be read');
    this.tab.clean = true;
    return this.#outcome(serialised, false);
  }

  /** Every condition is the page's own: one call waits, then for window.prerenderReady, and reads the DOM. @param {string} expression @returns {Promise<Serialised | null>} */
  async #readInOneCall(expression) {
    const serialised = await this.#race(this.#evaluate(expression));
    if (serialised === 'timeout') throw await this.#timedOut(await pendingInPage(this.tab.session, this.plan));
    return serialised;
  }

  /** A page that set window.prerenderReady = false is read once it says true. @returns {Promise<Serialised | null>} */
  async #waitThenRead() {
    const conditions = this.settings.wait.map((cond) => this.#waitFor(cond).then(() => { this.pending.delete(cond); }));
    if ((await this.#race(Promise.all(conditions))) === 'timeout') throw await this.#timedOut();
    let serialised = await this.#race(this.#evaluate(this.plan.readIfReady));
    if (serialised === 'timeout') throw await this.#timedOut(BUSY);
    if (serialised !== null) return serialised;
    this.pending.add('window.prerenderReady === true');
    if ((await this.#race(inPage(this.#evaluate(this.plan.ready)))) === 'timeout') throw await this.#timedOut();
    this.pending.clear();
    serialised = await this.#race(this.#evaluate(this.plan.read));
    if (serialised === 'timeout') throw await this.#timedOut(BUSY);
    return serialised;
  }

  /** @param {string} cond @returns {Promise<unknown>} */
  #waitFor(cond) {
    if (cond === 'load') return this.loaded;
    if (cond === 'domcontentloaded') return Promise.resolve(); // waited for before any condition
    if (cond === 'networkidle') return this.idle.reached;
    // Waited for inside the page: no polling, no helper script injected.
    const expression = this.plan.inPage.get(cond);
    if (expression !== undefined) return inPage(this.#evaluate(expression));
    throw new RenderError(`unknown --render-wait condition ${JSON.stringify(cond)}`);
  }

  /** --on-render-timeout save: keep what is there, marked partial. @param {RenderTimeoutError} error */
  async #savePartial(error) {
    const serialised = await bounded(this.#evaluate(this.plan.readPartial), SAVE_GRACE_MS, 'serialise the DOM').catch(() => null);
    if (!serialised) throw new RenderTimeoutError(`${error.message}; the partial DOM could not be read either (the page's script is busy)`);
    return { ...this.#outcome(serialised, true), reason: error.message };
  }

  /** @template T @param {Promise<T>} work @returns {Promise<T | 'timeout'>} */
  #race(work) {
    return /** @type {Promise<T | 'timeout'>} */ (Promise.race([work, this.deadline, this.failed]));
  }

  /** @param {string} expression */
  #evaluate(expression) {
    return evaluate(this.tab.session, expression);
  }

  /** @param {string} [stage] what was awaited instead of the conditions */
  async #timedOut(stage) {
    const unsettled = this.idle.settling > 0 && this.requests.inFlight.size === 0;
    const waiting = [...this.pending].map((cond) => (cond === 'networkidle' && unsettled ? 'networkidle (the network is quiet; the page has not settled: its script is busy or its DOM still changing)' : cond));
    const what = stage ?? (waiting.join(', ') || 'the page');
    const flight = await this.requests.describe();
    return new RenderTimeoutError(`render timed out after ${this.settings.timeout} ms waiting for ${what} (${flight})`);
  }

  /** @param {Serialised} serialised @param {boolean} partial @returns {RenderOutcome} */
  #outcome(serialised, partial) {
    const { aborted, abortedList } = this.requests;
    return { html: Buffer.from(serialised.html, 'utf8'), renderMs: Math.round(performance.now() - this.started), partial, status: serialised.status, headers: serialised.headers, aborted, abortedList };
  }

  #onParsed = () => {
    this.pending.delete('domcontentloaded');
    this.#parsedNow();
  };

  #onLoad = () => {
    this.pending.delete('load');
    this.#loadedNow();
    this.idle.load();
  };

  /**
   * Another main-frame document is the page replaced before it was read (history.back(), a navigation no request stood for): never written.
   * @param {{ frame: { id: string, parentId?: string, url: string } }} event Page.frameNavigated
   */
  #onNavigated = ({ frame }) => {
    if (frame.parentId || frame.id !== this.tab.frameId) return;
    if (!this.#committed) {
      this.#committed = true;
      return;
    }
    this.fail(new RenderError(`the page left itself for ${frame.url.startsWith('chrome-error:') ? 'an error page' : frame.url} before it was read (history.back(), or a navigation the render could not stop)`));
  };

  /** After a navigation stopped the loading, what the document holds is all it will hold. */
  async #afterLeaving() {
    const state = await this.tab.session.send('Runtime.evaluate', { expression: 'document.readyState', returnByValue: true }).catch(() => null);
    const readyState = state?.result?.value;
    if (readyState === 'loading' || readyState === undefined || this.idle.loaded) return;
    this.#onParsed();
    this.#onLoad();
  }

  /** Dismissed, never waited on: a render has no one to answer them. */
  #onDialog = () => send(this.tab.session, 'Page.handleJavaScriptDialog', { accept: false });
  #onAbort = () => this.fail(new AbortError('crawl interrupted'));
  #onCrash = () => this.fail(new RendererCrashError('the page\'s renderer crashed'));
  /** @param {string} why */
  #onGone = (why) => this.fail(new RendererCrashError(why));
}
