// @ts-check

/**
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../output/manifest/schema.js').ManifestPage} ManifestPage @typedef {import('../recrawl/state.js').StoredPage} StoredPage
 */

/**
 * Counted and announced as written.
 * @param {Pick<CrawlRun, 'stats' | 'emit'>} run @param {PageRecord} record @param {ManifestPage['placeholders']} placeholders @returns {ManifestPage}
 */
export function pageEntry(run, record, placeholders) {
  run.stats.written++;
  run.emit('written', { url: record.key, file: record.file, bytes: record.bytes, placeholders: placeholders.length });
  return manifestEntry(record.key, record, placeholders, record.stale === true);
}

/** Carried: as the last state has it, marked stale. @param {StoredPage} stored @returns {ManifestPage} */
export function carriedEntry(stored) {
  return manifestEntry(stored.url, stored, stored.placeholders ?? [], true);
}

/**
 * @param {string} url @param {{ file?: string, status?: number, contentType?: string, bytes?: number, sha256?: string, etag?: string, lastModified?: string, render?: object }} page
 * @param {ManifestPage['placeholders']} placeholders @param {boolean} stale @returns {ManifestPage}
 */
function manifestEntry(url, page, placeholders, stale) {
  /** @type {ManifestPage} */ const entry = {
    url,
    file: /** @type {string} */ (page.file),
    status: /** @type {number} */ (page.status),
    contentType: /** @type {string} */ (page.contentType),
    bytes: /** @type {number} */ (page.bytes),
    sha256: /** @type {string} */ (page.sha256),
    placeholders,
  };
  if (page.etag) entry.etag = page.etag;
  if (page.lastModified) entry.lastModified = page.lastModified;
  if (stale) entry.stale = true;
  if (page.render) Object.assign(entry, page.render);
  return entry;
}
