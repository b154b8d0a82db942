// @ts-check
import { redirect } from './outcomes.js';
import { links } from './links.js';
import { intactLinks } from './carry.js';
import { fromStored, pickStored } from '../recrawl/prior.js';

/**
 * Resume, on the hooks `recorded` and `beforeFetch`: a page a killed crawl's journal lists is not fetched again.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight
 */

/** @param {CrawlRun} run */
export function plugResume(run) {
  const { resumed } = run;
  if (resumed) {
    run.hooks.on('beforeFetch', 'resume', async (page) => {
      const entry = resumed.get(page.key);
      return entry !== undefined && resumable(run, entry) && (await resumeFrom(run, page, entry));
    });
  }
  if (run.journal) run.hooks.on('recorded', 'resume', (record) => journal(run, record));
}

/** @param {CrawlRun} run @param {PageRecord} record */
export function journal(run, record) {
  if (!run.journal) return;
  if (record.state === 'redirect') {
    run.journal.add({ url: record.key, state: 'redirect', status: /** @type {number} */ (record.status), location: record.location });
    return;
  }
  run.journal.add({
    url: record.key, state: 'done', status: /** @type {number} */ (record.status), contentType: record.contentType, type: record.type,
    charset: record.charset, etag: record.etag, lastModified: record.lastModified, wanted: record.wanted, body: record.body,
    scan: record.scan, bytes: record.type === 'other' ? record.bytes : undefined, sha256: record.type === 'other' ? record.sha256 : undefined,
    compare: record.compare, change: record.change, stale: record.stale || undefined, render: record.render,
    fetched: record.fetched, maxAge: record.maxAge, immutable: record.immutable,
  });
}

/** What it refers to is still in the blob store. @param {CrawlRun} run @param {import('../recrawl/journal.js').JournalEntry} entry */
export function resumable(run, entry) {
  if (entry.state === 'redirect') return typeof entry.location === 'string';
  if (!entry.body || !run.blobs?.has(entry.body)) return false;
  return entry.type === 'other' || (entry.scan !== undefined && run.blobs.has(entry.scan));
}

/**
 * @param {CrawlRun} run @param {PageInFlight} page @param {import('../recrawl/journal.js').JournalEntry} entry
 * @returns {Promise<boolean>} false: its staged scan is damaged, the page is to be fetched
 */
export async function resumeFrom(run, page, entry) {
  const record = page.record;
  if (entry.state === 'redirect') {
    await redirect(run, page, entry.status, /** @type {string} */ (entry.location));
    return true;
  }
  const scan = entry.scan ? await intactLinks(run, page.key, entry.scan, 'fetched in full') : undefined;
  if (scan === null) return false;
  fromStored(record, entry);
  record.wanted = entry.wanted;
  record.change = entry.change;
  // The journal's change is against its run's starting state; an interrupted run has written a newer one since.
  if (entry.change === 'new' || entry.change === 'changed') {
    const before = run.prior ? pickStored(run.prior.pages, page.key, ['state', 'body']) : undefined;
    if (before?.state === 'done') record.change = before.body === entry.body ? 'same-bytes' : 'changed';
  }
  record.stale = entry.stale === true;
  if (record.type === 'other') {
    record.bytes = entry.bytes;
    record.sha256 = entry.sha256;
  }
  if (scan) page.scan = scan;
  await links(run, page);
  record.state = 'done';
  record.referrers = undefined;
  await run.records.put(record);
  run.stats.fetched++;
  run.stats.resumed++;
  run.emit('page', { url: page.key, wantedFile: record.wanted, status: record.status, contentType: record.contentType, bytes: 0, resumed: true });
  return true;
}

