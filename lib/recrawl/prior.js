// @ts-check
import { HttpStatusError, PageTooLargeError, isRetryable } from '../errors.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { readManifest } from '../output/manifest/read.js';
import { StateVersionError, readState } from './state.js';
import { StoredPages } from '../store/stored-pages.js';
import { followToken } from './follow-lists.js';

/**
 * What a re-crawl knows from the run before it (OUT/.prerender/state.ndjson): validators, unchanged pages' blobs, files written.
 * @typedef {import('./state.js').StoredPage} StoredPage @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {{ get(url: string): StoredPage | undefined, has(url: string): boolean, readonly size: number, values(): Iterable<StoredPage>,
 *   pick?: (url: string, names: readonly (keyof StoredPage)[]) => Partial<StoredPage> | undefined,
 *   picks?: (names: readonly (keyof StoredPage)[]) => Iterable<Partial<StoredPage> & { url: string }> }} PageLookup
 *   pick, picks: some fields without decoding the rest
 * @typedef {{ complete: boolean, pages: PageLookup, reuse: boolean, output: string, reuseOutput: boolean, ownsTree?: boolean,
 *   sameIgnore: boolean, naming?: string, renamed?: boolean, precompressed: string[], follow?: { token: string, lines: string[] } | null }} Prior
 *   reuse: false with --full; reuseOutput: `output`, what decided the bytes written, is unchanged, so files may stay;
 *   ownsTree: no run was killed since, so a file the state does not list is no crawl's;
 *   renamed: the naming key changed, so no request is conditional (a 304 would keep an old name);
 *   precompressed: the formats every page was tried in; others are made now for kept files;
 *   follow: what finds the state's follow lists (follow-lists.js), its lines' URLs in order
 */

/**
 * @param {string} stateDir @param {{ full: boolean, ignore: string[], pages?: import('../store/stored-pages.js').StoredPages<StoredPage>, roots?: string[] }} options
 *   roots: this run's roots and sitemaps; a manifest of other origins is not this crawl's @returns {Promise<Prior | null>}
 */
export async function loadPrior(stateDir, { full, ignore, pages, roots = [] }) {
  let state;
  try {
    state = await readState(stateDir, pages);
  } catch (error) {
    // --full starts over, its pages in a store of their own: the state's may be half read.
    if (full && error instanceof StateVersionError) return priorOfManifest(path.dirname(stateDir), new StoredPages(), roots);
    throw error;
  }
  if (!state) return priorOfManifest(path.dirname(stateDir), pages ?? new StoredPages(), roots);
  const { output, precompressed } = outputOf(state.header);
  return {
    complete: state.header.complete, pages: state.pages, reuse: !full, output, reuseOutput: false,
    sameIgnore: JSON.stringify(state.header.ignore ?? []) === JSON.stringify(ignore), naming: state.header.naming, precompressed,
    follow: { token: followToken(state.header.finishedAt, state.urls.length), lines: state.urls },
  };
}

/**
 * Without a readable state, the last manifest still says which files a crawl wrote; every page is fetched in full.
 * @param {string} out @param {import('../store/stored-pages.js').StoredPages<StoredPage>} pages @param {string[]} roots @returns {Promise<Prior | null>}
 */
