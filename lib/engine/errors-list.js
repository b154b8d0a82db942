// @ts-check
import { byKey } from '../naming/assign.js';
import { isGoneStatus } from '../recrawl/prior.js';

/**
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../output/manifest/schema.js').ManifestError} ManifestError
 */

/** Failed pages, and pages gone that pages still link to. @param {Pick<CrawlRun, 'records'>} run @returns {Promise<{ errors: ManifestError[], failed: number }>} */
export async function errorsOf(run) {
  const records = await run.records.list(['failed', 'gone']);
  const failed = records.reduce((n, record) => n + (record.state === 'failed' ? 1 : 0), 0);
  return { errors: records.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map(toManifestError), failed };
}

/**
 * --requisite-errors warn: a requisite the site lacks, such as a /favicon.ico it links, is listed but fails no run.
 * @param {ManifestError[]} errors @param {'warn' | 'fail'} mode
 */
export function splitMissingRequisites(errors, mode) {
  if (mode === 'fail') return { failures: errors, missing: [] };
  const missing = errors.filter((error) => error.kind === 'requisite' && isGoneStatus(error.status));
  return { failures: missing.length === 0 ? errors : errors.filter((error) => !missing.includes(error)), missing };
}

/** @param {PageRecord} record @returns {ManifestError} */
function toManifestError(record) {
  // URL order, not the crawl's, which timing decides.
  /** @type {ManifestError} */
  const error = { url: record.key, message: record.error?.message ?? 'failed', referrers: [...(record.referrers ?? [])].sort(byKey) };
  if (record.error?.status) error.status = record.error.status;
  if (record.error?.code) error.code = record.error.code;
  if (record.kind === 'requisite') error.kind = 'requisite';
  return error;
}
