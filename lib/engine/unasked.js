// @ts-check
import { warn } from '../warnings.js';
import { intactLinks, keepStored } from './carry.js';
import { redirect } from './outcomes.js';
import { links } from './links.js';
import { followAgain, lastFollowed } from './follow.js';
import { pickEach, pickStored, reusable } from '../recrawl/prior.js';
import { compileFreshness, datedFresh } from '../recrawl/freshness.js';

/**
 * Pages of the last crawl carried without a request, as an unasked 304: not in --changed, fresh, or not newer by
 * sitemap date. The frontier still visits each, so its stored links are followed.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight
 * @typedef {import('../recrawl/freshness.js').Freshness | { by: 'listed' }} Reason
 *   listed: not in the --changed list
 * @typedef {{ listed: Set<string> | null, withReferrers: boolean, freshness: ReturnType<typeof compileFreshness>,
 *   dates: Map<string, number> | null, asked: Set<string>, counts: { fresh: number, listed: number, dated: number } }} Unasked
 *   dates: <lastmod> in seconds; asked: with --changed, the last crawl's pages fetched, which alone may be removed unlisted.
 */

/**
 * Null when nothing carries: no last crawl, --full, or --name rules other than the last crawl's.
 * @param {import('../recrawl/prior.js').Prior | null} prior @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o
 * @param {{ changed: string[] | null, dates: Map<string, number> | null, origins: string[] }} given @returns {Unasked | null}
 */
export function planUnasked(prior, o, { changed, dates, origins }) {
  const freshness = compileFreshness({ rules: o.fresh, honourCacheControl: o.honourCacheControl, origins });
  if (!changed && !freshness.active && !(dates && dates.size > 0)) return null;
  if (!prior?.reuse || prior.renamed) return null;
  return {
    listed: changed ? new Set(changed) : null, withReferrers: o.withReferrers, freshness,
    dates: dates && dates.size > 0 ? dates : null, asked: new Set(), counts: { fresh: 0, listed: 0, dated: 0 },
  };
}

/**
 * Why a stored page needs no request, or null: it is to be fetched.
 * @param {Unasked} unasked @param {string} key @param {import('../recrawl/freshness.js').Dated} stored @param {number} now seconds @returns {Reason | null}
 */
export function whyUnasked(unasked, key, stored, now) {
  if (unasked.listed) return unasked.listed.has(key) ? null : { by: 'listed' };
  return unasked.freshness.freshness(key, stored, now) ?? (unasked.dates ? datedFresh(unasked.dates.get(key), stored) : null);
}

/** Whether a run may carry pages unasked, known from the options alone, before the last state is read. @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o */
export function mayCarryUnasked(o) {
  return o.changed !== undefined || o.fresh.length > 0 || o.honourCacheControl || o.sitemap.length > 0;
}

/**
 * Pages of the last crawl this run would ask for, counted up to `enough`: redirects, and those not carried unasked.
 * @param {Unasked} unasked @param {import('../recrawl/prior.js').Prior} prior @param {number} now seconds @param {number} enough
 */
export function storedAsked(unasked, prior, now, enough) {
  let asked = 0;
  // Not the blob ids: a pass over every stored page, where hex strings of each cost more than the rest.
  for (const stored of pickEach(prior.pages, DATED)) {
    if (stored.state !== 'done' || !whyUnasked(unasked, stored.url, stored, now)) asked++;
    if (asked >= enough) break;
  }
  return asked;
}

/** What `whyUnasked` reads of a stored page (freshness.js `Dated`), and its state. */
const DATED = /** @type {const} */ (['state', 'fetched', 'maxAge', 'immutable']);

/** Re-crawl without asking (--changed, --fresh, sitemap dates): plugged into the hook `beforeFetch`. @param {CrawlRun} run */
export function plugUnasked(run) {
  run.hooks.on('beforeFetch', 'carried unasked', (page) => carryUnasked(run, page));
}

