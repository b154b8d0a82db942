// @ts-check
import { FileRegistry } from '../naming.js';
import { isSitemapName } from '../sitemap-writer.js';
import { warn } from './context.js';

/**
 * Naming: every fetched page gets its file in URL order (so collisions
 * resolve the same way whatever the fetch order), then the name table that
 * rewriting reads: canonical URL -> file, redirects followed.
 *
 * @typedef {import('./context.js').CrawlRun} CrawlRun
 * @typedef {import('./records.js').PageRecord} PageRecord
 */

/**
 * The canonical order names are handed out in: shorter URL first, then byte
 * order (so `/` keeps `index.html` before `/index.html`). It depends on
 * nothing but the URLs, so one process and many workers name alike.
 * @param {PageRecord} a @param {PageRecord} b
 */
const byKey = (a, b) => a.key.length - b.key.length || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * @param {CrawlRun} run
 * @returns {Promise<PageRecord[]>} the fetched pages in URL order, named
 */
export async function assignNames(run) {
  const pages = (await run.records.list('done')).sort(byKey);
  const registry = new FileRegistry({ reserved: run.options.writeSitemap ? isSitemapName : undefined });
  const listening = run.listening('named');
  let count = 0;
  for (const record of pages) {
    // Let signals and timers in now and then: naming 200,000 pages takes a while.
    if (++count % 2000 === 0) await new Promise((resolve) => setImmediate(resolve));
    const wanted = /** @type {string} */ (record.wanted);
    const { file, collidedWith } = registry.claim(wanted, record.key);
    if (collidedWith) warn(run, record.key, 'NAME_COLLISION', `file name collision: "${wanted}" is taken by ${collidedWith}; written as "${file}"`);
    record.file = file;
    if (listening) run.emit('named', { url: record.key, file, wanted, status: record.status });
  }
  return pages;
}

/**
 * The read-only name table of phase two.
 * @param {PageRecord[]} pages named pages
 * @param {PageRecord[]} redirects redirect records
 * @param {number} [maxHops] redirects followed at most
 */
export function createNameTable(pages, redirects, maxHops = 10) {
  /** @type {Map<string, string>} */
  const files = new Map();
  for (const record of pages) if (record.file) files.set(record.key, record.file);
  /** @type {Map<string, string>} */
  const moved = new Map();
  for (const record of redirects) if (record.location) moved.set(record.key, record.location);
  return {
    /**
     * The file a URL's link leads to (following redirects), or null.
     * @param {string} key
     */
    fileOf(key) {
      let current = key;
      for (let hops = 0; hops <= maxHops; hops++) {
        const file = files.get(current);
        if (file !== undefined) return file;
        const next = moved.get(current);
        if (next === undefined) return null;
        current = next;
      }
      return null;
    },
    /** A page that could not be written: links to it stay live. @param {string} key */
    drop(key) {
      files.delete(key);
    },
  };
}
