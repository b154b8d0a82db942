// @ts-check
/**
 * What the --render test files share: the browser found here, the SPA shop, and a crawl that checks that no process
 * of its browsers is left. In CI (CI=true) a missing browser fails; elsewhere the files are skipped.
 * Files whose tests are about pages, not the browser's life, share one running browser (--browser-endpoint): a launch costs
 * more CPU than their pages. After each of their tests, no context or tab of a crawl may be left in it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { Crawler } from '../../lib/crawler/index.js';
import { BROWSER_NAMES, findBrowser, isHeadlessShell, launchFlags, processesUsing } from '../../lib/render/browser.js';
import { startSpaShop } from '../../fixtures/spa-shop.js';
import { tempDirs } from '../crawl-helpers.js';

export const IN_CI = process.env.CI === 'true';
/** @returns {string | null} */
function installedBrowser() {
  try {
    return findBrowser({});
  } catch {
    return null;
  }
}
export const BROWSER = installedBrowser();
/** The full browser too, when a headless shell is the one found: users with only Debian's chromium run it. */
export const FULL_BROWSER = (() => {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const name of BROWSER_NAMES.filter((candidate) => !isHeadlessShell(candidate))) {
    for (const dir of dirs) if (existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
})();
export const describeRender = BROWSER || IN_CI ? describe : describe.skip;
if (!BROWSER && !IN_CI) console.warn('render tests skipped: no browser installed (apt-get install chromium-headless-shell chromium); in CI they run');

export const SLOW = 90_000;

/** @typedef {Awaited<ReturnType<typeof startSpaShop>>} SpaShop */

/**
 * A browser for a file's crawls to connect to, in a profile of its own; `left()` lists the contexts and tabs open in it.
 * @param {string} profile
 */
export async function startSharedBrowser(profile) {
  const { launch } = (await import('puppeteer-core')).default;
  const shell = isHeadlessShell(/** @type {string} */ (BROWSER));
  const browser = await launch({
    executablePath: /** @type {string} */ (BROWSER), headless: shell ? 'shell' : true, userDataDir: profile, waitForInitialPage: shell,
    args: [...launchFlags(), '--no-startup-window'], handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false,
  });
  // As lib/render/pool.js does: the headless shell's blank tab, opened whatever the flags, is closed.
  if (shell) for (const page of await browser.pages()) await page.close();
  const root = await browser.target().createCDPSession();
  return {
    browser,
    endpoint: browser.wsEndpoint(),
    async left() {
      const { browserContextIds } = await root.send('Target.getBrowserContexts');
      const { targetInfos } = await root.send('Target.getTargets');
      return { contexts: browserContextIds.length, tabs: targetInfos.filter((target) => target.type === 'page').map((target) => target.url) };
    },
  };
}

/**
 * One running browser for a describe block: started before its tests, found empty after each (every process closed
 * the contexts and tabs it opened there), closed after them. @returns {() => Awaited<ReturnType<typeof startSharedBrowser>>}
 */
export function useSharedBrowser() {
  /** @type {Awaited<ReturnType<typeof startSharedBrowser>> | null} */
  let shared = null;
  let profile = '';
  beforeAll(async () => {
    profile = await mkdtemp(path.join(os.tmpdir(), 'prerender-shared-browser-'));
    shared = await startSharedBrowser(profile);
  });
  afterEach(async () => {
    if (shared) expect(await shared.left(), 'left in the shared browser by the crawls').toEqual({ contexts: 0, tabs: [] });
  });
  afterAll(async () => {
    await shared?.browser.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });
  return () => /** @type {NonNullable<typeof shared>} */ (shared);
}

/**
 * The shop for a describe block's tests, started before them, and their crawls. Call inside describeRender.
 * @param {{ sharedBrowser?: boolean }} [options] sharedBrowser: every crawl renders in one browser started for the block
 */
export function useRenderShop({ sharedBrowser = false } = {}) {
  const dirs = tempDirs();
  const running = sharedBrowser ? useSharedBrowser() : null;
  const context = {
    /** @type {SpaShop} */
    shop: /** @type {any} */ (null),
    dirs,
    renderCrawl,
    /** The running browser of a block with sharedBrowser. */
    sharedBrowser: () => /** @type {NonNullable<typeof running>} */ (running)(),
    /** The browser option of a crawl made by hand: the shared browser's endpoint, or the browser found here. */
    browserOptions: () => (running ? { browserEndpoint: running().endpoint } : { browser: /** @type {string} */ (BROWSER ?? 'chromium') }),
    /** @param {string} out @param {string} file */
    read: (out, file) => readFile(path.join(out, file), 'utf8'),
  };
  beforeAll(async () => {
    context.shop = await startSpaShop();
  });
  afterAll(async () => {
    await context.shop?.close();
    await dirs.cleanup();
  });

  /**
   * A rendered crawl into a fresh directory; afterwards, no process of any of its browsers may be left.
   * @param {string[]} roots paths on the shop
   * @param {Record<string, unknown>} [options]
   * @param {(crawler: Crawler) => void} [hook]
   */
  async function renderCrawl(roots, options = {}, hook) {
    const out = await dirs.make('prerender-render-');
    const crawler = new Crawler({
      roots: roots.map((root) => context.shop.origin + root), include: ['/st/'], out, render: true,
      ...context.browserOptions(),
      retries: 0, renderConcurrency: 4, ...options,
    });
    /** @type {{ pid: number, profile: string }[]} */
    const browsers = [];
    /** @type {{ url: string, message: string, code?: string, status?: number }[]} */
    const failures = [];
    /** @type {{ url: string, code: string, message: string }[]} */
    const warnings = [];
    /** @type {any[]} */
    const rendered = [];
    crawler.on('browser', (event) => browsers.push(event));
    crawler.on('failure', (event) => failures.push(event));
    crawler.on('warning', (event) => warnings.push(event));
    crawler.on('rendered', (event) => rendered.push(event));
    hook?.(crawler);
    const result = await crawler.run();
    expect(browsers.length).toBeGreaterThan(0);
    for (const browser of browsers) {
      if (running) {
        expect(browser.profile, 'no browser of its own beside the shared one').toBe('');
        continue;
      }
      expect(processesUsing(browser.profile), `processes of the browser with profile ${browser.profile}`).toEqual([]);
      expect(existsSync(browser.profile), `profile ${browser.profile} removed`).toBe(false);
    }
    return { out, result, browsers, failures, warnings, rendered };
  }
  return context;
}

/** The processes with a word of their command line starting with needle. @param {string} needle */
export function processesWith(needle) {
  /** @type {number[]} */
  const found = [];
  for (const entry of readdirSafe('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Chromium's child processes rewrite their command line as one string of words.
      const cmdline = readFileSyncSafe(`/proc/${entry}/cmdline`);
      if (cmdline.split(/[\0 ]/).some((arg) => arg.startsWith(needle))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** @param {number} pid */
export function alive(pid) {
  try {
    const stat = readFileSyncSafe(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie is dead, waiting to be reaped
  } catch {
    return false;
  }
}

/** @param {string} dir */
function readdirSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** @param {string} file */
export function readFileSyncSafe(file) {
  return readFileSync(file, 'latin1');
}
