// @ts-check
import { rmSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BrowserError } from '../errors.js';
import { killAndWait, launchFlags, processesUsing } from './browser.js';
import { claimRenderer, killRenderer, memoryFlags, MemoryWatch, renderersOf } from './memory.js';
import { makeProfile, removeStaleProfiles } from './profiles.js';
import { openTab, resetTab } from './tab.js';

/**
 * One browser at a time, shared by the pages of one run. Pages render in
 * tabs, each tab in a browser context of its own. With isolation 'context'
 * a tab serves one page and is closed after it; with 'slot' a tab that
 * rendered a page without trouble is reset (lib/render/tab.js: its cookies,
 * storage and caches cleared) and serves the next page, so a render does not
 * pay for a new renderer process; a tab whose page failed, timed out or
 * crashed is closed, never reused. The browser is replaced after
 * `recycle` pages (its memory does not grow with the crawl) and whenever it
 * crashes or disconnects. Every call to the browser has a time limit.
 * `close()` ends every browser this pool started and removes their profiles;
 * nothing of them is left running, after a normal end, an abort or a failed
 * launch.
 *
 * @typedef {import('puppeteer-core').Browser} Browser
 * @typedef {import('puppeteer-core').BrowserContext} BrowserContext
 * @typedef {import('./tab.js').Tab} Tab
 * @typedef {{
 *   browser: Browser, profile: string, pid: number | undefined, served: number, active: number,
 *   retired: boolean, dead: boolean, closing: Promise<void> | null, idle: Tab[], opening: Promise<unknown>, claimed: Set<number>,
 * }} Slot
 *   idle: tabs ready for a page (isolation 'slot'); opening: the last tab opened (with a memory
 *   bound, one opens at a time, so that its new renderer is known); claimed: the renderers of its tabs
 */

/** Time limit for calls that do not depend on the page (launch, new context, close). */
export const BROWSER_CALL_MS = 15_000;

/** The browser went away under a page (crash, disconnect, recycled by force). */
export class BrowserGoneError extends BrowserError {
  code = 'BROWSER_GONE';
  retryable = true;
}

/**
 * Settle `promise` within `ms`, else reject with a BrowserError naming `what`.
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<T>}
 */
export function bounded(promise, ms, what) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new BrowserError(`the browser did not ${what} within ${ms} ms`, { code: 'BROWSER_TIMEOUT' })), ms);
  });
  return /** @type {Promise<T>} */ (Promise.race([promise, limit]).finally(() => clearTimeout(timer)));
}

export class BrowserPool {
  /** @type {Slot | null} */
  #current = null;
  /** @type {Promise<Slot> | null} */
  #launching = null;
  /** @type {Set<Slot>} */
  #slots = new Set();
  /** @type {Set<string>} profiles made, removed at close */
  #profiles = new Set();
  #closed = false;
  /** @type {Promise<unknown> | null} the profiles of killed runs, removed before the first launch */
  #swept = null;
  /** @type {MemoryWatch | null} */
  #watch;

  /**
   * @param {{
   *   executablePath: string, recycle: number, protocolTimeout: number, isolation?: 'context' | 'slot',
   *   events?: string[], network?: boolean, tmpDir?: string, memory?: number, onEvent?: (type: string, data: Record<string, unknown>) => void,
   * }} options
   *   isolation: a tab per page ('context') or tabs reset and reused (default 'slot');
   *   events: event: wait conditions, listened for in every tab before any page script;
   *   network: tabs see when each request ends (networkidle is awaited);
   *   tmpDir: where profiles are made (default: the system's temp directory);
   *   memory: the bound on each tab's renderer, in MiB (lib/render/memory.js; default none)
   */
  constructor(options) {
    this.options = options;
    this.#watch = options.memory ? new MemoryWatch(options.memory) : null;
    /** Browsers launched, for tests and the summary. */
    this.launches = 0;
    /** Tabs opened (a browser context each), for tests and the summary. */
    this.tabs = 0;
  }

  /** Start the first browser now, so that a browser that cannot start ends the run before any page. */
  async start() {
    await this.#slot();
  }

