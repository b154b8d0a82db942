// @ts-check
import { PrerenderError } from '../errors.js';
import { decodeLinks } from '../document/rewrite.js';
import { sha256 } from '../store/blobs.js';
import { warn } from '../warnings.js';
import { fail } from './outcomes.js';
import { links } from './links.js';
import { conditionalHeaders, fromStored, isGone, isTransient, reusable } from '../recrawl/prior.js';

/**
 * Pages carried over instead of fetched and staged again: a 304, a transient failure, or a killed crawl's journal.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight
 */

/** Re-crawl, on the hook `requestHeaders`: ask with the last copy's validators, kept in `page.stored` for a 304. @param {CrawlRun} run */
export function plugRecrawl(run) {
  run.hooks.on('requestHeaders', 're-crawl', (page) => {
    page.stored = reusable(run.prior, page.key, run.blobs);
    return conditionalHeaders(run.prior, page.stored);
  });
}

const NO_BODY = Buffer.alloc(0);

/**
 * Its links are followed as if fetched; its file stays as it is unless what it links to moved.
 * @param {CrawlRun} run @param {PageInFlight} page @param {import('../recrawl/state.js').StoredPage} stored @param {string} instead if its links are damaged
 * @param {Awaited<ReturnType<typeof storedLinks>>} [read] if read already @returns {Promise<boolean>} false: its links are damaged, the record untouched
 */
export async function keepStored(run, page, stored, instead, read) {
  const scan = read ?? (stored.scan ? await intactLinks(run, page.key, stored.scan, instead) : undefined);
  if (scan === null) return false;
  const record = page.record;
  fromStored(record, stored);
  record.change = 'not-modified';
  record.wanted = stored.file;
  page.result = { url: page.key, status: stored.status, headers: {}, body: NO_BODY };
  if (scan) page.scan = scan;
  return true;
}

/** A staged blob that does not hash to its id is never used, and forgotten, so no later blob of those bytes is taken for it. */
class DamagedBlobError extends PrerenderError {
  code = 'STAGED_DAMAGED';
}

/** Checked against its hash: the links decide which pages are reached, so which files a complete crawl removes. @param {CrawlRun} run @param {string} id */
export function storedLinks(run, id) {
  const blobs = /** @type {import('../store/blobs.js').BlobStore} */ (run.blobs);
  /** @param {Buffer} bytes */
  const read = (bytes) => {
    if (sha256(bytes) !== id) {
      blobs.forget?.(id);
      throw new DamagedBlobError(`its stored links (${id.slice(0, 12)}… in ${STAGING_LOG}) do not match their hash: the staged copy is damaged`);
    }
    return decodeLinks(bytes);
  };
  const links = blobs.peek ? blobs.peek(id, read) : blobs.get([id]).then(([scanned]) => read(scanned));
  // Gone since the page was looked at: found damaged (and forgotten) for another page that shares it.
  return links.catch((error) => {
    if (error instanceof DamagedBlobError || blobs.has(id)) throw error;
    throw new DamagedBlobError(`its stored links (${id.slice(0, 12)}… in ${STAGING_LOG}) were found damaged`, { cause: error });
  });
}

/** Null, and a warning, if damaged. @param {CrawlRun} run @param {string} url @param {string} id its scan @param {string} instead "fetched in full"... */
export async function intactLinks(run, url, id, instead) {
  try {
    return await storedLinks(run, id);
  } catch (error) {
    if (!(error instanceof DamagedBlobError)) throw error;
    warn(run, url, 'STAGED_DAMAGED', `${error.message}; it is not used: the page is ${instead}`);
    return null;
  }
}

const STAGING_LOG = '.prerender/blobs.log';

/**
 * On a page the last crawl wrote, a transient failure keeps its file, stale, and a 404/410 means gone.
 * Anything else is a recorded failure. @param {CrawlRun} run @param {PageInFlight} page @param {unknown} error
 */
export async function failOrKeep(run, page, error) {
  const stored = isTransient(error) ? reusable(run.prior, page.key, run.blobs) : null;
  if (stored && (await keepStored(run, page, stored, 'left failed: there is no good copy to keep'))) {
    page.record.stale = true;
    page.record.error = { message: /** @type {Error} */ (error)?.message ?? String(error) };
    await links(run, page);
    page.record.state = 'done';
    page.record.referrers = undefined;
    await run.records.put(page.record);
    run.hooks.recorded(page.record);
    run.stats.fetched++;
    warn(run, page.key, 'STALE', `${page.record.error.message}: the file of the last crawl is kept`);
    return;
  }
  if (isGone(error) && run.prior?.pages.get(page.key)?.state === 'done') {
    // Still a broken link where linked: listed with the errors as a first crawl would, so the manifest is a clean run's.
    const { status, code } = /** @type {import('../errors.js').HttpStatusError} */ (error);
    page.record.state = 'gone';
    page.record.status = status;
    page.record.error = { message: /** @type {Error} */ (error).message, status, ...(typeof code === 'string' ? { code } : {}) };
    await run.records.put(page.record);
    run.emit('gone', { url: page.key, status: page.record.status });
    return;
  }
  await fail(run, page.record, error);
}
