// @ts-check
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { FileRegistry } from './file-names.js';
import { isSitemapName } from '../output/sitemap.js';
import { warn } from '../warnings.js';
import { eachRecord } from '../store/records.js';
import { pickEach, pickStored } from '../recrawl/prior.js';

/**
 * Every fetched page gets its file in URL order, so collisions resolve alike whatever the fetch order. Two URLs wanting
 * one file with the same bytes share it as an alias, split later if their output differs.
 * @typedef {import('../engine/run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 */

/** Shorter URL first, then byte order (`/` gets `index.html` before `/index.html`): one process and many workers name alike. @param {string} a @param {string} b */
export const byKey = (a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/** @typedef {{ keys: string[], files: Map<string, string>, aliasOf: Map<string, string>, stale: number, renamed: string[] }} Naming renamed: URLs not given the file they wanted */

/** One more says "more than that". */
export const RENAMED_LISTED = 100;

const registries = new WeakMap();

/** @param {CrawlRun} run @returns {Promise<Naming>} the fetched pages in URL order, named */
export async function assignNames(run) {
  // A store in Redis may list a key twice while it rehashes.
  const keys = (await run.records.keys('done')).sort(byKey).filter((key, i, sorted) => i === 0 || key !== sorted[i - 1]);
  const registry = newRegistry(run);
  /** @type {Naming} */ const naming = { keys, files: new Map(), aliasOf: new Map(), stale: 0, renamed: /** @type {string[]} */ ([]) };
  const listening = run.listening('named');
  /** @type {Map<string, string> | null} --dedupe: the first URL of each body */
  const firstOfBody = run.options.dedupe ? new Map() : null;
  let count = 0;
  for await (const [key, found] of eachRecord(run.records, keys)) {
    if (++count % 2000 === 0) await new Promise((resolve) => setImmediate(resolve));
    const record = /** @type {PageRecord} */ (found);
    if (record.stale) naming.stale++;
    const wanted = /** @type {string} */ (record.wanted);
    const owner = registry.ownerOf(wanted) ?? sameBodyAs(firstOfBody, record);
    const first = owner === undefined ? undefined : await run.records.get(owner);
    if (owner !== undefined && first && sameContent(first, record)) {
      record.file = /** @type {string} */ (naming.files.get(owner));
      record.aliasOf = owner;
      naming.aliasOf.set(key, owner);
    } else {
      const { file, collidedWith } = registry.claim(wanted, key);
      if (collidedWith) warn(run, key, 'NAME_COLLISION', `file name collision: "${wanted}" is taken by ${collidedWith}; written as "${file}"`);
      record.file = file === wanted ? wanted : file; // one string for both when they are the same (most pages)
      if (record.body !== undefined && !firstOfBody?.has(record.body)) firstOfBody?.set(record.body, key);
    }
    naming.files.set(key, record.file);
    if (record.file !== wanted && naming.renamed.length <= RENAMED_LISTED) naming.renamed.push(key);
    if (listening) run.emit('named', { url: key, file: record.file, wanted, status: record.status, aliasOf: record.aliasOf });
  }
  // The registry's tree is not kept: splitAlias rebuilds it.
  return naming;
}

/** @param {CrawlRun} run */
const newRegistry = (run) => new FileRegistry({ reserved: run.options.writeSitemap ? isSitemapName : undefined, foreign: foreignFiles(run) });

/**
 * A file no crawl wrote, such as a hand-made robots.txt, which no page may take over. Known only on a local disk,
 * with a state no killed run has left behind since. @param {CrawlRun} run @returns {((file: string, url: string) => boolean) | undefined}
 */
function foreignFiles(run) {
  const prior = run.prior;
  const out = /** @type {{ out?: string }} */ (/** @type {unknown} */ (run.target))?.out;
  if (!prior?.ownsTree || typeof out !== 'string') return undefined;
  /** @type {Set<string> | null} */ let known = null;
  const pages = prior.pages;
  return (file, url) => {
    // A URL the last crawl had, under the file it had then; a rename of it is checked like a new page.
    if (pickStored(pages, url, ['file'])?.file === file) return false;
    try {
      lstatSync(path.join(out, ...file.split('/')));
    } catch {
      return false;
    }
    if (!known) {
      known = new Set();
      for (const stored of pickEach(pages, ['file', 'oldFiles'])) {
        if (stored.file) known.add(stored.file);
        for (const old of stored.oldFiles ?? []) known.add(old);
      }
    }
    return !known.has(file);
  };
}

/** Its file and alias from the naming. @param {CrawlRun} run @param {Naming} naming @param {string} key */
export async function namedRecord(run, naming, key) {
  const record = await run.records.get(key);
  if (!record) throw new Error(`no record for ${key}`);
  record.file = naming.files.get(key);
  record.aliasOf = naming.aliasOf.get(key);
  return record;
}

/** --dedupe: the first URL whose body this page's is (`a=shortlog` and `a=shortlog;pg=0`). @param {Map<string, string> | null} firstOfBody @param {PageRecord} record */
function sameBodyAs(firstOfBody, record) {
  return record.body === undefined ? undefined : firstOfBody?.get(record.body);
}

/** @param {PageRecord} a @param {PageRecord} b */
function sameContent(a, b) {
  return a.body !== undefined && a.body === b.body && a.type === b.type && a.charset === b.charset && a.contentType === b.contentType;
}

/** An alias whose output differs from its first URL's, or whose first URL failed, gets a file of its own. @param {CrawlRun} run @param {Naming} naming @param {PageRecord} record */
export function splitAlias(run, naming, record) {
  let registry = registries.get(naming);
  if (!registry) {
    // The names handed out, claimed again in URL order: all distinct, so each keeps its file.
    registry = newRegistry(run);
    for (const key of naming.keys) {
      const file = naming.files.get(key);
      if (file !== undefined && !naming.aliasOf.has(key)) registry.claim(file, key);
    }
    registries.set(naming, registry);
  }
  const wanted = /** @type {string} */ (record.wanted);
  const { file, collidedWith } = registry.claim(wanted, record.key);
  if (collidedWith) warn(run, record.key, 'NAME_COLLISION', `file name collision: "${wanted}" is taken by ${collidedWith}; written as "${file}"`);
  record.file = file;
  record.aliasOf = undefined;
  naming.files.set(record.key, file);
  naming.aliasOf.delete(record.key);
  if (run.listening('named')) run.emit('named', { url: record.key, file, wanted, status: record.status });
}

/**
 * The read-only name table of phase two.
 * @param {Map<string, string>} files @param {Set<string>} dropped pages that failed while written @param {PageRecord[]} redirects @param {number} [maxHops]
 */
export function createNameTable(files, dropped, redirects, maxHops = 10) {
  /** @type {Map<string, string>} */ const moved = new Map();
  for (const record of redirects) if (record.location) moved.set(record.key, record.location);
  return {
    /** Through redirects; null if none. @param {string} key */
    fileOf(key) {
      let current = key;
      for (let hops = 0; hops <= maxHops; hops++) {
        const file = dropped.has(current) ? undefined : files.get(current);
        if (file !== undefined) return file;
        const next = moved.get(current);
        if (next === undefined) return null;
        current = next;
      }
      return null;
    },
  };
}
