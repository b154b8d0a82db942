// @ts-check
import { PrerenderError } from '../errors.js';
import { decodeLinks } from '../document/rewrite.js';
import { sha256 } from '../store/blobs.js';
import { warn } from '../warnings.js';
import { fail } from './outcomes.js';
import { links } from './links.js';
import { conditionalHeaders, fromStored, isGone, isTransient, reusable } from '../recrawl/prior.js';

/**
 * Pages carried over instead of fetched and staged again: from the last
 * crawl's state (a 304, or a transient failure that keeps the last good copy)
 * or from the journal of a killed crawl (resume).
 *
 * @typedef {import('./run.js').CrawlRun} CrawlRun
 * @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight
 */

/**
 * Re-crawl: each request asks with the last copy's validators, and a 304 keeps that copy. Plugged into
 * the hook `requestHeaders`; the copy looked up goes in `page.stored` for the 304.
 * @param {CrawlRun} run
 */
export function plugRecrawl(run) {
  run.hooks.on('requestHeaders', 're-crawl', (page) => {
    page.stored = reusable(run.prior, page.key, run.blobs);
    return conditionalHeaders(run.prior, page.stored);
  });
}

/** The body of a page carried over: it is not read (a Buffer of no bytes is never written to). */
const NO_BODY = Buffer.alloc(0);

/**
 * Carry on with the stored copy of a page (a 304, or a transient failure):
 * its links are followed as if it had been fetched, and its file is left as
 * it is unless what it links to moved.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 * @param {import('../recrawl/state.js').StoredPage} stored
 * @param {string} instead what becomes of the page when its stored links are damaged (warned)
 * @param {Awaited<ReturnType<typeof storedLinks>>} [read] its stored links, when the caller read them already
 * @returns {Promise<boolean>} false: they are (the record is left as it was)
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

/**
 * A staged blob whose bytes do not hash to its id (the staging log damaged
 * on disk, or edited): never used. Its id is forgotten, so that it is
 * neither read again nor taken for a new blob of the same bytes.
 */
class DamagedBlobError extends PrerenderError {
  code = 'STAGED_DAMAGED';
}

/**
 * The links of a staged scan (the blob store's own buffer when it can lend
 * one: nothing kept of it), checked against its hash: the links a page is
 * said to have decide which pages are reached, and so which files a complete
 * crawl removes.
 * @param {CrawlRun} run
 * @param {string} id
 */
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

/**
 * storedLinks, or null when they are damaged: then warned (STAGED_DAMAGED),
 * saying what becomes of the page instead.
 * @param {CrawlRun} run
 * @param {string} url the page's
 * @param {string} id its scan
 * @param {string} instead "fetched in full", "scanned again"...
 */
export async function intactLinks(run, url, id, instead) {
  try {
    return await storedLinks(run, id);
  } catch (error) {
    if (!(error instanceof DamagedBlobError)) throw error;
    warn(run, url, 'STAGED_DAMAGED', `${error.message}; it is not used: the page is ${instead}`);
    return null;
  }
}

/** Where a crawl stages bodies and scans, for messages. */
const STAGING_LOG = '.prerender/blobs.log';

/**
 * A failure on a page the previous crawl wrote: a transient one keeps the
 * previous file (the page is marked stale); a 404/410 means the page is gone.
 * Anything else, or a page never written before, is a recorded failure.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 * @param {unknown} error
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
    // Removed (after a complete crawl), and still a broken link where pages link to it: listed
    // with the errors and its referrers, as a first crawl of the site would list it.
    const { status, code } = /** @type {import('../errors.js').HttpStatusError} */ (error);
    page.record.state = 'gone';
    page.record.status = status;
    // As a first crawl lists it (its code too): the manifest is a clean run's.
    page.record.error = { message: /** @type {Error} */ (error).message, status, ...(typeof code === 'string' ? { code } : {}) };
    await run.records.put(page.record);
    run.emit('gone', { url: page.key, status: page.record.status });
    return;
  }
  await fail(run, page.record, error);
}
