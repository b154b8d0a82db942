// @ts-check
import { rmSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BrowserError } from '../errors.js';
import { isHeadlessShell, killAndWait, launchFlags, processesUsing } from './browser.js';
import { claimRenderer, killRenderer, memoryFlags, MemoryWatch, renderersOf } from './memory.js';
import { makeProfile, removeStaleProfiles } from './profiles.js';
import { openTab, resetTab } from './tab.js';

/**
 * One browser at a time, shared by a run's pages, each tab in a browser context of its own. With isolation 'context' a tab serves
 * one page; with 'slot' a tab whose page went well is reset (tab.js) and serves the next, sparing a new renderer process; a tab
 * whose page failed, timed out or crashed is closed. The browser is replaced after `recycle` pages and when it crashes; every call
 * to it has a time limit. `close()` ends every browser this pool started and removes their profiles, whatever the end.
 * @typedef {import('puppeteer-core').Browser} Browser @typedef {import('puppeteer-core').BrowserContext} BrowserContext
 * @typedef {import('./tab.js').Tab} Tab
 * @typedef {{ browser: Browser, profile: string, pid: number | undefined, served: number, active: number, retired: boolean,
 *   dead: boolean, closing: Promise<void> | null, idle: Tab[], opening: Promise<unknown>, claimed: Set<number>, tabs: Set<Tab> }} Slot
 *   idle: tabs ready for a page (isolation 'slot'); opening: the last tab opened (with a memory bound, one at a time, so that the
 *   renderer it starts is known); claimed: its tabs' renderers; tabs: those open, closed one by one in a browser not ours; profile: '' then
 */

/** Puppeteer's, for a browser started or connected to; each tab sets its own (tab.js). */
const DEFAULT_VIEWPORT = { width: 1280, height: 800 };

/** For calls that do not depend on the page: launch, new context, close. */
export const BROWSER_CALL_MS = 15_000;

/** Crash, disconnect, or recycled by force. */
export class BrowserGoneError extends BrowserError {
  code = 'BROWSER_GONE';
  retryable = true;
}

/** Else a BrowserError naming `what`. @template T @param {Promise<T>} promise @param {number} ms @param {string} what @returns {Promise<T>} */
export function bounded(promise, ms, what) {
  /** @type {NodeJS.Timeout | undefined} */ let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new BrowserError(`the browser did not ${what} within ${ms} ms`, { code: 'BROWSER_TIMEOUT' })), ms);
  });
  return /** @type {Promise<T>} */ (Promise.race([promise, limit]).finally(() => clearTimeout(timer)));
}

export class BrowserPool {
  /** @type {Slot | null} */ #current = null;
  /** @type {Promise<Slot> | null} */ #launching = null;
  /** @type {Set<Slot>} */ #slots = new Set();
  /** @type {Set<string>} profiles made, removed at close */
  #profiles = new Set();
  #closed = false;
  /** @type {Promise<unknown> | null} the profiles of killed runs, removed before the first launch */
  #swept = null;
  /** @type {MemoryWatch | null} */
  #watch;

  /**
   * @param {{ executablePath: string, recycle: number, protocolTimeout: number, isolation?: 'context' | 'slot', events?: string[],
   *   network?: boolean, tmpDir?: string, memory?: number, endpoint?: string, onEvent?: (type: string, data: Record<string, unknown>) => void }} options
   *   events: event: wait conditions, listened for in every tab before any page script; tmpDir: where profiles are made;
   *   memory: the bound on each tab's renderer in MiB (memory.js), none by default, and none in a browser not ours;
   *   endpoint: a running browser's DevTools address (ws://... or http://host:port), connected to instead of a browser started
   */
  constructor(options) {
    this.options = options;
    // A browser not ours: its renderers' pids are not known, nor may we kill them.
    this.#watch = options.memory && !options.endpoint ? new MemoryWatch(options.memory) : null;
    /** For tests and the summary. */
    this.launches = 0;
    /** A browser context each; for tests and the summary. */
    this.tabs = 0;
  }

  /** A browser that cannot start ends the run before any page. */
  async start() {
    await this.#slot();
  }

