// @ts-check
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startChangingSite } from '../fixtures/changing-site.js';
import { readManifest, tempDirs } from './crawl-helpers.js';
import { Crawler, crawl } from '../lib/index.js';

/**
 * Pages carried without a request follow the links the last run noted in OUT/.prerender/follow.bin, not their
 * stored scans: the same OUT either way, and the lists are set aside when the rules deciding links change.
 * The origin sends no validators; the clock is the crawl's `now` option.
 */

/** @type {Awaited<ReturnType<typeof startChangingSite>>} */
let site;
const dirs = tempDirs();
beforeAll(async () => {
  site = await startChangingSite({ products: 8 });
  site.setValidators('none');
});
afterAll(async () => {
  await site.close();
  await dirs.cleanup();
});

const T0 = Date.parse('2026-06-01T12:00:00Z');
const HOUR = 3_600_000;
const FRESH = { fresh: ['/p/', 'forever'] };

/** @param {string} out @param {number} now ms @param {Record<string, unknown>} [extra] */
const crawlAt = (out, now, extra = {}) => crawl({ roots: [site.root], exclude: ['/cart.asp'], out, retries: 0, threads: 1, now: () => now, ...FRESH, ...extra });

/** Two OUTs from one first crawl; the second without its follow lists. */
async function twoOuts() {
  const dir = await dirs.make();
  const out = path.join(dir, 'out');
  expect((await crawlAt(out, T0)).failed).toBe(0);
  const fromScans = path.join(dir, 'from-scans');
  await cp(out, fromScans, { recursive: true });
  await rm(path.join(fromScans, '.prerender', 'follow.bin'));
  return { out, fromScans };
}

/** The state's pages, and the manifest without its time and warnings. @param {string} out */
async function outputOf(out) {
  const manifest = await readManifest(out);
  delete manifest.generatedAt;
  delete manifest.warnings;
  const state = (await readFile(path.join(out, '.prerender', 'state.ndjson'), 'utf8')).split('\n').filter(Boolean).slice(1);
  return { manifest, state };
}

/** Zeros over one staged blob's bytes in OUT/.prerender/blobs.log (frame: 6-byte length, 32-byte sha256, bytes). @param {string} out @param {string} id */
async function damageBlob(out, id) {
  const file = path.join(out, '.prerender', 'blobs.log');
  const log = await readFile(file);
  const at = log.indexOf(Buffer.from(id, 'hex'));
  if (at < 6) throw new Error(`blob ${id} not found in the log`);
  log.subarray(at + 32, at + 32 + log.readUIntBE(at - 6, 6)).fill(0);
  await writeFile(file, log);
}

/** @param {string} out @param {string} url */
async function scanOf(out, url) {
  const lines = (await readFile(path.join(out, '.prerender', 'state.ndjson'), 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line));
  return lines.find((line) => line.url === url).scan;
}

describe('follow lists (OUT/.prerender/follow.bin)', () => {
  it('a --fresh re-crawl carries from the lists what it carries from the scans: the same manifest and state', async () => {
    const { out, fromScans } = await twoOuts();
    site.resetCounters();
    const listed = await crawlAt(out, T0 + HOUR);
    const scanned = await crawlAt(fromScans, T0 + HOUR);
    expect(listed.carried).toEqual({ fresh: 8, listed: 0, dated: 0 });
    expect(scanned.carried).toEqual(listed.carried);
    expect(site.log).toEqual(['/', '/']);
    expect(await outputOf(out)).toEqual(await outputOf(fromScans));
  });

  it('a carried page is followed without reading its stored scan; without the lists the scan is read, found damaged, and the page fetched', async () => {
    const { out, fromScans } = await twoOuts();
    const product = site.product(3);
    for (const dir of [out, fromScans]) await damageBlob(dir, await scanOf(dir, product));
    site.resetCounters();
    const listed = await crawlAt(out, T0 + HOUR);
    expect(listed.carried.fresh).toBe(8);
    expect(site.log).toEqual(['/']);
    expect((await readManifest(out)).warnings.map((/** @type {{ code: string }} */ warning) => warning.code)).not.toContain('STAGED_DAMAGED');
    site.resetCounters();
    const scanned = await crawlAt(fromScans, T0 + HOUR);
    expect(scanned.carried.fresh).toBe(7);
    expect(site.log).toEqual(['/', '/p/3.asp']);
    expect((await readManifest(fromScans)).warnings.map((/** @type {{ code: string }} */ warning) => warning.code)).toContain('STAGED_DAMAGED');
  });

  it('set aside for a caller listening to each admission: it hears each link decided from the scan', async () => {
    const { out } = await twoOuts();
    await damageBlob(out, await scanOf(out, site.product(3)));
    site.resetCounters();
    const crawler = new Crawler({ roots: [site.root], exclude: ['/cart.asp'], out, retries: 0, threads: 1, now: () => T0 + HOUR, ...FRESH });
    /** @type {string[]} */ const admitted = [];
    crawler.on('admit', (event) => { admitted.push(event.url); });
    const result = await crawler.run();
    expect(result.carried.fresh).toBe(7);
    expect(site.log).toEqual(['/', '/p/3.asp']);
    expect(admitted).toContain(site.product(8));
  });

  it('set aside when the scope changes: a product newly excluded is not followed from the lists of the page before it', async () => {
    const { out } = await twoOuts();
    site.resetCounters();
    const narrower = await crawlAt(out, T0 + HOUR, { exclude: ['/cart.asp', '/p/5.asp'], pruneMax: '100%' });
    expect(narrower.carried.fresh).toBe(7);
    expect(site.log).toEqual(['/']);
    const manifest = await readManifest(out);
    expect(manifest.pages.map((/** @type {{ url: string }} */ page) => page.url)).not.toContain(site.product(5));
  });
});
