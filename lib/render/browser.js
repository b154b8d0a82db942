// @ts-check
import { accessSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { BrowserError } from '../errors.js';

/**
 * Finding the browser and how to start it. prerender never downloads a
 * browser: it uses the one given with --browser, PUPPETEER_EXECUTABLE_PATH or
 * CHROME_PATH, or the first of chromium, chromium-browser, google-chrome on
 * the PATH.
 */

export const BROWSER_NAMES = ['chromium', 'chromium-browser', 'google-chrome'];

export const INSTALL_HINT = 'install one (Debian/Ubuntu: apt-get install chromium) or point to it with --browser <path> or PUPPETEER_EXECUTABLE_PATH';

/** The one line --render says when its driver is not installed (an optional peer dependency). */
export const DRIVER_HINT = '--render needs puppeteer-core, an optional dependency that is not installed: npm install puppeteer-core@24';

/**
 * Checks that puppeteer-core can be loaded: a crawl-only install leaves it out.
 * @param {(specifier: string) => string} [resolve] import.meta.resolve (a test's stand-in)
 */
export function assertDriver(resolve = (specifier) => import.meta.resolve(specifier)) {
  try {
    resolve('puppeteer-core');
  } catch {
    throw new BrowserError(DRIVER_HINT, { code: 'RENDER_NOT_INSTALLED' });
  }
}

/** @param {string} file */
function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile(); // a directory is "executable" too
  } catch {
    return false;
  }
}

/**
 * The browser executable to use.
 * @param {{ browser?: string, env?: Record<string, string | undefined> }} options
 * @returns {string}
 */
export function findBrowser({ browser, env = process.env }) {
  if (browser !== undefined) {
    if (executable(browser)) return browser;
    throw new BrowserError(`--browser ${browser}: no executable there; ${INSTALL_HINT}`, { code: 'BROWSER_NOT_FOUND' });
  }
  for (const name of ['PUPPETEER_EXECUTABLE_PATH', 'CHROME_PATH']) {
    const value = env[name];
    if (!value) continue;
    if (executable(value)) return value;
    throw new BrowserError(`${name}=${value}: no executable there; ${INSTALL_HINT}`, { code: 'BROWSER_NOT_FOUND' });
  }
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const name of BROWSER_NAMES) {
    for (const dir of dirs) {
      const file = path.join(dir, name);
      if (executable(file)) return file;
    }
  }
  throw new BrowserError(`--render needs Chromium or Chrome, and none was found (${BROWSER_NAMES.join(', ')} on the PATH); ${INSTALL_HINT}`, { code: 'BROWSER_NOT_FOUND' });
}

/**
 * Features of the headless browser that cost CPU on every page and do nothing
 * for a render (measured: bench/render-bench.js, BENCHMARKS.md):
 * - WebUIOmniboxPopup, WebUIOmniboxAimPopup, WebUIOmniboxFullPopup: each
 *   browser context (a headless window) pre-renders its address bar's popup
 *   in a renderer process of its own (chrome://omnibox-popup.top-chrome/);
 *   that renderer cost as much CPU as the page rendered.
 * - SpareRendererForSitePerProcess: a spare renderer process started ahead
 *   of each navigation, so that every page got a new process even in a
 *   reused tab.
 * - BackForwardCache: every page left was kept frozen in the cache, then
 *   evicted and destroyed (a render never goes back): about 1 ms of the
 *   browser's main thread a page, and the renderer's work to freeze it.
 * - RenderDocument: a new RenderFrameHost (browser side) and frame (renderer
 *   side) set up and torn down for every document a tab navigates to. Off,
 *   a tab reuses its frame host from page to page, as Chromium did before
 *   the feature: the page still gets a new document, window and JavaScript
 *   realm. About a sixth of the CPU of a page.
 * - site-per-process, IsolateOrigins (and --disable-site-isolation-trials):
 *   one process per site, frames of other sites in processes of their own.
 *   A render is of the site's own pages; its frames are intercepted like the
 *   page, in the same process.
 */
export const DISABLED_FEATURES = [
  'WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'WebUIOmniboxFullPopup', 'SpareRendererForSitePerProcess', 'BackForwardCache', 'RenderDocument', 'site-per-process', 'IsolateOrigins',
];

/**
 * Chromium's flags (besides those puppeteer adds, and --user-data-dir).
 * --no-sandbox only as root, where Chromium refuses to start with its sandbox.
 * @param {{ root?: boolean }} [options]
 */
export function launchFlags({ root = process.getuid?.() === 0 } = {}) {
  return [
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--disable-background-networking',
    '--disable-component-update',
    '--no-first-run',
    '--disable-site-isolation-trials',
    `--disable-features=${DISABLED_FEATURES.join(',')}`,
    ...(root ? ['--no-sandbox'] : []),
  ];
}

/**
 * The processes whose command line names `profile` (a browser's own
 * --user-data-dir, so only ours): what is left of a browser after a failed
 * launch or a crash. Chromium's zygote, renderer and GPU processes rewrite
 * their command line as one string of words (setproctitle): the argument is
 * looked for among the words too. Linux only (reads /proc); elsewhere none
 * are found.
 * @param {string} profile
 * @returns {number[]}
 */
export function processesUsing(profile) {
  /** @type {number[]} */
  const found = [];
  let entries;
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  const needle = `--user-data-dir=${profile}`;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1');
      if (cmdline.split('\0').includes(needle) || cmdline.split(/[\0 ]/).includes(needle)) found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/**
 * Kill what is left of a browser and wait until it is gone: a process sent
 * SIGKILL still runs until the kernel schedules its death, which on a loaded
 * machine can outlast the call (and a dying renderer can still write into
 * the profile about to be removed). Bounded by `limitMs`.
 * @param {string} profile
 * @param {number} [limitMs]
 * @returns {Promise<boolean>} whether none is left
 */
export async function killAndWait(profile, limitMs = 5000) {
  const until = performance.now() + limitMs;
  for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
    const left = processesUsing(profile); // one scan of /proc a pass (it blocks the event loop while it reads)
    if (left.length === 0) return true;
    if (performance.now() >= until) return false;
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await new Promise((resolve) => { setTimeout(resolve, pause); });
  }
}
