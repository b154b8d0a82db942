// @ts-check
import { readFileSync } from 'node:fs';
import { privateBytes, processTree, startTicks } from '../runtime/processes.js';
import { RenderMemoryError } from './render-errors.js';

/**
 * --render-memory: a bound on the memory of each tab's renderer process. A
 * watch reads each renderer's private memory (RssAnon) every SAMPLE_MS and
 * kills the renderer past the bound. That stops JavaScript objects, array
 * buffers, DOM nodes and canvases alike. V8's heap limit
 * (--max-old-space-size) is a backstop at twice the bound: near its limit V8
 * collects garbage again and again, slowly, before it gives up, so the watch
 * must act first. The watch needs /proc (Linux) and the tab's renderer pid;
 * elsewhere V8's limit alone holds, at the bound itself.
 *
 * @typedef {{ pid: number | null, start: string | null, memory: TabMemory }} WatchedTab
 *   pid, start: the tab's renderer process and its start time (a pid is checked to be that process before it is read or killed)
 * @typedef {{ last: number, killed: number }} TabMemory
 *   last: private bytes at the last reading; killed: the reading that got the renderer killed, else 0
 */

/** How often the watch reads the renderers' memory. */
export const SAMPLE_MS = 200;
/** A crash at this share of the bound or above is taken for V8's heap limit, reached between two readings. */
const NEAR = 0.75;

/**
 * Chromium's flags for the bound: V8's heap limit, twice the bound where the watch runs.
 * @param {number} mb @param {boolean} [watched] @returns {string[]}
 */
export function memoryFlags(mb, watched = process.platform === 'linux') {
  return [`--js-flags=--max-old-space-size=${watched ? 2 * mb : mb}`];
}

/**
 * The renderer processes of a browser.
 * @param {number | undefined} browserPid
 * @returns {Set<number>}
 */
export function renderersOf(browserPid) {
  /** @type {Set<number>} */
  const found = new Set();
  if (browserPid === undefined || process.platform !== 'linux') return found;
  for (const pid of processTree(browserPid).slice(1)) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('--type=renderer')) found.add(pid);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * The renderer a tab's opening started: the one renderer of the browser that
 * was not running before and that no other tab has. Unknown (null) when that
 * is not exactly one process.
 * @param {number | undefined} browserPid
 * @param {Set<number>} before the renderers before the tab was opened
 * @param {Set<number>} claimed the renderers of the browser's other tabs
 * @returns {{ pid: number | null, start: string | null }}
 */
export function claimRenderer(browserPid, before, claimed) {
  const fresh = [...renderersOf(browserPid)].filter((pid) => !before.has(pid) && !claimed.has(pid));
  const start = fresh.length === 1 ? startTicks(fresh[0]) : null;
  return start === null ? { pid: null, start: null } : { pid: fresh[0], start };
}

/** @param {number} bytes */
const mib = (bytes) => Math.round(bytes / 1048576);

/**
 * What a crash of the tab's renderer was: RENDER_MEMORY when the watch killed
 * it, or when it crashed near the bound (V8's heap limit); else null.
 * @param {WatchedTab} tab
 * @param {number} mb the bound
 * @returns {RenderMemoryError | null}
 */
export function memoryCrash(tab, mb) {
  const { killed, last } = tab.memory;
  if (killed > 0) return new RenderMemoryError(`the page took ${mib(killed)} MiB of memory, past --render-memory ${mb}: its renderer was killed`);
  if (last >= NEAR * mb * 1048576) return new RenderMemoryError(`the page's renderer crashed at ${mib(last)} MiB, near --render-memory ${mb} (its JavaScript heap limit)`);
  return null;
}

/** Reads the memory of the tabs' renderers, and kills a renderer past the bound. */
export class MemoryWatch {
  /** @type {Set<WatchedTab>} */
  #tabs = new Set();
  /** @type {NodeJS.Timeout | null} */
  #timer = null;

  /** @param {number} mb the bound @param {number} [intervalMs] */
  constructor(mb, intervalMs = SAMPLE_MS) {
    this.limit = mb * 1048576;
    this.intervalMs = intervalMs;
  }

  /** @param {WatchedTab} tab its renderer pid known */
  watch(tab) {
    if (tab.pid === null) return;
    this.#tabs.add(tab);
    if (!this.#timer) {
      this.#timer = setInterval(() => this.#read(), this.intervalMs);
      this.#timer.unref();
    }
  }

  /** @param {WatchedTab} tab */
  forget(tab) {
    this.#tabs.delete(tab);
    if (this.#tabs.size === 0) this.close();
  }

  #read() {
    for (const tab of this.#tabs) {
      const bytes = isRenderer(tab) ? privateBytes(/** @type {number} */ (tab.pid)) : null;
      if (bytes === null) {
        this.forget(tab); // the renderer is gone
        continue;
      }
      tab.memory.last = bytes;
      if (bytes <= this.limit) continue;
      tab.memory.killed = bytes; // before the kill: the tab's crash event reads it
      killRenderer(tab);
      this.forget(tab);
    }
  }

  close() {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

/** Whether the tab's renderer still runs under its pid. @param {WatchedTab} tab */
function isRenderer(tab) {
  return tab.pid !== null && tab.start !== null && startTicks(tab.pid) === tab.start;
}

/**
 * Kill a tab's renderer process now: the page stops, its memory is freed,
 * and the browser goes on with its other tabs.
 * @param {WatchedTab} tab
 */
export function killRenderer(tab) {
  if (!isRenderer(tab)) return;
  try {
    process.kill(/** @type {number} */ (tab.pid), 'SIGKILL');
  } catch {
    // already gone
  }
}