  /**
   * Run `fn` with a tab ready for a page: a fresh one, or (isolation 'slot')
   * one reset after its last page. Afterwards the tab is reset for the next
   * page, or closed when its page failed (or the browser is retiring).
   * @template T
   * @param {(tab: Tab, slot: Slot) => Promise<T>} fn
   * @returns {Promise<T>}
   */
  async withTab(fn) {
    let slot = await this.#slot();
    // Pages waiting together may all get a browser another has just retired: each takes a live one.
    while (slot.retired || slot.dead) slot = await this.#slot();
    slot.active++;
    slot.served++;
    if (slot.served >= this.options.recycle) this.#retire(slot);
    try {
      let tab = slot.idle.pop();
      if (!tab) {
        try {
          tab = await this.#open(slot);
        } catch (error) {
          throw this.#gone(slot, error);
        }
      }
      let reuse = false;
      try {
        const value = await fn(tab, slot);
        reuse = this.options.isolation !== 'context' && tab.clean;
        return value;
      } catch (error) {
        throw slot.dead ? this.#gone(slot, error) : error;
      } finally {
        // Reset for the next page (nothing of this page may reach it), else closed.
        if (reuse && !slot.retired && !slot.dead && await bounded(resetTab(tab), BROWSER_CALL_MS, 'reset a tab').then(() => true, () => false)) {
          slot.idle.push(tab);
        } else {
          // A page that failed may still run (a loop, a page allocating without end): its renderer is killed first.
          if (!tab.clean) killRenderer(tab);
          this.#forget(slot, tab);
          // A context that will not close means a browser in trouble: replace it.
          await bounded(tab.context.close(), BROWSER_CALL_MS, 'close a page').catch(() => this.#kill(slot));
        }
      }
    } finally {
      slot.active--;
      if (slot.retired && slot.active === 0) void this.#closeSlot(slot);
    }
  }

  /**
   * A new tab. With a memory bound, tabs open one at a time in a browser, so
   * that the one renderer their opening starts is known, and watched.
   * @param {Slot} slot
   * @returns {Promise<Tab>}
   */
  #open(slot) {
    const options = { events: this.options.events ?? [], network: this.options.network };
    if (!this.#watch) return this.#opened(bounded(openTab(slot.browser, options), BROWSER_CALL_MS, 'open a browser context'));
    const watch = this.#watch;
    const opened = slot.opening.then(async () => {
      const before = renderersOf(slot.pid);
      const tab = await bounded(openTab(slot.browser, options), BROWSER_CALL_MS, 'open a browser context');
      Object.assign(tab, claimRenderer(slot.pid, before, slot.claimed));
      if (tab.pid !== null) slot.claimed.add(tab.pid);
      watch.watch(tab);
      return tab;
    });
    slot.opening = opened.catch(() => {});
    return this.#opened(opened);
  }

  /** @param {Promise<Tab>} opening */
  async #opened(opening) {
    const tab = await opening;
    this.tabs++;
    return tab;
  }

