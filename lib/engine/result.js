// @ts-check
import path from 'node:path';
import { eachRecord } from '../store/records.js';

/**
 * A run's summary, counted from its records, and the blobs the next state refers to.
 * @typedef {import('./run.js').CrawlRun} CrawlRun
 * @typedef {{ written: { pages: number, assets: number }, changes: Map<import('../store/records.js').Change, number> }} Tally changes: of pages not stale
 */

/** @returns {Tally} */
export const newTally = () => ({ written: { pages: 0, assets: 0 }, changes: new Map() });

/** @param {Tally} tally @param {import('../store/records.js').PageRecord | undefined} record */
export function countRecord(tally, record) {
  if (!record || record.state !== 'done') return;
  tally.written[record.type === 'html' ? 'pages' : 'assets']++;
  if (record.change && !record.stale) tally.changes.set(record.change, (tally.changes.get(record.change) ?? 0) + 1);
}

/** @param {CrawlRun} run @param {string[]} keys @param {Tally} tally */
export async function countRecords(run, keys, tally) {
  for await (const [, record] of eachRecord(run.records, keys)) countRecord(tally, record);
}

/** Counting each record on the way. @param {CrawlRun} run @param {string[]} keys @param {Tally} tally @param {string[]} kept the carried pages' blobs */
export async function* liveBlobs(run, keys, tally, kept) {
  for await (const [, record] of eachRecord(run.records, keys)) {
    countRecord(tally, record);
    if (!record || record.state !== 'done') continue;
    if (record.body) yield record.body;
    if (record.scan) yield record.scan;
  }
  yield* kept;
}

/** For the manifest. @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {number} listedCount */
export function sourcesOf(o, listedCount) {
  /** @type {Record<string, unknown>} */ const found = {};
  if (o.sitemap.length > 0) found.sitemaps = o.sitemap;
  if (o.urls !== undefined) found.urlList = o.urls === '-' ? 'stdin' : o.urls;
  if (listedCount > 0) found.listedUrls = listedCount;
  return found;
}

/**
 * @typedef {{ tally: Tally, outcome: import('./write-phase.js').WriteOutcome & { warnings: import('../warnings.js').Warning[] },
 *   failures: import('../output/manifest/schema.js').ManifestError[], failedHere: number,
 *   requisitesMissing: import('../output/manifest/schema.js').ManifestError[], limits: { overLimit: number, overLimitSaturated: boolean },
 *   stale: number, interrupted: boolean, complete: boolean, sitemapsCut: boolean, rootLost: boolean, startedAt: number }} Ending
 */

/** @param {CrawlRun} run @param {Ending} end @returns {import('../crawler/index.js').CrawlResult} */
export function resultOf(run, end) {
  const o = run.options;
  const { tally: { written, changes }, outcome } = end;
  /** @param {import('../store/records.js').Change} change */
  const count = (change) => changes.get(change) ?? 0;
  const revalidator = run.revalidator;
  return {
    out: path.resolve(o.out),
    manifest: o.dryRun ? null : path.join(path.resolve(o.out), 'prerender-manifest.json'),
    pages: written.pages,
    assets: written.assets,
    failed: end.failures.length,
    warnings: run.warnings.length + outcome.warnings.length,
    redirects: run.redirects.length,
    notCrawled: end.limits.overLimit,
    notCrawledSaturated: end.limits.overLimitSaturated,
    maxPages: o.maxPages,
    requisitesNotFetched: run.counts.requisitesNotFetched,
    threads: {
      workers: run.threads.slots.length, inWorkers: run.threads.counts.worker, inMain: run.threads.counts.local,
      early: run.early?.counts.taken ?? 0, revalidated: revalidator ? revalidator.counts.takenAhead + revalidator.counts.urgent : 0,
    },
    interrupted: end.interrupted,
    durationMs: Math.round(performance.now() - end.startedAt),
    failures: end.failures,
    requisitesMissing: end.requisitesMissing,
    stale: end.stale,
    resumed: run.stats.resumed,
    fetched: run.stats.fetched - run.stats.resumed - (run.stats.carried ?? 0),
    carried: { ...(run.unasked?.counts ?? { fresh: 0, listed: 0, dated: 0 }) },
    pruneRefused: outcome.pruneRefused,
    complete: end.complete,
    tooDeep: run.depth.tooDeep.size,
    tooLong: run.depth.tooLong,
    sitemapsCut: end.sitemapsCut,
    rootLost: end.rootLost,
    kept: outcome.kept,
    churn: {
      new: count('new'),
      changed: count('changed'),
      notModified: count('not-modified'),
      sameBytes: count('same-bytes'),
      removed: outcome.removed,
      stale: end.stale,
      failed: end.failedHere,
      filesWritten: outcome.filesWritten,
      bytesWritten: outcome.bytesWritten,
    },
  };
}
