// @ts-check
import { describe, expect, it } from 'vitest';
import { count, formatSummary } from '../../lib/cli/report.js';

/** @param {Partial<import('../../lib/crawler/index.js').CrawlResult>} over */
const result = (over) => /** @type {import('../../lib/crawler/index.js').CrawlResult} */ ({
  out: '/out', manifest: '/out/prerender-manifest.json', pages: 10, assets: 0, failed: 0, warnings: 0, redirects: 0,
  notCrawled: 0, notCrawledSaturated: false, maxPages: 100000, requisitesNotFetched: 0,
  threads: { workers: 0, inWorkers: 0, inMain: 0, early: 0 }, interrupted: false, durationMs: 1000, failures: [], stale: 0,
  resumed: 0, pruneRefused: false, complete: true, tooDeep: 0, tooLong: 0, sitemapsCut: false, rootLost: false, kept: 0,
  churn: { new: 10, changed: 0, notModified: 0, sameBytes: 0, removed: 0, stale: 0, failed: 0, filesWritten: 10, bytesWritten: 1000 },
  ...over,
});

describe('the summary of a crawl', () => {
  it('a re-crawl that was not complete says why nothing was removed', () => {
    const text = formatSummary(result({ notCrawled: 3, complete: false, kept: 2, churn: { new: 0, changed: 1, notModified: 9, sameBytes: 0, removed: 0, stale: 0, failed: 0, filesWritten: 1, bytesWritten: 10 } }));
    expect(text).toMatch(/Nothing was removed, since this crawl was not complete \(--max-pages cut it short\): the files of 2 pages of the last crawl it did not reach, or that are gone, are kept/);
  });

  it('a re-crawl says it crawled its pages, not that it wrote them (the churn line counts the files); one that kept none says no file is kept', () => {
    const churn = { new: 0, changed: 0, notModified: 10, sameBytes: 0, removed: 0, stale: 0, failed: 0, filesWritten: 0, bytesWritten: 0 };
    const text = formatSummary(result({ churn }));
    expect(text).toMatch(/^Re-crawled 10 pages into \/out in 1\.0 s/);
    expect(text).toMatch(/0 files written/);
    expect(formatSummary(result({}))).toMatch(/^Wrote 10 pages to \/out/);
    expect(formatSummary(result({ churn, interrupted: true, complete: false }))).toMatch(/^Interrupted: re-crawled 10 pages[^]*not complete \(it was interrupted\): the next complete crawl removes the files of pages gone/);
  });

  it('a re-crawl that could fetch no page says so at once; one with a few stale pages does not', () => {
    const churn = { new: 0, changed: 0, notModified: 0, sameBytes: 0, removed: 0, stale: 10, failed: 0, filesWritten: 0, bytesWritten: 0 };
    const down = formatSummary(result({ churn, stale: 10 }));
    expect(down.split('\n')[1]).toBe('No page could be fetched: every file is the last crawl\'s, kept stale (see the warnings below)');
    const some = formatSummary(result({ churn: { ...churn, stale: 2, notModified: 8 }, stale: 2, complete: false }));
    expect(some).not.toMatch(/No page could be fetched/);
    expect(some).toMatch(/2 pages were kept stale/);
  });

  it('a resumed crawl says so', () => {
    expect(formatSummary(result({ resumed: 7 }))).toMatch(/Resumed the crawl killed or interrupted before: 7 pages taken from its journal, not fetched again/);
    expect(formatSummary(result({}))).not.toMatch(/Resumed/);
  });

  it('a --max-depth cut is named; a broken link (404) alone is not a reason', () => {
    const churn = { new: 0, changed: 0, notModified: 5, sameBytes: 0, removed: 0, stale: 0, failed: 1, filesWritten: 0, bytesWritten: 0 };
    const failures = [{ url: 'http://s/x', status: 404, message: 'HTTP 404', referrers: ['http://s/'] }];
    expect(formatSummary(result({ tooDeep: 4, complete: false, failed: 1, failures, churn }))).toMatch(/not complete \(--max-depth cut it short\)/);
    expect(formatSummary(result({ failed: 1, failures, churn }))).not.toMatch(/Nothing was removed/);
  });

  it('each reason is named', () => {
    const churn = { new: 0, changed: 0, notModified: 5, sameBytes: 0, removed: 0, stale: 1, failed: 1, filesWritten: 0, bytesWritten: 0 };
    const text = formatSummary(result({ interrupted: true, complete: false, failed: 1, stale: 1, churn, failures: [{ url: 'http://s/x', message: 'HTTP 500', referrers: [] }] }));
    expect(text).toMatch(/not complete \(it was interrupted, 1 page failed, 1 page was kept stale\)/);
  });

  it('a first crawl with failures has nothing to remove, and does not say so', () => {
    const text = formatSummary(result({ failed: 1, failures: [{ url: 'http://s/x', message: 'HTTP 500', referrers: [] }] }));
    expect(text).not.toMatch(/Nothing was removed/);
  });

  it('a page past --render-memory is followed by what to try, once however many there are', () => {
    const failure = (/** @type {string} */ url) => ({ url, code: 'RENDER_MEMORY', message: 'the page took 530 MiB of memory, past --render-memory 512: its renderer was killed', referrers: [] });
    const text = formatSummary(result({ failed: 7, failures: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((p) => failure(`http://s/${p}`)) }));
    expect(text.match(/raise --render-memory if the site's pages need that much/g)).toHaveLength(1);
    expect(formatSummary(result({ failed: 1, failures: [{ url: 'http://s/x', code: 'RENDER_TIMEOUT', message: 'render timed out', referrers: [] }] }))).not.toMatch(/--render-memory/);
  });

  it('a refused removal says --prune-max, once', () => {
    const churn = { new: 0, changed: 0, notModified: 5, sameBytes: 0, removed: 0, stale: 0, failed: 0, filesWritten: 0, bytesWritten: 0 };
    const text = formatSummary(result({ pruneRefused: true, churn }));
    expect(text).toMatch(/not removed: more than --prune-max/);
    expect(text).not.toMatch(/Nothing was removed/);
  });
});

describe('count', () => {
  it('groups thousands as en-US does, without loading ICU for whole numbers', () => {
    for (const n of [0, 7, 999, 1000, 12_345, 999_999, 1_000_000, 123_456_789, -1234, Number.MAX_SAFE_INTEGER]) {
      expect(count(n)).toBe(n.toLocaleString('en-US'));
    }
    expect(count(1234.5)).toBe('1,234.5');
  });
});