  /** The tab is closing: its renderer is no longer watched. @param {Slot} slot @param {Tab} tab */
  #forget(slot, tab) {
    if (tab.pid !== null) slot.claimed.delete(tab.pid);
    this.#watch?.forget(tab);
  }

  /**
   * @param {Slot} slot
   * @param {unknown} error
   */
  #gone(slot, error) {
    if (error instanceof BrowserGoneError) return error;
    const message = /** @type {Error} */ (error)?.message ?? String(error);
    return new BrowserGoneError(`the browser went away (${message})`, { cause: error });
  }

  /** @returns {Promise<Slot>} */
  async #slot() {
    if (this.#closed) throw new BrowserError('the browser pool is closed', { code: 'BROWSER_CLOSED' });
    if (this.#current && !this.#current.retired && !this.#current.dead) return this.#current;
    this.#launching ??= this.#launch().finally(() => { this.#launching = null; });
    return this.#launching;
  }

  /** @returns {Promise<Slot>} */
  async #launch() {
    const { launch } = (await import('puppeteer-core')).default;
    const tmpDir = this.options.tmpDir ?? os.tmpdir();
    await (this.#swept ??= removeStaleProfiles(tmpDir).then((removed) => {
      if (removed.length > 0) this.options.onEvent?.('stale-profiles', { removed });
    }));
    const profile = await makeProfile(tmpDir);
    this.#profiles.add(profile);
    leftAtExit(profile, true);
    // Chromium's own temporary files (its singleton socket directory, shared
    // memory with --disable-dev-shm-usage) go inside the profile, removed with
    // it: a browser killed with SIGKILL leaves nothing in the system's /tmp.
    // Unless the socket's path would pass the 107 bytes a Unix socket may
    // have (a long temporary directory): then Chromium's own choice stands.
    const tmp = path.join(profile, 'tmp');
    const ownTmp = Buffer.byteLength(path.join(tmp, 'org.chromium.Chromium.XXXXXX', 'SingletonSocket')) <= 107;
    if (ownTmp) await mkdir(tmp);
    let browser;
    try {
      browser = await launch({
        executablePath: this.options.executablePath,
        headless: true,
        pipe: true,
        userDataDir: profile,
        // No startup window: its tab's renderer would be one more, not any page's (lib/render/memory.js tells a tab's by its opening).
        args: [...launchFlags(), '--no-startup-window', ...(this.options.memory ? memoryFlags(this.options.memory) : [])],
        waitForInitialPage: false,
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
        env: ownTmp ? { ...process.env, TMPDIR: tmp } : process.env,
        timeout: BROWSER_CALL_MS,
        protocolTimeout: this.options.protocolTimeout,
        defaultViewport: { width: 1280, height: 800 },
      });
    } catch (error) {
      await killAndWait(profile);
      await rm(profile, { recursive: true, force: true }).catch(() => {});
      this.#profiles.delete(profile);
      leftAtExit(profile, false);
      const message = /** @type {Error} */ (error)?.message?.split('\n')[0] ?? String(error);
      throw new BrowserError(`the browser ${this.options.executablePath} did not start: ${message}`, { code: 'BROWSER_LAUNCH', cause: error });
    }
    this.launches++;
    /** @type {Slot} */
    const slot = { browser, profile, pid: browser.process()?.pid, served: 0, active: 0, retired: false, dead: false, closing: null, idle: [], opening: Promise.resolve(), claimed: new Set() };
    browser.on('disconnected', () => {
      slot.dead = true;
      if (this.#current === slot) this.#current = null;
      if (!slot.closing) this.options.onEvent?.('browser-gone', { pid: slot.pid });
      void this.#closeSlot(slot);
    });
    this.#slots.add(slot);
    if (this.#closed) {
      await this.#closeSlot(slot);
      throw new BrowserError('the browser pool is closed', { code: 'BROWSER_CLOSED' });
    }
    this.#current = slot;
    this.options.onEvent?.('browser', { pid: slot.pid, profile, launches: this.launches });
    return slot;
  }

  /** @param {Slot} slot no new pages; closed when its last page ends */
  #retire(slot) {
    slot.retired = true;
    if (this.#current === slot) this.#current = null;
  }

  /** @param {Slot} slot */
  #kill(slot) {
    slot.dead = true;
    this.#retire(slot);
    void this.#closeSlot(slot);
  }

  /**
   * Close a browser (politely, then by force) and remove its profile.
   * @param {Slot} slot
   */
  #closeSlot(slot) {
    slot.closing ??= (async () => {
      slot.retired = true;
      if (this.#current === slot) this.#current = null;
      await bounded(slot.browser.close(), BROWSER_CALL_MS, 'close').catch(() => {});
      try {
        slot.browser.process()?.kill('SIGKILL');
      } catch {
        // already gone
      }
      await killAndWait(slot.profile);
      await rm(slot.profile, { recursive: true, force: true }).catch(() => {});
      this.#profiles.delete(slot.profile);
      leftAtExit(slot.profile, false);
      this.#slots.delete(slot);
    })();
    return slot.closing;
  }

  /** Close every browser, now: pages in flight fail (the run is ending). */
  async close() {
    this.#closed = true;
    this.#watch?.close();
    await this.#launching?.catch(() => {});
    await Promise.all([...this.#slots].map((slot) => this.#closeSlot(slot)));
    for (const profile of this.#profiles) {
      await killAndWait(profile);
      await rm(profile, { recursive: true, force: true }).catch(() => {});
      leftAtExit(profile, false);
    }
    this.#profiles.clear();
  }
}

/** Profiles of browsers still running, in every pool of the process. */
const live = new Set();
let exitHook = false;

/** How long the exit hook waits for killed browser processes to be gone, at most. */
const EXIT_WAIT_MS = 2000;
/** Something to wait on synchronously (Atomics.wait) in the exit hook, which cannot await. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * Keep (or forget) a profile to clean up should the process exit without
 * closing its pools: a second Ctrl-C, or process.exit() elsewhere. The hook
 * runs synchronously as the process exits: it kills what still uses the
 * profile and removes it.
 * @param {string} profile
 * @param {boolean} running
 */
function leftAtExit(profile, running) {
  if (!running) {
    live.delete(profile);
    return;
  }
  live.add(profile);
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const left of live) {
      for (const pid of processesUsing(left)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      // SIGKILL takes effect when the kernel gets to it: on a loaded machine a renderer still
      // wrote into the profile as it was removed. Waited for, a little at a time, bounded.
      const until = Date.now() + EXIT_WAIT_MS;
      while (processesUsing(left).length > 0 && Date.now() < until) Atomics.wait(PAUSE, 0, 0, 10);
      try {
        rmSync(left, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 });
      } catch {
        // nothing more to do as the process ends
      }
    }
  });
}