/** As a 304 would carry it. @param {CrawlRun} run @param {PageInFlight} page @returns {Promise<boolean>} false: the page is to be fetched */
export async function carryUnasked(run, page) {
  const unasked = run.unasked;
  if (!unasked) return false;
  const asked = () => {
    unasked.asked.add(page.key);
    return false;
  };
  const stored = reusable(run.prior, page.key, run.blobs);
  if (!stored) return unasked.listed && !unasked.listed.has(page.key) ? carryRedirect(run, page, unasked) : false;
  const why = whyUnasked(unasked, page.key, stored, run.now);
  if (!why) return unasked.listed ? asked() : false;
  // --with-referrers: a page that links to a listed URL lists it (a category, its products).
  const listsChanged = (/** @type {readonly { key?: string | null }[]} */ links) => links.some((link) => link.key && unasked.listed?.has(link.key));
  const list = lastFollowed(run, page.key);
  if (list && (!unasked.withReferrers || list.complete)) {
    if (unasked.withReferrers && listsChanged(list.items)) return asked();
    await keepStored(run, page, stored, 'fetched in full', NOT_READ);
    page.stored = stored;
    await followAgain(run, page, list);
  } else {
    const scan = stored.scan ? await intactLinks(run, page.key, stored.scan, 'fetched in full') : undefined;
    if (scan === null) return unasked.listed ? asked() : false;
    if (unasked.withReferrers && scan && listsChanged(scan.links)) return asked();
    await keepStored(run, page, stored, 'fetched in full', scan);
    page.stored = stored;
    await links(run, page);
  }
  const record = page.record;
  record.referrers = undefined;
  record.state = 'done';
  await run.records.put(record);
  run.hooks.recorded(record);
  run.stats.fetched++;
  run.stats.carried = (run.stats.carried ?? 0) + 1;
  unasked.counts[why.by === 'listed' ? 'listed' : why.by === 'lastmod' ? 'dated' : 'fresh']++;
  run.emit('page', { url: page.key, wantedFile: record.wanted, status: record.status, contentType: record.contentType, bytes: 0, carried: why.by });
  return true;
}

/** A scan not read: its links are followed from the last run's list. */
const NOT_READ = { links: [], nofollow: false };

/** --changed: an unlisted URL that redirected still does, without a request. @param {CrawlRun} run @param {PageInFlight} page @param {Unasked} unasked */
async function carryRedirect(run, page, unasked) {
  const stored = run.prior ? pickStored(run.prior.pages, page.key, ['state', 'status', 'location']) : undefined;
  if (stored?.state !== 'redirect' || typeof stored.location !== 'string' || stored.status === undefined) {
    unasked.asked.add(page.key);
    return false;
  }
  await redirect(run, page, stored.status, stored.location);
  unasked.counts.listed++;
  return true;
}

/**
 * A --changed run removes only unreached pages it was asked about; the others stay, listed stale.
 * @param {CrawlRun} run @param {import('../recrawl/state.js').StoredPage[]} gone
 */
export function splitGone(run, gone) {
  const unasked = run.unasked;
  if (!unasked?.listed) return { gone, kept: [] };
  const listed = unasked.listed;
  const mayGo = (/** @type {string} */ url) => listed.has(url) || unasked.asked.has(url);
  const kept = gone.filter((stored) => !mayGo(stored.url));
  if (kept.length > 0) {
    warn(run, kept[0].url, 'CHANGED_KEPT', `${kept.length} page${kept.length === 1 ? '' : 's'} of the last crawl ${kept.length === 1 ? 'is' : 'are'} no longer linked from the pages fetched, and not in the --changed list: ${kept.length === 1 ? 'its file is' : 'their files are'} kept (listed stale); a crawl without --changed removes ${kept.length === 1 ? 'it' : 'them'}`);
  }
  return { gone: gone.filter((stored) => mayGo(stored.url)), kept };
}

/** Those outside the scope are warned of and ignored, their referrers too. @param {CrawlRun} run @param {string[]} changed */
export function listedInScope(run, changed) {
  const outside = changed.filter((url) => run.scope.decide(url).decision !== 'crawl');
  if (outside.length === 0) return changed;
  warn(run, outside[0], 'CHANGED_OUT_OF_SCOPE', `${outside.length} URL${outside.length === 1 ? '' : 's'} of the --changed list ${outside.length === 1 ? 'is' : 'are'} outside the crawl's scope, and ignored: ${some(outside)}`);
  const ignored = new Set(outside);
  return changed.filter((url) => !ignored.has(url));
}

/** Warn of listed URLs never crawled and linked from no page fetched: a new page is reached only through a referrer. @param {CrawlRun} run */
export async function checkListed(run) {
  const listed = run.unasked?.listed;
  if (!listed) return;
  /** @type {string[]} */ const unseen = [];
  for (const url of listed) if (!(await run.records.get(url)) && !run.prior?.pages.has(url)) unseen.push(url);
  if (unseen.length > 0) warn(run, unseen[0], 'CHANGED_NOT_CRAWLED', `${unseen.length} URL${unseen.length === 1 ? '' : 's'} of the --changed list ${unseen.length === 1 ? 'was' : 'were'} never crawled, and no page fetched links to ${unseen.length === 1 ? 'it' : 'them'}: not fetched (list the page that links to a new one too): ${some(unseen)}`);
}

/** @param {string[]} urls the first few, for a message */
const some = (urls) => `${urls.slice(0, 3).join(', ')}${urls.length > 3 ? ` and ${urls.length - 3} more` : ''}`;
