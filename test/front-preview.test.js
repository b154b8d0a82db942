// @ts-check
/**
 * A preview as a user makes one: `prerender serve out --origin http://shop`
 * opened in Debian's chromium, browsing from the catalogue to a product
 * (both from the tree), adding it to the cart and reaching the cart and the
 * checkout (both from the shop, its cookie kept by the browser).
 * Skipped only outside CI when chromium is absent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBrowser, launchFlags } from '../lib/render/browser.js';
import { startShop } from '../fixtures/shop.js';
import { crawlShopForFront, FRONT_PRICES } from './helpers/front.js';
import { startCli, until } from './helpers/processes.js';

const IN_CI = process.env.CI === 'true';
/** @returns {string | null} */
function installedBrowser() {
  try {
    return findBrowser({});
  } catch {
    return null;
  }
}
const BROWSER = installedBrowser();
const describePreview = BROWSER || IN_CI ? describe : describe.skip;
if (!BROWSER && !IN_CI) console.warn('front preview test skipped: no chromium installed (apt-get install chromium); in CI it runs');

describePreview('a preview through prerender serve --origin, in chromium', () => {
  /** @type {string} */ let dir;
  /** @type {Awaited<ReturnType<typeof startShop>>} */ let shop;
  /** @type {ReturnType<typeof startCli> | undefined} */ let front;
  /** @type {import('puppeteer-core').Browser | undefined} */ let browser;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-front-preview-'));
    shop = await startShop({ products: 5 });
    await crawlShopForFront(shop, path.join(dir, 'out'));
    fs.writeFileSync(path.join(dir, 'prices.json'), JSON.stringify(FRONT_PRICES));
  });

  afterAll(async () => {
    await browser?.close();
    if (front) {
      front.child.kill('SIGTERM');
      await front.done;
    }
    await shop?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('browses to a product, adds it to the cart and reaches the cart page', async () => {
    front = startCli(['serve', path.join(dir, 'out'), '--origin', shop.origin, '--port', '0', '--prices', path.join(dir, 'prices.json')], { limitMs: 90_000 });
    let stdout = '';
    front.child.stdout?.on('data', (chunk) => (stdout += chunk));
    await until(() => /listening on (http:\/\/\S+)/.test(stdout) || front?.child.exitCode !== null, 30_000);
    const base = /** @type {string} */ (/listening on (http:\/\/\S+)/.exec(stdout)?.[1]);

    browser = await puppeteer.launch({
      executablePath: /** @type {string} */ (BROWSER ?? findBrowser({})),
      args: launchFlags(),
      userDataDir: path.join(dir, 'profile'),
      headless: true,
    });
    const page = await browser.newPage();
    const from = shop.requests.length;
    // What the pages asked the shop for (the browser's own /favicon.ico is the shop's too).
    const asked = () => shop.requests.slice(from).filter((r) => r.target !== '/favicon.ico').map((r) => `${r.method} ${r.target}`);
    // The catalogue at the shop's own URL: from the tree.
    await page.goto(`${base}/st/dir.asp`, { waitUntil: 'load' });
    expect(await page.title()).toBe('Catalogue');
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('a[href="product2.htm"]')]);
    expect(new URL(page.url()).pathname).toBe('/st/product2.htm');
    expect(await page.$eval('[data-price-sku]', (el) => el.textContent)).toBe('$2.50');
    expect(asked()).toEqual([]);

    // Add to cart: the shop's, through the front; its cookie is the browser's, on the front's host.
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('a[href^="cart.asp?add=2"]')]);
    expect(await page.$eval('#cart', (el) => el.textContent)).toBe('Product 2');
    expect((await browser.cookies()).map((c) => `${c.name}=${c.value}`)).toContain('cart=2');
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('a[href="/st/checkout.asp"]')]);
    expect(await page.$eval('body', (el) => el.textContent)).toContain('not signed in, 1 item(s)');
    expect(asked()).toEqual(['GET /st/cart.asp?add=2&qty=1', 'GET /st/checkout.asp']);
  });
});
