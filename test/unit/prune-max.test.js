// @ts-check
import { describe, expect, it } from 'vitest';
import { resolveCrawlOptions } from '../../lib/options/crawl-options.js';
import { pruneLimit } from '../../lib/recrawl/prior.js';

const roots = ['http://shop.test/'];

describe('--prune-max', () => {
  it.each([['3', 3], ['0', 0], ['10%', 10], ['2.5%', 2], ['100%', 100], ['0%', 0]])('takes %s (of 100 pages: at most %i removed)', (value, limit) => {
    const options = resolveCrawlOptions({ roots, out: 'out', pruneMax: value });
    expect(pruneLimit(options.pruneMax, 100)).toBe(limit);
  });

  it('counts a percentage in whole numbers, never one file short', () => {
    expect(pruneLimit('29%', 100)).toBe(29);
    for (const pages of [100, 200, 300, 700, 1000, 12345]) {
      for (let percent = 0; percent <= 100; percent++) expect(pruneLimit(`${percent}%`, pages)).toBe(Math.floor((percent * pages) / 100));
    }
    expect(pruneLimit('10.1%', 1000)).toBe(101);
    expect(pruneLimit('0.5%', 999)).toBe(4);
  });

  it('a config file may give a count as a number', () => {
    expect(resolveCrawlOptions({ roots, out: 'out', pruneMax: 5 }, { source: 'prerender.config.json' }).pruneMax).toBe('5');
    expect(() => resolveCrawlOptions({ roots, out: 'out', pruneMax: 1.5 }, { source: 'prerender.config.json' })).toThrow(/"pruneMax" must be a whole number of files, or a percentage up to 100%/);
    expect(() => resolveCrawlOptions({ roots, out: 'out', pruneMax: true }, { source: 'prerender.config.json' })).toThrow(/"pruneMax" must be a whole number of files, or a percentage up to 100%/);
  });

  it.each(['1.5', '150%', '100.5%', 'abc', '-1', '10 %'])('refuses %j with a line that says what it takes', (value) => {
    expect(() => resolveCrawlOptions({ roots, out: 'out', pruneMax: value })).toThrow(/--prune-max must be a whole number of files, or a percentage up to 100%/);
  });
});
