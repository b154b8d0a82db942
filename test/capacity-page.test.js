// @ts-check
/**
 * The capacity page (--html) as a user sees it: opened from a file in
 * Chromium with every network request refused, its charts drawn, nothing
 * fetched.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHtml } from '../lib/capacity/html.js';
import { findBrowser, launchFlags } from '../lib/render/browser.js';

/** @param {number} shoppers @param {number} rps @param {number} p95 @param {string[]} [over] */
const step = (shoppers, rps, p95, over = []) => ({
  shoppers, offeredRps: rps, capped: false, rps, p50Ms: p95 / 3, p95Ms: p95, p99Ms: p95 * 1.2, atTargetMs: p95, errors: 0, errorKinds: {}, cpuPercent: rps / 10, cpuMs: rps * 10, over,
});
/** @param {number} ms */
const figures = (ms) => ({ requests: 500, rps: 400, p50Ms: 2, p95Ms: 5, p99Ms: 7, atTargetMs: 5, errors: 0, errorKinds: {}, cpuMs: ms * 500, cpuMsPerRequest: ms, cpuPercent: 20, wallMs: 1250, stopped: 'done' });

/** A result as measureCapacity gives it, with a <script> in a name: the page must show it as text. */
const RESULT = /** @type {import('../lib/capacity/measure.js').CapacityResult} */ (/** @type {unknown} */ ({
  version: 1, generatedAt: '2026-12-04T10:00:00.000Z', out: '/tmp/out',
  profile: { name: 'shop <script>alert(1)</script>', thinkTimeMs: 1000 },
  latencyTarget: { percentile: 95, ms: 500 }, stepDurationMs: 10_000, operationDurationMs: 5000, maxRps: 1000,
  machine: { cores: 2, cpu: 'Test CPU', loadAverage: [1, 1, 1] }, cpuMhz: null,
  operations: [
    { name: 'browse category', weight: 30, tier: 'static', dynamic: figures(2.4), static: figures(0.2) },
    { name: 'view product', weight: 60, tier: 'static', dynamic: figures(2.5), static: figures(0.2) },
    { name: 'add to cart', weight: 6, tier: 'dynamic', dynamic: figures(2.3), static: null },
    { name: 'checkout', weight: 4, tier: 'dynamic', dynamic: figures(2.3), static: null },
  ],
  tiers: {
    static: { server: 'http://127.0.0.1:1', serverKind: 'prerender serve', cpuKnown: true, cpuMsPerRequest: 0.2, capacityShoppers: 80, capacityReached: false, steps: [step(10, 9, 3), step(20, 18, 4), step(40, 36, 5), step(80, 72, 6)] },
    dynamic: { server: 'http://127.0.0.1:2', serverKind: 'origin', cpuKnown: true, cpuMsPerRequest: 2.46, capacityShoppers: 40, capacityReached: true, steps: [step(10, 10, 8), step(20, 20, 30), step(40, 39, 200), step(80, 52, 1400, ['p95 1400 ms > 500 ms'])] },
  },
  summary: {
    serverCores: 2, targetShoppers: 5000,
    cpuMsPerShopperSecond: { before: 2.46, after: 0.43, static: 0.18, dynamic: 0.25 },
    shoppersPerServer: { before: 813, after: 4651 }, servers: { before: 7, after: 3, afterStatic: 1, afterDynamic: 2 },
  },
  notes: [], stoppedBecause: null, interrupted: false, ok: false,
}));

describe('the capacity page', () => {
  let dir = '';
  /** @type {import('puppeteer-core').Browser} */
  let browser;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-capacity-page-'));
    browser = await puppeteer.launch({ executablePath: findBrowser({}), args: launchFlags(), userDataDir: path.join(dir, 'profile') });
  });
  afterAll(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('opens offline: every chart drawn, nothing fetched, names shown as text', async () => {
    const file = path.join(dir, 'report.html');
    await writeFile(file, renderHtml(RESULT));
    const page = await browser.newPage();
    /** @type {string[]} */
    const fetched = [];
    await page.setRequestInterception(true);
    page.on('request', (request) => {
      if (request.url() === pathToFileURL(file).href) return void request.continue();
      fetched.push(request.url());
      void request.abort();
    });
    /** @type {string[]} */
    const dialogs = [];
    page.on('dialog', (dialog) => { dialogs.push(dialog.message()); void dialog.dismiss(); });
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    const charts = await page.$$eval('svg', (svgs) => svgs.map((svg) => {
      const box = svg.getBoundingClientRect();
      return { title: svg.getAttribute('aria-label'), width: box.width, height: box.height, marks: svg.querySelectorAll('polyline, rect, circle').length };
    }));
    expect(fetched).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(charts.map((c) => c.title)).toEqual(['Operations per second', 'p95 latency and the target', 'CPU cost per operation', 'Shoppers per server']);
    for (const chart of charts) {
      expect(chart.width).toBeGreaterThan(300);
      expect(chart.height).toBeGreaterThan(150);
      expect(chart.marks).toBeGreaterThan(2);
    }
    const text = await page.$eval('body', (body) => body.innerText);
    expect(text).toContain('shop <script>alert(1)</script>');
    expect(text).toMatch(/Shoppers per server, after\s+4,651/);
    expect(text).toMatch(/over: p95 1400 ms > 500 ms/);
    await page.close();
  });
});
