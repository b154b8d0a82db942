// @ts-check
import { FileRegistry } from '../naming.js';
import { isSitemapName } from '../sitemap-writer.js';
import { warn } from './context.js';

/**
 * Naming: every fetched page gets its file in URL order (so collisions
 * resolve the same way whatever the fetch order), then the name table that
 * rewriting reads: canonical URL -> file, redirects followed. Two URLs that
 * want the same file and fetched the same bytes ("/" and "/index.html")
 * share it: the later one is an alias of the first, and links to either lead
 * to the one file (finalize checks that their output is the same too, and
 * splits them apart when it is not).
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

/** The registries of runs, for splitting aliases apart in phase two. */
const registries = new WeakMap();

/**
 * @param {CrawlRun} run
 * @returns {Promise<PageRecord[]>} the fetched pages in URL order, named
 */
export async function assignNames(run) {
  const pages = (await run.records.list('done')).sort(byKey);
  const registry = new FileRegistry({ reserved: run.options.writeSitemap ? isSitemapName : undefined });
  registries.set(run, registry);
  /** @type {Map<string, PageRecord>} */
  const owners = new Map();
  const listening = run.listening('named');
  let count = 0;
  for (const record of pages) {
    // Let signals and timers in now and then: naming 200,000 pages takes a while.
    if (++count % 2000 === 0) await new Promise((resolve) => setImmediate(resolve));
    const wanted = /** @type {string} */ (record.wanted);
    const owner = registry.ownerOf(wanted);
    const first = owner === undefined ? undefined : owners.get(owner);
    if (first && sameContent(first, record)) {
      record.file = first.file;
      record.aliasOf = first.key;
    } else {
      record.aliasOf = undefined;
      const { file, collidedWith } = registry.claim(wanted, record.key);
      if (collidedWith) warn(run, record.key, 'NAME_COLLISION', `file name collision: "${wanted}" is taken by ${collidedWith}; written as "${file}"`);
      record.file = file === wanted ? wanted : file; // one string for both when they are the same (most pages)
      owners.set(record.key, record);
    }
    if (listening) run.emit('named', { url: record.key, file: record.file, wanted, status: record.status, aliasOf: record.aliasOf });
  }
  return pages;
}

/**
 * Fetched the same bytes, to be read the same way.
 * @param {PageRecord} a
 * @param {PageRecord} b
 */
function sameContent(a, b) {
  return a.body !== undefined && a.body === b.body && a.type === b.type && a.charset === b.charset && a.contentType === b.contentType;
}

/**
 * An alias whose output turned out not to be its first URL's (links that
 * resolve differently from its URL), or whose first URL failed: it gets a
 * file of its own, as any collision does.
 * @param {CrawlRun} run
 * @param {PageRecord} record
 */
export function splitAlias(run, record) {
  const registry = registries.get(run);
  if (!registry) throw new Error('splitAlias before assignNames');
  const wanted = /** @type {string} */ (record.wanted);
  const { file, collidedWith } = registry.claim(wanted, record.key);
  if (collidedWith) warn(run, record.key, 'NAME_COLLISION', `file name collision: "${wanted}" is taken by ${collidedWith}; written as "${file}"`);
  record.file = file;
  record.aliasOf = undefined;
  if (run.listening('named')) run.emit('named', { url: record.key, file, wanted, status: record.status });
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
  };
}
