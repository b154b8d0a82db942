// @ts-check
import { decodeScan, renderDocument } from '../document/rewrite.js';
import { sha256 } from '../store/blobs.js';
import { pageEntry } from './manifest-entries.js';

/**
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../output/manifest/schema.js').ManifestPage} ManifestPage @typedef {import('./write-page.js').PassRun} PassRun
 */

/**
 * An alias ("/index.html" beside "/") shares its first URL's file only with the same output bytes; else it goes to `pass.split`.
 * @param {PassRun} pass @param {PageRecord} record @param {Promise<{ page: ManifestPage, record: PageRecord } | null>} firstWritten
 * @returns {Promise<{ page: ManifestPage, record: PageRecord } | null>}
 */
export async function writeAlias(pass, record, firstWritten) {
  const first = await firstWritten;
  if (!first) {
    pass.split.push(record);
    return null;
  }
  const blobs = /** @type {import('../store/blobs.js').BlobStore} */ (pass.blobs);
  const ids = [/** @type {string} */ (record.body)];
  if (record.type !== 'other' && record.scan !== undefined) ids.push(record.scan);
  const [raw, scanned] = await blobs.get(ids);
  const output = scanned === undefined ? raw : rewrite(pass, record, raw, decodeScan(scanned)).body;
  const sameBytes = output.length === first.page.bytes && (output === raw ? record.body : sha256(output)) === first.page.sha256;
  if (!sameBytes) {
    pass.split.push(record);
    return null;
  }
  record.bytes = first.page.bytes;
  record.sha256 = first.page.sha256;
  record.compressed = first.record.compressed;
  return { page: pageEntry(pass, record, first.page.placeholders), record };
}

/** In this thread. @param {PassRun} pass @param {PageRecord} record @param {Buffer} raw @param {import('../document/rewrite.js').DocumentScan} scan */
function rewrite(pass, record, raw, scan) {
  const o = pass.options;
  return renderDocument({
    body: raw,
    scan,
    type: record.type === 'css' ? 'css' : 'html',
    charset: record.charset ?? 'utf-8',
    placeholderMode: o.placeholders,
    pricePath: o.pricePath,
    pageUrl: new URL(record.key),
    file: /** @type {string} */ (record.file),
    targetFile: (key) => pass.names.fileOf(key),
    staticRoot: pass.staticRoot,
    dynamicBase: o.dynamicBase,
    crawlOrigins: pass.origins,
    relativeLinks: o.relativeLinks,
    siteUrl: o.siteUrl,
  });
}
