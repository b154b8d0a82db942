// @ts-check
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startChangingSite } from '../fixtures/changing-site.js';
import { tempDirs } from './crawl-helpers.js';
import { runCli } from './helpers/cli.js';
import { crawl } from '../lib/index.js';

/**
 * Pages carried without a request because they are still fresh: --fresh
 * rules, the origin's Cache-Control (--honour-cache-control), and sitemap
 * <lastmod> dates no later than the stored copy. The origin sends no
 * validators; the clock is the crawl's `now` option, never a wait.
 */

/** @type {Awaited<ReturnType<typeof startChangingSite>>} */
let site;
const dirs = tempDirs();
const start = async () => {
  site = await startChangingSite({ products: 10 });
  site.setValidators('none');
};
beforeAll(start);
afterAll(async () => {
  await site.close();
  await dirs.cleanup();
});
afterEach(async () => {
  await site.close();
  await start();
});

const T0 = Date.parse('2026-06-01T12:00:00Z');
const HOUR = 3_600_000;

/**
 * @param {string} out
 * @param {number} now ms
 * @param {Record<string, unknown>} [extra]
 */
const crawlAt = (out, now, extra = {}) => crawl({ roots: [site.root], exclude: ['/cart.asp'], out, retries: 0, threads: 1, now: () => now, ...extra });

/** The paths the origin was asked for since its counters were reset, sorted. */
const asked = () => [...site.log].sort();

const products = (/** @type {number[]} */ numbers) => numbers.map((n) => `/p/${n}.asp`);

/** @param {string} out */
const firstCrawl = async (out, extra = {}) => {
  const first = await crawlAt(out, T0, extra);
  expect(first.failed).toBe(0);
  site.resetCounters();
};

describe('--fresh PATTERN DURATION', () => {
  it('keeps a matching page without a request while it is younger than the duration, then fetches it again', async () => {
    const out = path.join(await dirs.make(), 'out');
    const rules = { fresh: ['/p/', '6h'] };
    await firstCrawl(out, rules);
    site.change(4);
    const young = await crawlAt(out, T0 + 5 * HOUR, rules);
    expect(asked()).toEqual(['/']); // the home page matches no rule
    expect(young.carried).toEqual({ fresh: 10, listed: 0, dated: 0 });
    expect(young.fetched).toBe(1);
    expect(await readFile(path.join(out, 'p', 'p4.htm'), 'utf8')).toContain('version 1');
    // Still fetched at T0 (carried copies keep their time): expired 6 h after it.
    site.resetCounters();
    const old = await crawlAt(out, T0 + 6 * HOUR, rules);
    expect(asked()).toEqual(['/', ...products([1, 10, 2, 3, 4, 5, 6, 7, 8, 9])]);
    expect(old.carried.fresh).toBe(0);
    expect(old.churn.changed).toBe(1);
    expect(await readFile(path.join(out, 'p', 'p4.htm'), 'utf8')).toContain('version 2');
  });

  it('forever: a matching page is never asked for again; a new one linked from a fetched page is', async () => {
    const out = path.join(await dirs.make(), 'out');
    const rules = { fresh: ['/p/', 'forever'] };
    await firstCrawl(out, rules);
    site.add(11);
    const later = await crawlAt(out, T0 + 400 * 24 * HOUR, rules);
    expect(asked()).toEqual(['/', '/p/11.asp']);
    expect(later.carried.fresh).toBe(10);
    expect(later.churn).toMatchObject({ new: 1, removed: 0 });
  });

  it('the first matching rule wins; rules come from the config file too; a bad duration is a usage error', async () => {
    const dir = await dirs.make();
    const out = path.join(dir, 'out');
    await firstCrawl(out);
    await import('node:fs/promises').then((fs) => fs.writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ fresh: [['/p/1.asp', '1s'], ['/p/', 'forever']] })));
    const ran = await runCli(['crawl', site.root, '-x', '/cart.asp', '-o', out, '--json', '--retries', '0'], { cwd: dir });
    expect(ran.code).toBe(0);
    // The rule of /p/1.asp (1 s) decides it alone, and has expired; the others are fresh for good.
    expect(asked()).toEqual(['/', '/p/1.asp']);
    const bad = await runCli(['crawl', site.root, '-o', out, '--fresh', '/p/', '6 hours'], { cwd: path.dirname(dir) });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--fresh duration for "\/p\/" must be a whole number and a unit/);
  });
});

