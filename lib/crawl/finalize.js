// @ts-check
import pLimit from 'p-limit';
import { OutputError } from '../errors.js';
import { outputFailure } from '../output/outdir.js';
import { isHtmlType } from '../naming.js';
import { decodeScan, renderDocument } from '../page.js';
import { createManifestWriter } from '../manifest/write.js';
import { SitemapWriter } from '../sitemap-writer.js';
import { sha256 } from './blobs.js';
import { fail } from './discover.js';
import { createNameTable } from './names.js';

/**
 * Phase two, once every name is known: rewrite each staged page, write it
 * through the output target, and stream the manifest (and sitemap) in URL
 * order; then commit. A page that cannot be written may already be linked
 * from pages written before it, so a pass with a new failure is done again
 * without it: links never point at a file that was not written.
 *
 * @typedef {import('./context.js').CrawlRun} CrawlRun
 * @typedef {import('./records.js').PageRecord} PageRecord
 * @typedef {import('../manifest/schema.js').ManifestPage} ManifestPage
 * @typedef {import('../warnings.js').Warning} Warning
 * @typedef {ReturnType<typeof createNameTable>} NameTable
 */

/** Pages rewritten and written at once. */
const WRITE_CONCURRENCY = 8;
/** Passes before giving up on a tree whose pages keep failing. */
const MAX_PASSES = 10;

/**
 * @param {CrawlRun} run
 * @param {PageRecord[]} pages named pages, in URL order
 * @param {{ interrupted: boolean }} state
 * @returns {Promise<Warning[]>} warnings found while writing
 */
export async function finalize(run, pages, { interrupted }) {
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  const names = createNameTable(pages, await run.records.list('redirect'), run.options.maxRedirects);
  /** @type {Set<string>} pages that failed in a pass: skipped, and links to them stay live */
  const dropped = new Set();
  run.stats.phase = 'write';
  for (let pass = 1; ; pass++) {
    const { failed, warnings } = await writePass(run, pages, names, dropped, interrupted);
    if (failed.length === 0) {
      await target.commit();
      return warnings;
    }
    if (pass >= MAX_PASSES) throw new Error(`pages kept failing in ${MAX_PASSES} write passes; nothing was committed`);
    for (const record of failed) {
      dropped.add(record.key);
      names.drop(record.key);
    }
  }
}

/**
 * One pass over every page: write it, add it to the manifest and sitemap.
 * @param {CrawlRun} run
 * @param {PageRecord[]} pages
 * @param {NameTable} names
 * @param {Set<string>} dropped
 * @param {boolean} interrupted
 * @returns {Promise<{ failed: PageRecord[], warnings: Warning[] }>}
 */
async function writePass(run, pages, names, dropped, interrupted) {
  const o = run.options;
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  /** @type {Warning[]} */
  const warnings = [];
  const pass = { ...run, warnings };
  const manifest = createManifestWriter(target, {
    roots: o.roots,
    scope: run.scope.toJSON(),
    placeholderMode: o.placeholders,
    sources: run.sources,
  });
  const sitemap = o.writeSitemap && o.siteUrl ? new SitemapWriter(target, o.siteUrl) : null;
  /** @type {PageRecord[]} */
  const failed = [];
  run.stats.written = 0;
  const limit = pLimit(WRITE_CONCURRENCY);
  try {
    /** @type {Promise<ManifestPage | null>[]} in URL order */
    const window = [];
    const drain = async () => {
      const page = await window.shift();
      if (!page) return;
      await manifest.addPage(page);
      if (sitemap && isHtmlType(page.contentType)) await sitemap.add(page.file);
    };
    for (const record of pages) {
      if (dropped.has(record.key)) continue;
      const written = limit(() => writePage(pass, record, names, failed));
      written.catch(() => {}); // awaited in order by drain(); a later one may fail first
      window.push(written);
      if (window.length >= WRITE_CONCURRENCY * 2) await drain();
    }
    while (window.length > 0) await drain();
    if (failed.length > 0) {
      await manifest.abort();
      return { failed, warnings };
    }
    if (sitemap) await sitemap.finish();
    const errors = (await run.records.list('failed')).sort((a, b) => (a.key < b.key ? -1 : 1)).map(toManifestError);
    await manifest.finish({
      errors,
      warnings: [...run.warnings, ...warnings],
      redirects: [...run.redirects].sort((a, b) => (a.url < b.url ? -1 : 1)),
      interrupted,
    });
    return { failed, warnings };
  } catch (error) {
    limit.clearQueue();
    await manifest.abort();
    throw error;
  }
}

/**
 * Rewrite (HTML, CSS) and write one page.
 * @param {CrawlRun} run
 * @param {PageRecord} record
 * @param {NameTable} names
 * @param {PageRecord[]} failed
 * @returns {Promise<ManifestPage | null>}
 */
async function writePage(run, record, names, failed) {
  const o = run.options;
  const blobs = /** @type {import('./blobs.js').BlobStore} */ (run.blobs);
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  const file = /** @type {string} */ (record.file);
  /** @type {ManifestPage['placeholders']} */
  let placeholders = [];
  try {
    const ids = [/** @type {string} */ (record.body)];
    if (record.type !== 'other' && record.scan !== undefined) ids.push(record.scan);
    const [raw, scan] = await blobs.get(ids);
    if (scan === undefined) {
      await target.write(file, raw);
      record.bytes = raw.length;
      record.sha256 = record.body;
    } else {
      const result = renderDocument({
        body: raw,
        scan: decodeScan(scan),
        type: record.type === 'css' ? 'css' : 'html',
        charset: record.charset ?? 'utf-8',
        placeholderMode: o.placeholders,
        pricePath: o.pricePath,
        pageUrl: new URL(record.key),
        file,
        targetFile: (key) => names.fileOf(key),
        staticRoot: run.staticRoot,
        dynamicBase: o.dynamicBase,
        crawlOrigins: run.origins,
      });
      for (const warning of result.warnings) {
        const entry = { url: record.key, ...warning };
        run.warnings.push(entry);
        run.emit('warning', entry);
      }
      await target.write(file, result.body);
      record.bytes = result.body.length;
      record.sha256 = result.body === raw ? record.body : sha256(result.body);
      placeholders = result.placeholders;
    }
  } catch (error) {
    const fatal = outputFailure(error, 'write', `${file} in ${target.location}`);
    if (fatal instanceof OutputError) throw fatal; // disk full, read-only...: the run cannot go on
    await fail(run, record, error);
    failed.push(record);
    return null;
  }
  await run.records.put(record);
  run.stats.written++;
  run.emit('written', { url: record.key, file, bytes: record.bytes, placeholders: placeholders.length });
  /** @type {ManifestPage} */
  const page = {
    url: record.key,
    file,
    status: /** @type {number} */ (record.status),
    contentType: /** @type {string} */ (record.contentType),
    bytes: /** @type {number} */ (record.bytes),
    sha256: /** @type {string} */ (record.sha256),
    placeholders,
  };
  if (record.etag) page.etag = record.etag;
  if (record.lastModified) page.lastModified = record.lastModified;
  return page;
}

/**
 * @param {PageRecord} record
 * @returns {import('../manifest/schema.js').ManifestError}
 */
export function toManifestError(record) {
  /** @type {import('../manifest/schema.js').ManifestError} */
  const error = { url: record.key, message: record.error?.message ?? 'failed', referrers: record.referrers ?? [] };
  if (record.error?.status) error.status = record.error.status;
  if (record.error?.code) error.code = record.error.code;
  return error;
}
