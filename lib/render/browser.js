// @ts-check
import { accessSync, closeSync, constants, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { BrowserError } from '../errors.js';

/** Finding the browser: never downloaded, the one given with --browser, PUPPETEER_EXECUTABLE_PATH or CHROME_PATH, else the first of BROWSER_NAMES on the PATH. */

/** The headless shells first: the same rendered pages as the full browser for a third to half less CPU (BENCHMARKS.md, Rendering). */
export const BROWSER_NAMES = ['chromium-headless-shell', 'chrome-headless-shell', 'chromium', 'chromium-browser', 'google-chrome'];

export const INSTALL_HINT = 'install one (Debian/Ubuntu: apt-get install chromium-headless-shell, or chromium) or point to it with --browser <path> or PUPPETEER_EXECUTABLE_PATH';

/** A headless shell's name (Chromium's old headless mode, a binary of its own), in a file name or a command line. */
const HEADLESS_SHELL = /headless[-_]shell/;

/** Whether `file` is a headless shell, which puppeteer launches as such. @param {string} file */
export const isHeadlessShell = (file) => HEADLESS_SHELL.test(path.basename(file));

/** --render without its driver, an optional peer dependency. */
export const DRIVER_HINT = '--render needs puppeteer-core, an optional dependency that is not installed: npm install puppeteer-core@24';

/** A crawl-only install leaves puppeteer-core out. @param {(specifier: string) => string} [resolve] import.meta.resolve, or a test's stand-in */
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

/** @param {{ browser?: string, env?: Record<string, string | undefined> }} options @returns {string} */
export function findBrowser({ browser, env = process.env }) {
  if (browser !== undefined) {
    if (executable(browser)) return unwrapped(browser);
    throw new BrowserError(`--browser ${browser}: no executable there; ${INSTALL_HINT}`, { code: 'BROWSER_NOT_FOUND' });
  }
  for (const name of ['PUPPETEER_EXECUTABLE_PATH', 'CHROME_PATH']) {
    const value = env[name];
    if (!value) continue;
    if (executable(value)) return unwrapped(value);
    throw new BrowserError(`${name}=${value}: no executable there; ${INSTALL_HINT}`, { code: 'BROWSER_NOT_FOUND' });
  }
  const dirs = (env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const name of BROWSER_NAMES) {
    for (const dir of dirs) {
      const file = path.join(dir, name);
      if (executable(file)) return unwrapped(file);
    }
  }
  throw new BrowserError(`--render needs Chromium or Chrome, and none was found (${BROWSER_NAMES.join(', ')} on the PATH); ${INSTALL_HINT}`, { code: 'BROWSER_NOT_FOUND' });
}

/**
 * The binary a wrapper script runs without exec (Debian's chromium-headless-shell): launched through the script, the pid
 * the pool kills would be the shell's. Only a headless shell's script whose one command is `/abs/path/same-name "$@"`; else
 * `file` itself. @param {string} file @returns {string}
 */
export function unwrapped(file) {
  if (!isHeadlessShell(file)) return file;
  const head = Buffer.alloc(4096);
  let text;
  try {
    const fd = openSync(file, 'r');
    try {
      text = head.toString('latin1', 0, readSync(fd, head, 0, head.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return file;
  }
  if (!text.startsWith('#!')) return file;
  const commands = text.split('\n').slice(1).map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));
  const target = commands.length === 1 ? /^(\/\S+)\s+"\$@"$/.exec(commands[0])?.[1] : undefined;
  return target && path.basename(target) === path.basename(file) && target !== file && executable(target) ? target : file;
}

/**
 * Headless features that cost CPU on every page and do nothing for a render (BENCHMARKS.md, Rendering, "Second pass" and "Third pass"):
 * the address bar popup each context pre-renders in a renderer of its own (WebUIOmnibox*); a spare renderer started ahead of each
 * navigation; the back-forward cache, which freezes and then evicts every page left; RenderDocument, which sets up a new frame host
 * per document (off, the page still gets a new document and realm); site isolation, since a render is of the site's own pages and
 * its frames are intercepted like the page.
 */
export const DISABLED_FEATURES = [
  'WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'WebUIOmniboxFullPopup', 'SpareRendererForSitePerProcess', 'BackForwardCache', 'RenderDocument', 'site-per-process', 'IsolateOrigins',
];

/** Besides puppeteer's and --user-data-dir; --no-sandbox only as root, where Chromium refuses its sandbox. @param {{ root?: boolean }} [options] */
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
 * What is left of a browser after a failed launch or a crash: processes whose command line names our `profile`, among its words too,
 * since Chromium's helpers rewrite it as one string (setproctitle). A headless shell's helpers do not carry --user-data-dir: they
 * are found as descendants of those, or, once their browser is gone, by its `session` (the browser's pid: puppeteer starts it with
 * setsid). Linux only. @param {string} profile @param {number} [session] @returns {number[]}
 */
export function processesUsing(profile, session) {
  /** @type {number[]} */ const found = [];
  let entries;
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  const needle = `--user-data-dir=${profile}`;
  /** @type {Map<number, number>} the parent of each other headless-shell process (pid -> ppid) */
  const parents = new Map();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1');
      if (cmdline.split('\0').includes(needle) || cmdline.split(/[\0 ]/).includes(needle)) found.push(Number(entry));
      else if (HEADLESS_SHELL.test(cmdline)) {
        const { ppid, sid } = statOf(entry);
        if (session !== undefined && sid === session) found.push(Number(entry));
        else parents.set(Number(entry), ppid);
      }
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  const ours = new Set(found);
  for (let grew = parents.size > 0; grew;) {
    grew = false;
    for (const [pid, ppid] of parents) {
      if (!ours.has(ppid)) continue;
      ours.add(pid);
      found.push(pid);
      parents.delete(pid);
      grew = true;
    }
  }
  return found;
}

/** The parent and session of /proc/`entry`, read after the last ')' since the command's name may hold any. @param {string} entry */
function statOf(entry) {
  const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(fields[1]), sid: Number(fields[3]) };
}

/**
 * A process sent SIGKILL runs until the kernel schedules its death, which on a loaded machine can outlast the call, a dying
 * renderer still writing into the profile. Bounded by `limitMs`. `session`: the browser's pid, as for processesUsing.
 * @param {string} profile @param {number} [limitMs] @param {number} [session] @returns {Promise<boolean>} none left
 */
export async function killAndWait(profile, limitMs = 5000, session) {
  const until = performance.now() + limitMs;
  for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
    const left = processesUsing(profile, session); // one scan of /proc a pass (it blocks the event loop while it reads)
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