describe('preview and --why', () => {
  it('say which rule keeps a URL, and for how long', async () => {
    const dir = await dirs.make();
    const out = path.join(dir, 'out');
    await firstCrawl(out); // at T0, long before the clock of the runs below
    const why = (/** @type {string} */ duration) => runCli(['preview', site.root, '--why', site.product(3), '-o', out, '--fresh', '/p/', duration], { cwd: dir });
    const forever = await why('forever');
    expect(forever.code).toBe(0);
    expect(forever.stdout).toMatch(/fresh +--fresh \/p\/ forever: fresh for good; stored copy fetched 2026-06-01T12:00:00.000Z: the next crawl carries it without a request/);
    expect((await why('6h')).stdout).toMatch(/fresh +--fresh \/p\/ 6h: the stored copy, fetched 2026-06-01T12:00:00.000Z, is no longer fresh: the next crawl fetches it/);
    const plan = await runCli(['preview', site.root, '-x', '/cart.asp', '--json', '--fresh', '/p/', '6h'], { cwd: dir });
    const rows = plan.stdout.trim().split('\n').map((line) => JSON.parse(line)).filter((row) => row.type === 'url' && row.decision === 'crawl');
    expect(rows.find((row) => row.url === site.product(3)).fresh).toEqual({ pattern: '/p/', duration: '6h' });
    expect(rows.find((row) => row.url === site.product(3)).reason).toContain('--fresh /p/ 6h: a stored copy younger than 6h is carried, without a request');
    expect(rows.find((row) => row.url === site.root).fresh).toBeUndefined();
  });
});

describe('--honour-cache-control', () => {
  it('carries a page whose Cache-Control says immutable, or whose max-age has not passed; without the option, asks', async () => {
    const out = path.join(await dirs.make(), 'out');
    site.setCacheControl(2, 'public, max-age=31536000, immutable');
    site.setCacheControl(3, 'max-age=600');
    site.setCacheControl(4, 'max-age=600, no-cache');
    await firstCrawl(out);
    const honoured = await crawlAt(out, T0 + 5 * 60_000, { honourCacheControl: true });
    expect(asked()).not.toContain('/p/2.asp');
    expect(asked()).not.toContain('/p/3.asp');
    expect(asked()).toContain('/p/4.asp');
    expect(honoured.carried.fresh).toBe(2);
    site.resetCounters();
    await crawlAt(out, T0 + 20 * 60_000, { honourCacheControl: true });
    expect(asked()).not.toContain('/p/2.asp'); // immutable: for good
    expect(asked()).toContain('/p/3.asp'); // its 600 s have passed since T0
    site.resetCounters();
    await crawlAt(out, T0 + 25 * 60_000);
    expect(asked()).toContain('/p/2.asp');
  });
});

describe('sitemap <lastmod>', () => {
  it('a page dated no later than its stored copy is carried; one dated after it, or undated, is fetched', async () => {
    const out = path.join(await dirs.make(), 'out');
    const sitemap = { roots: [], sitemap: [`${site.origin}/sitemap.xml`] };
    await firstCrawl(out, sitemap);
    for (let n = 1; n <= 8; n++) site.setLastmod(n, '2026-05-20');
    site.setLastmod(5, '2026-06-01T12:30:00Z'); // after the first crawl (T0)
    site.change(5);
    const again = await crawlAt(out, T0 + HOUR, sitemap);
    expect(asked()).toEqual(['/', '/p/10.asp', '/p/5.asp', '/p/9.asp', '/sitemap.xml']);
    expect(again.carried).toEqual({ fresh: 0, listed: 0, dated: 7 });
    expect(again.churn.changed).toBe(1);
    // Product 5 was fetched at T0 + 1 h: from now on its date is before its copy.
    site.resetCounters();
    await crawlAt(out, T0 + 2 * HOUR, sitemap);
    expect(asked()).toEqual(['/', '/p/10.asp', '/p/9.asp', '/sitemap.xml']);
  });

  it('a sitemap without dates changes nothing', async () => {
    const out = path.join(await dirs.make(), 'out');
    const sitemap = { roots: [], sitemap: [`${site.origin}/sitemap.xml`] };
    await firstCrawl(out, sitemap);
    const again = await crawlAt(out, T0 + HOUR, sitemap);
    expect(again.carried.dated).toBe(0);
    expect(site.counters.requests).toBe(12);
  });
});
