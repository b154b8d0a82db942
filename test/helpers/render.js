// @ts-check
/**
 * What the --render test files share: the browser found here, the SPA shop, and a crawl that checks that no process
 * of its browsers is left. In CI (CI=true) a missing browser fails; elsewhere the files are skipped.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { Crawler } from '../../lib/crawler/index.js';
import { findBrowser, processesUsing } from '../../lib/render/browser.js';
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
export const describeRender = BROWSER || IN_CI ? describe : describe.skip;
if (!BROWSER && !IN_CI) console.warn('render tests skipped: no chromium installed (apt-get install chromium); in CI they run');

export const SLOW = 90_000;

/** @typedef {Awaited<ReturnType<typeof startSpaShop>>} SpaShop */

/** The shop for a describe block's tests, started before them, and their crawls. Call inside describeRender. */
export function useRenderShop() {
  const dirs = tempDirs();
  const context = {
    /** @type {SpaShop} */
    shop: /** @type {any} */ (null),
    dirs,
    renderCrawl,
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
      roots: roots.map((root) => context.shop.origin + root), include: ['/st/'], out, render: true, browser: /** @type {string} */ (BROWSER ?? 'chromium'),
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