async function priorOfManifest(out, pages, roots) {
  let manifest;
  try {
    manifest = await readManifest(out);
  } catch {
    return null; // none, or not one this version reads: a first crawl
  }
  // A tree of another site (no origin in common) is not this crawl's to prune; nor any with only --urls.
  const originOf = (/** @type {unknown} */ url) => { try { return new URL(String(url)).origin; } catch { return null; } };
  const origins = new Set(roots.map(originOf));
  const theirs = [...(Array.isArray(manifest.roots) ? manifest.roots : []), ...manifest.pages.map((page) => page?.url)];
  if (!theirs.some((url) => origins.has(originOf(url)))) return null;
  for (const page of manifest.pages) {
    // Entries a crawl would not write (an edited manifest) are passed over.
    if (typeof page?.url !== 'string' || !/^https?:\/\//.test(page.url) || typeof page.status !== 'number' || typeof page.file !== 'string') continue;
    if (page.file.startsWith('/') || page.file.split('/').some((part) => part === '' || part === '.' || part === '..')) continue;
    const compressed = ['gzip', 'br'].filter((format) => existsSync(path.join(out, ...`${page.file}${format === 'gzip' ? '.gz' : '.br'}`.split('/'))));
    pages.set(page.url, {
      url: page.url, state: 'done', status: page.status, contentType: page.contentType, file: page.file, bytes: page.bytes, sha256: page.sha256,
      etag: page.etag, lastModified: page.lastModified,
      ...(Array.isArray(page.placeholders) && page.placeholders.length > 0 ? { placeholders: page.placeholders } : {}),
      ...(compressed.length > 0 ? { compressed } : {}),
    });
  }
  if (pages.size === 0) return null;
  return { complete: !manifest.interrupted, pages, reuse: false, output: '', reuseOutput: false, sameIgnore: false, precompressed: [] };
}

/** Older states had --precompress in the output key: taken out, so toggling it rewrites nothing. @param {import('./state.js').StateHeader} header */
export function outputOf(header) {
  const output = header.output ?? '';
  if (header.precompressed !== undefined) return { output, precompressed: header.precompressed };
  try {
    const parts = JSON.parse(output);
    if (Array.isArray(parts) && parts.length === 8 && Array.isArray(parts[5])) return { output: JSON.stringify(parts.toSpliced(5, 1)), precompressed: [] };
  } catch {
    // not a key this version wrote: compared as it is (and differs)
  }
  return { output, precompressed: [] };
}

/** What besides a page's answer decides its file: when it changes, a 304 would keep a stale name. @param {import('../options/crawl-options.js').ResolvedCrawlOptions['name']} rules @param {Iterable<string>} origins */
export function namingKey(rules, origins) {
  return JSON.stringify([rules, [...new Set(origins)].sort()]);
}

/** Only when the stored copy is reusable: a 304 needs it. @param {Prior | null} prior @param {StoredPage | null} stored @returns {Record<string, string> | undefined} */
export function conditionalHeaders(prior, stored) {
  if (!prior?.reuse || prior.renamed || !stored || !(stored.etag || stored.lastModified)) return undefined;
  /** @type {Record<string, string>} */ const headers = {};
  if (stored.etag) headers['if-none-match'] = stored.etag;
  if (stored.lastModified) headers['if-modified-since'] = stored.lastModified;
  return headers;
}

/** @param {PageLookup} pages @param {string} url @param {readonly (keyof StoredPage)[]} names @returns {Partial<StoredPage> | undefined} */
export function pickStored(pages, url, names) {
  return pages.pick ? pages.pick(url, names) : pages.get(url);
}

/** @param {PageLookup} pages @param {readonly (keyof StoredPage)[]} names @returns {Iterable<Partial<StoredPage> & { url: string }>} */
export function pickEach(pages, names) {
  return pages.picks ? pages.picks(names) : pages.values();
}

/** A failure that says nothing about the page (5xx, timeout, reset, truncated, too large): the previous copy stays. @param {unknown} error */
export function isTransient(error) {
  return isRetryable(error) || error instanceof PageTooLargeError;
}

/** @param {unknown} error */
export function isGone(error) {
  return error instanceof HttpStatusError && isGoneStatus(error.status);
}

/** 404 or 410: an answer, not a failure that may pass. @param {number | undefined} status */
export function isGoneStatus(status) {
  return status === 404 || status === 410;
}

/** The stored copy's `fields`, when its blobs are still there. @param {Prior | null} prior @param {string} key @param {{ has(id: string): boolean } | null} blobs @param {readonly (keyof StoredPage)[]} [fields] */
export function reusable(prior, key, blobs, fields = CARRIED) {
  const stored = prior ? /** @type {StoredPage | undefined} */ (pickStored(prior.pages, key, fields)) : undefined;
  if (!stored || stored.state !== 'done' || !stored.file || !stored.body || !blobs?.has(stored.body)) return null;
  if (stored.type !== 'other' && (!stored.scan || !blobs.has(stored.scan))) return null;
  return stored;
}

/** What a page carried over takes from its stored copy (`fromStored`, `keepStored`): not its slots, siblings or old files. */
const CARRIED = /** @type {const} */ (['state', 'status', 'contentType', 'type', 'charset', 'etag', 'lastModified', 'file', 'body', 'scan', 'bytes', 'sha256', 'compare', 'render', 'fetched', 'maxAge', 'immutable']);

/** What `reusable` needs to tell whether a page can be kept, its validators (`conditionalHeaders`) and its age (freshness.js). */
export const VALIDATING = /** @type {const} */ (['state', 'type', 'etag', 'lastModified', 'file', 'body', 'scan', 'fetched', 'maxAge', 'immutable']);

/** From a 304, or a transient failure. @param {PageRecord} record @param {StoredPage} stored */
export function fromStored(record, stored) {
  record.status = stored.status;
  record.contentType = stored.contentType;
  record.type = stored.type;
  record.charset = stored.charset;
  record.etag ??= stored.etag;
  record.lastModified ??= stored.lastModified;
  record.body = stored.body;
  record.compare = stored.compare;
  record.scan = stored.type === 'other' ? undefined : stored.scan;
  record.render = stored.render; // its body is the rendered DOM: still a rendered page
  record.fetched = stored.fetched;
  record.maxAge = stored.maxAge;
  record.immutable = stored.immutable;
  if (stored.type === 'other') {
    record.bytes = stored.bytes;
    record.sha256 = stored.sha256;
  }
}

/** The file each URL led to last run, through its redirects. @param {Prior} prior @param {number} maxHops */
export function priorFiles(prior, maxHops) {
  return {
    /** @param {string} key */
    fileOf(key) {
      let current = key;
      for (let hops = 0; hops <= maxHops; hops++) {
        const stored = prior.pages.get(current);
        if (!stored) return null;
        // A page carried by an incomplete run while it redirected: links led where the redirect did.
        if (stored.state === 'done' && stored.location === undefined) return stored.file ?? null;
        if (!stored.location) return null;
        current = stored.location;
      }
      return null;
    },
  };
}

/** --prune-max: "n" files or "n%" of the previous run's pages. @param {string} limit @param {number} previousPages */
export function pruneLimit(limit, previousPages) {
  const match = /^(\d+)(?:\.(\d+))?(%?)$/.exec(limit.trim());
  if (!match) return 0;
  if (!match[3]) return Number(match[1]);
  // Exact decimal: 0.29 * 100 is 28.999…
  const decimals = match[2] ?? '';
  return Number((BigInt(match[1] + decimals) * BigInt(previousPages)) / (100n * 10n ** BigInt(decimals.length)));
}