  /**
   * A fresh tab, or with isolation 'slot' one reset after its last page; afterwards reset again, or closed when its page failed.
   * @template T @param {(tab: Tab, slot: Slot) => Promise<T>} fn @returns {Promise<T>}
   */
  async withTab(fn) {
    let slot = await this.#slot();
    // Pages waiting together may all get a browser another just retired: each takes a live one.
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
        // Reset for the next page, else closed: nothing of this page may reach it.
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
   * With a memory bound, tabs open one at a time in a browser: the one renderer an opening starts is the tab's, and is watched.
   * @param {Slot} slot @returns {Promise<Tab>}
   */
  #open(slot) {
    const options = { events: this.options.events ?? [], network: this.options.network };
    if (!this.#watch) return this.#opened(slot, bounded(openTab(slot.browser, options), BROWSER_CALL_MS, 'open a browser context'));
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
    return this.#opened(slot, opened);
  }

  /** @param {Slot} slot @param {Promise<Tab>} opening */
  async #opened(slot, opening) {
    const tab = await opening;
    slot.tabs.add(tab);
    this.tabs++;
    return tab;
  }

  /** Closing: its renderer is no longer watched. @param {Slot} slot @param {Tab} tab */
  #forget(slot, tab) {
    slot.tabs.delete(tab);
    if (tab.pid !== null) slot.claimed.delete(tab.pid);
    this.#watch?.forget(tab);
  }

  /** @param {Slot} slot @param {unknown} error */
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

  /**
   * A running browser (--browser-endpoint): the run opens and closes its own contexts in it, and never ends it.
   * @param {string} endpoint @returns {Promise<{ browser: Browser, profile: string }>}
   */
  async #connect(endpoint) {
    const { connect } = (await import('puppeteer-core')).default;
    const at = /^wss?:/i.test(endpoint) ? { browserWSEndpoint: endpoint } : { browserURL: endpoint };
    const connecting = connect({ ...at, protocolTimeout: this.options.protocolTimeout, defaultViewport: DEFAULT_VIEWPORT });
    try {
      return { browser: await bounded(connecting, BROWSER_CALL_MS, 'answer at its endpoint'), profile: '' };
    } catch (error) {
      // A connection made past the bound would hold the process open.
      void connecting.then((late) => late.disconnect(), () => {});
      const message = /** @type {Error} */ (error)?.message?.split('\n')[0] ?? String(error);
      throw new BrowserError(`the browser at ${endpoint} could not be reached: ${message}`, { code: 'BROWSER_CONNECT', cause: error });
    }
  }

  /** A browser of its own, in a fresh profile. @returns {Promise<{ browser: Browser, profile: string }>} */
  async #start() {
    const { launch } = (await import('puppeteer-core')).default;
    const tmpDir = this.options.tmpDir ?? os.tmpdir();
    await (this.#swept ??= removeStaleProfiles(tmpDir).then((removed) => {
      if (removed.length > 0) this.options.onEvent?.('stale-profiles', { removed });
    }));
    const profile = await makeProfile(tmpDir);
    this.#profiles.add(profile);
    leftAtExit(profile, true);
    // Chromium's temporary files go inside the profile, removed with it: a browser killed with SIGKILL leaves nothing in /tmp.
    // Unless the socket's path would pass the 107 bytes a Unix socket may have: then Chromium's choice stands.
    const tmp = path.join(profile, 'tmp');
    const ownTmp = Buffer.byteLength(path.join(tmp, 'org.chromium.Chromium.XXXXXX', 'SingletonSocket')) <= 107;
    if (ownTmp) await mkdir(tmp);
    const shell = isHeadlessShell(this.options.executablePath);
    let browser;
    try {
      browser = await launch({
        executablePath: this.options.executablePath,
        headless: shell ? 'shell' : true,
        pipe: true,
        userDataDir: profile,
        // No startup window: its tab's renderer would be one more, not any page's (lib/render/memory.js tells a tab's by its opening).
        args: [...launchFlags(), '--no-startup-window', ...(this.options.memory ? memoryFlags(this.options.memory) : [])],
        // The headless shell opens a blank tab whatever the flags: waited for, then closed, so that every renderer is a page's.
        waitForInitialPage: shell,
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
        env: ownTmp ? { ...process.env, TMPDIR: tmp } : process.env,
        timeout: BROWSER_CALL_MS,
        protocolTimeout: this.options.protocolTimeout,
        defaultViewport: DEFAULT_VIEWPORT,
      });
      if (shell) for (const page of await browser.pages()) await bounded(page.close(), BROWSER_CALL_MS, 'close the blank tab');
      leftAtExit(profile, true, browser.process()?.pid);
    } catch (error) {
      await killAndWait(profile, undefined, browser?.process()?.pid);
      await rm(profile, { recursive: true, force: true }).catch(() => {});
      this.#profiles.delete(profile);
      leftAtExit(profile, false);
      const message = /** @type {Error} */ (error)?.message?.split('\n')[0] ?? String(error);
      throw new BrowserError(`the browser ${this.options.executablePath} did not start: ${message}`, { code: 'BROWSER_LAUNCH', cause: error });
    }
    return { browser, profile };
  }

  /** @returns {Promise<Slot>} */
  async #launch() {
    const { browser, profile } = this.options.endpoint ? await this.#connect(this.options.endpoint) : await this.#start();
    this.launches++;
    /** @type {Slot} */
    const slot = { browser, profile, pid: browser.process()?.pid, served: 0, active: 0, retired: false, dead: false, closing: null, idle: [], opening: Promise.resolve(), claimed: new Set(), tabs: new Set() };
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

  /** @param {Slot} slot closed when its last page ends */
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

  /** Politely, then by force; its profile removed. @param {Slot} slot */
  #closeSlot(slot) {
    slot.closing ??= (async () => {
      slot.retired = true;
      if (this.#current === slot) this.#current = null;
      if (!slot.profile) {
        await this.#leave(slot);
        return;
      }
      await bounded(slot.browser.close(), BROWSER_CALL_MS, 'close').catch(() => {});
      try {
        slot.browser.process()?.kill('SIGKILL');
      } catch {
        // already gone
      }
      await killAndWait(slot.profile, undefined, slot.pid);
      await rm(slot.profile, { recursive: true, force: true }).catch(() => {});
      this.#profiles.delete(slot.profile);
      leftAtExit(slot.profile, false);
      this.#slots.delete(slot);
    })();
    return slot.closing;
  }

  /** A browser not ours: every context this run opened in it closed, then the connection; the browser runs on. @param {Slot} slot */
  async #leave(slot) {
    const tabs = [...slot.tabs];
    slot.tabs.clear();
    await Promise.all(tabs.map((tab) => bounded(tab.context.close(), BROWSER_CALL_MS, 'close a page').catch(() => {})));
    await bounded(slot.browser.disconnect(), BROWSER_CALL_MS, 'disconnect').catch(() => {});
    this.#slots.delete(slot);
  }

  /** Now: pages in flight fail, the run is ending. */
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

/** Of browsers still running, in every pool of the process: profile -> the browser's pid, once known. */
/** @type {Map<string, number | undefined>} */
const live = new Map();
let exitHook = false;

/** At most, for killed browser processes to be gone. */
const EXIT_WAIT_MS = 2000;
/** The exit hook cannot await: it waits with Atomics.wait. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * For the exit hook, should the process exit without closing its pools (a second Ctrl-C, process.exit() elsewhere): it kills
 * what still uses the profile and removes it, synchronously. @param {string} profile @param {boolean} running @param {number} [pid]
 */
function leftAtExit(profile, running, pid) {
  if (!running) {
    live.delete(profile);
    return;
  }
  live.set(profile, pid);
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const [left, session] of live) {
      for (const pid of processesUsing(left, session)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      // SIGKILL takes effect when the kernel gets to it: on a loaded machine a renderer still wrote into the profile. Waited for, bounded.
      const until = Date.now() + EXIT_WAIT_MS;
      while (processesUsing(left, session).length > 0 && Date.now() < until) Atomics.wait(PAUSE, 0, 0, 10);
      try {
        rmSync(left, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 });
      } catch {
        // nothing more to do as the process ends
      }
    }
  });
}
