// @ts-check
import { namingKey } from './prior.js';
import { createStateWriter } from './state.js';
import { followToken, writeFollowLists } from './follow-lists.js';

/**
 * @typedef {import('../engine/run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../output/manifest/schema.js').ManifestPage} ManifestPage @typedef {import('./state.js').StoredPage} StoredPage
 */

/**
 * Pages as written, redirects, then for an incomplete run the last run's pages it carried, so their files stay known.
 * @param {CrawlRun} run @param {boolean} complete @param {{ leftOld: Map<string, string[]>, carried: StoredPage[] }} removal leftOld: old files left, per URL
 */
export function openNextState(run, complete, { leftOld, carried }) {
  const o = run.options;
  // Every page listed was tried in this run's formats, but carried ones: those were in the last run's.
  const precompressed = carried.length === 0 ? o.precompress : o.precompress.filter((format) => run.prior?.precompressed.includes(format));
  const writer = createStateWriter(/** @type {string} */ (run.stateDir), {
    complete, roots: o.roots, output: outputKey(run), ignore: o.ignore, precompressed,
    // A renaming run that did not reach every page keeps the old key: the next run fetches in full again.
    naming: run.prior?.renamed && !complete ? run.prior.naming : namingKey(run.options.name, run.origins),
  });
  // Carried pages' --ignore hashes used the last run's patterns: if those changed, left for the next run to make again.
  const oldHashes = run.prior !== null && !run.prior.sameIgnore;
  /** @type {string[]} each line's URL, for the follow lists */ const lines = [];
  /** @param {StoredPage} entry */
  const add = (entry) => {
    if (run.follows) lines.push(entry.url);
    return writer.add(entry);
  };
  return {
    /** @param {PageRecord} record @param {ManifestPage} page */
    async addPage(record, page) {
      await add({
        url: record.key, state: 'done', status: page.status, contentType: page.contentType, type: record.type, charset: record.charset,
        etag: record.etag, lastModified: record.lastModified, file: page.file, body: record.body, scan: record.scan,
        bytes: page.bytes, sha256: page.sha256, compare: oldHashes && record.change === 'not-modified' ? undefined : record.compare, compressed: record.compressed,
        placeholders: page.placeholders.length > 0 ? page.placeholders : undefined, render: record.render,
        oldFiles: leftOld.get(record.key), fetched: record.fetched, maxAge: record.maxAge, immutable: record.immutable,
      });
    },
    /** @param {PageRecord[]} redirects read once, by the write phase @param {StoredPage[]} carried */
    async finish(redirects, carried) {
      const listed = new Set(carried.map((stored) => stored.url));
      /** @type {Map<string, string | undefined>} */ const redirecting = new Map();
      for (const record of redirects) {
        // A last-crawl page that redirects now, carried by an incomplete run: its entry keeps its file and says where it leads.
        if (listed.has(record.key)) {
          redirecting.set(record.key, record.location);
          continue;
        }
        await add({ url: record.key, state: 'redirect', status: /** @type {number} */ (record.status), location: record.location });
      }
      for (const stored of carried) {
        await add({ ...stored, compare: oldHashes ? undefined : stored.compare, location: redirecting.get(stored.url) });
      }
    },
    async commit() {
      // Before the state: a crash between the two renames leaves lists whose token no state has.
      const follows = run.follows;
      if (follows) await writeFollowLists(/** @type {string} */ (run.stateDir), follows.notes.encode(lines, { token: followToken(writer.finishedAt, lines.length), key: follows.key }));
      await writer.finish();
    },
    abort: () => writer.abort(),
  };
}

/** What, besides a page's bytes and its links' targets, decides the bytes written: when it changes, no file is reused. @param {CrawlRun} run */
export function outputKey(run) {
  const o = run.options;
  // Not --ignore, which decides which pages count as unchanged; nor --precompress, whose siblings follow the file.
  return JSON.stringify([o.placeholders, o.pricePath, o.dynamicBase?.href ?? null, run.staticRoot.href, [...run.origins].sort(), o.relativeLinks, o.siteUrl?.href ?? null]);
}
