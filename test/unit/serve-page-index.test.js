// @ts-check
import { describe, expect, it } from 'vitest';
import { PageIndex } from '../../lib/serve/page-index.js';

describe('PageIndex: the manifest pages, packed', () => {
  it('gives back what was put in, and knows which pages have slots', () => {
    const index = new PageIndex();
    const slots = [
      { sku: 'SKU-1', offset: 10, length: 33 },
      { sku: 'ü&"<> x', offset: 4_000_000_000, length: 40 },
    ];
    index.set('st/a.htm', 'text/html; charset=utf-8', 15_000, slots, true);
    index.set('b.html', null, null, [], true);
    index.set('c.html', 'text/html', 10, [], false); // malformed slot list: scanned when loaded
    for (let i = 0; i < 5000; i++) index.set(`p/${i}.htm`, 'text/html; charset=utf-8', i, [{ sku: `S${i}`, offset: i, length: 30 }], true);
    index.trim();
    expect(index.size).toBe(5003);
    expect(index.fillableCount).toBe(5002);
    expect(index.get('st/a.htm')).toMatchObject({ key: 'st/a.htm', contentType: 'text/html; charset=utf-8', bytes: 15_000, slots, slotCount: 2, slotsValid: true });
    expect(index.get('b.html')).toMatchObject({ contentType: null, bytes: null, slots: [], slotsValid: true });
    expect(index.fillable('b.html')).toBeUndefined();
    expect(index.fillable('c.html')).toMatchObject({ slotsValid: false, slots: [] });
    expect(index.fillable('p/4999.htm')?.slots).toEqual([{ sku: 'S4999', offset: 4999, length: 30 }]);
    expect(index.contentType('b.html')).toBe(null);
    expect(index.contentType('nope')).toBe(undefined);
    expect(index.get('nope')).toBeUndefined();
    // off the JS heap, about the size of the records
    expect(index.recordBytes).toBeLessThan(5003 * 40);
  });

  it('replacing a page keeps the count of pages with slots right; a slot that does not fit marks the list malformed', () => {
    const index = new PageIndex();
    index.set('a', null, null, [{ sku: 'X', offset: 0, length: 5 }], true);
    index.set('a', null, null, [], true);
    expect(index.fillableCount).toBe(0);
    index.set('big', null, null, [{ sku: 'x'.repeat(70_000), offset: 0, length: 5 }], true);
    expect(index.fillable('big')).toMatchObject({ slotsValid: false, slots: [] });
  });
});
