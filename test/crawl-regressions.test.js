// @ts-check
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { crawl } from '../lib/index.js';
import { scanHtml } from '../lib/html/scan.js';
import { normalizeUrl } from '../lib/url.js';
import { parseRetryAfter } from '../lib/load/retry.js';
import { useFixtureSite } from './helpers/fixtures.js';

/**
 * Failing tests for bugs found in lib/ (see the report). Each test states the
 * contract; when lib/ is fixed, move the test to the file of its concern.
 * (The first round of bugs was fixed in 666ca66 and moved to the main files.)
 */

/** @type {import('./helpers/fixtures.js').FixtureSite} */
let site;
const dirs = useFixtureSite((started) => { site = started; });

/**
 * @param {string} doc as a JS string; encoded as UTF-8 or latin1 bytes
 * @param {string} charset
 */
function resolved(doc, charset) {
  const bytes = Buffer.from(doc, charset === 'utf-8' ? 'utf8' : 'latin1');
  return scanHtml(bytes.toString('latin1'), charset).links.map((link) => normalizeUrl(link.value, 'http://h.example/d/'));
}

describe('bug (regression in 666ca66): a non-ASCII character written as an entity in a URL is mangled', () => {
  it.each([
    // [document, charset, where a browser goes]
    ['<a href="caf&eacute;.asp">', 'utf-8', 'http://h.example/d/caf%C3%A9.asp'],
    ['<a href="r&#233;sum&#xE9;.asp">', 'utf-8', 'http://h.example/d/r%C3%A9sum%C3%A9.asp'],
    ['<a href="x.asp?q=&euro;">', 'utf-8', 'http://h.example/d/x.asp?q=%E2%82%AC'],
    ['<a href="&#8364;.asp">', 'windows-1252', 'http://h.example/d/%E2%82%AC.asp'],
    ['<a href="x.asp?q=&euro;&eacute;">', 'windows-1252', 'http://h.example/d/x.asp?q=%80%E9'],
  ])('%s (%s) -> %s', (doc, charset, expected) => {
    expect(resolved(doc, charset)).toEqual([expected]);
  });

  it('end to end: the crawler requests what a browser would', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [site.url('/entities/index.asp'), site.url('/entities/w1252.asp')], out, retryDelay: 1, retries: 0 });
    expect(site.count('/entities/caf%C3%A9.asp')).toBe(1);
    expect(site.count('/entities/r%C3%A9sum%C3%A9.asp?q=%E2%82%AC')).toBe(1);
    expect(site.count('/entities/%E2%82%AC.asp?q=%80')).toBe(1);
    expect(result.failed).toBe(0);
  });
});

describe('regression: an invalid Retry-After reads as a date in 2000 and means "retry at once"', () => {
  // RFC 9110: delay-seconds is 1*DIGIT; anything else that is not an HTTP-date is no hint (use the backoff).
  it.each(['1.5', '2.5', '0.5', '-3'])('Retry-After: %s is no hint', (value) => {
    expect(parseRetryAfter(value, Date.parse('2026-01-01T00:00:00Z'))).toBeUndefined();
  });
});
