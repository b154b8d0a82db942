// @ts-check
/**
 * The local frontier keeps each URL it adds as a string of its own. Keys come
 * out of the links text of the page that named them (String#slice: V8 makes a
 * view into that text), and a key kept for the whole crawl must not keep its
 * page's text alive with it.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MemoryFrontier } from '../../lib/store/frontier.js';
import { MemoryRecordStore } from '../../lib/store/records.js';

v8.setFlagsFromString('--expose-gc');
const gc = /** @type {() => void} */ (vm.runInNewContext('gc'));
v8.setFlagsFromString('--no-expose-gc');

const MB = 1024 * 1024;

describe('frontier keys', () => {
  it('an added key and its record do not keep the text the key was sliced from', async () => {
    const frontier = new MemoryFrontier({ maxPages: 10 });
    const records = new MemoryRecordStore();
    gc();
    const before = process.memoryUsage().heapUsed;
    // 32 MB of page text, then a link: the key is a slice of it, as parseLinkLines makes it
    let text = `${'x'.repeat(32 * MB)}\n0http://shop.test/st/product1.htm\n`;
    const at = text.indexOf('\n') + 2;
    const items = [{ key: text.slice(at, text.indexOf('\n', at)), kind: /** @type {const} */ ('navigation'), referrer: null }];
    text = '';
    const outcomes = await frontier.add(items);
    await records.admit(items, outcomes);
    expect(outcomes).toEqual(['added']);
    items.length = 0;
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(held).toBeLessThan(4 * MB);
    // and the key is still there, whole
    expect(await frontier.take(1)).toEqual(['http://shop.test/st/product1.htm']);
    expect((await records.get('http://shop.test/st/product1.htm'))?.key).toBe('http://shop.test/st/product1.htm');
  });
});
