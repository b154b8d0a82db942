// @ts-check
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BrowserError } from '../errors.js';
import { killAndWait, launchFlags, processesUsing } from './browser.js';
import { openTab, resetTab } from './tab.js';

/**
 * One browser at a time, shared by a run's pages, each tab in a browser context of its own. With isolation 'context' a tab serves
 * one page; with 'slot' a tab whose page went well is reset (tab.js) and serves the next, sparing a new renderer process; a tab
 * whose page failed, timed out or crashed is closed. The browser is replaced after `recycle` pages and when it crashes; every call
 * to it has a time limit. `close()` ends every browser this pool started and removes their profiles, whatever the end.
 * @typedef {import('puppeteer-core').Browser} Browser @typedef {import('puppeteer-core').BrowserContext} BrowserContext
 * @typedef {import('./tab.js').Tab} Tab
 * @typedef {{ browser: Browser, profile: string, pid: number | undefined, served: number, active: number, retired: boolean,
 *   dead: boolean, closing: Promise<void> | null, idle: Tab[] }} Slot idle: tabs ready for a page (isolation 'slot')
 */

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

  /**
   * @param {{ executablePath: string, recycle: number, protocolTimeout: number, isolation?: 'context' | 'slot', events?: string[],
   *   network?: boolean, tmpDir?: string, onEvent?: (type: string, data: Record<string, unknown>) => void }} options
   *   events: event: wait conditions, listened for in every tab before any page script; tmpDir: where profiles are made
   */
  constructor(options) {
    this.options = options;
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
          tab = await bounded(openTab(slot.browser, { events: this.options.events ?? [], network: this.options.network }), BROWSER_CALL_MS, 'open a browser context');
          this.tabs++;
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
          // A context that will not close means a browser in trouble: replace it.
          await bounded(tab.context.close(), BROWSER_CALL_MS, 'close a page').catch(() => this.#kill(slot));
        }
      }
    } finally {
      slot.active--;
      if (slot.retired && slot.active === 0) void this.#closeSlot(slot);
    }
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

  /** @returns {Promise<Slot>} */
  async #launch() {
    const { launch } = (await import('puppeteer-core')).default;
    const profile = await mkdtemp(path.join(this.options.tmpDir ?? os.tmpdir(), 'prerender-chromium-'));
    this.#profiles.add(profile);
    leftAtExit(profile, true);
    // Chromium's temporary files go inside the profile, removed with it: a browser killed with SIGKILL leaves nothing in /tmp.
    // Unless the socket's path would pass the 107 bytes a Unix socket may have: then Chromium's choice stands.
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
        args: launchFlags(),
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
    const slot = { browser, profile, pid: browser.process()?.pid, served: 0, active: 0, retired: false, dead: false, closing: null, idle: [] };
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

  /** Now: pages in flight fail, the run is ending. */
  async close() {
    this.#closed = true;
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

/** Of browsers still running, in every pool of the process. */
const live = new Set();
let exitHook = false;

/** At most, for killed browser processes to be gone. */
const EXIT_WAIT_MS = 2000;
/** The exit hook cannot await: it waits with Atomics.wait. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * For the exit hook, should the process exit without closing its pools (a second Ctrl-C, process.exit() elsewhere): it kills
 * what still uses the profile and removes it, synchronously. @param {string} profile @param {boolean} running
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
      // SIGKILL takes effect when the kernel gets to it: on a loaded machine a renderer still wrote into the profile. Waited for, bounded.
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
