// @ts-check
import { describe, expect, it } from 'vitest';
import { combineEtag, filledEtag } from '../../lib/serve/etag.js';
import { PriceEncoder } from '../../lib/serve/escape.js';

describe('filledEtag', () => {
  const FALLBACK = '\u0000fallback\u0000';
  it('is weak, stable, and changes with the page or any price', () => {
    const base = filledEtag('page1', ['$1.99', '$2.49'], FALLBACK);
    expect(base).toMatch(/^W\/"page1-[0-9a-z]+"$/);
    expect(filledEtag('page1', ['$1.99', '$2.49'], FALLBACK)).toBe(base);
    const others = [
      filledEtag('page2', ['$1.99', '$2.49'], FALLBACK),
      filledEtag('page1', ['$1.99', '$2.48'], FALLBACK),
      filledEtag('page1', ['$2.49', '$1.99'], FALLBACK),
      filledEtag('page1', ['$1.99$', '2.49'], FALLBACK),
      filledEtag('page1', ['$1.99', null], FALLBACK),
      filledEtag('page1', ['$1.99', ''], FALLBACK),
      filledEtag('page1', ['$1.99'], FALLBACK),
      filledEtag('page1', ['$1.99', '$2.49', ''], FALLBACK),
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
  });

  it('spreads: 100,000 price pairs give 100,000 tags', () => {
    const tags = new Set();
    for (let i = 0; i < 100_000; i++) tags.add(filledEtag('p', [`$${i}.99`, `$${i % 97}.49`], FALLBACK));
    expect(tags.size).toBe(100_000);
  });

  it('the server\'s way (hashes remembered per price text, combined per request) gives the same tags', () => {
    const encoder = new PriceEncoder();
    for (const values of [['$1.99', '$2.49'], ['$2.49', '$1.99'], ['ü&<>"', ''], []]) {
      expect(combineEtag('pg', values.map((v) => encoder.entry(v, false).hash))).toBe(filledEtag('pg', values, FALLBACK));
      expect(encoder.entry(values[0] ?? 'x', true).buf.toString('latin1')).not.toMatch(/[^\x00-\x7f]/);
    }
  });
});
