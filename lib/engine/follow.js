// @ts-check
import { hash } from 'node:crypto';
import { FollowNotes, readFollowLists } from '../recrawl/follow-lists.js';
import { admit } from './links.js';

/**
 * A page carried without a request follows the links the last run noted for it, not its stored scan read, hashed
 * and decided again: the same links while the rules that decide them are the same (`followKey`).
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight
 * @typedef {import('../recrawl/follow-lists.js').FollowList} FollowList
 * @typedef {{ notes: FollowNotes, key: string, last: { of(url: string): FollowList | null } | null }} Follows
 *   notes: this run's, written beside its state; last: the last state's, when it is carried from
 */

/** What decides which links of a page are followed, but its bytes: scope, --assets, depth, length, robots.txt and --sample. @param {CrawlRun} run */
export function followKey(run) {
  const o = run.options;
  return hash('sha256', JSON.stringify([
    o.roots, [...run.scope.listed], o.include, o.exclude, o.includeRegex, o.excludeRegex, o.assets, [...run.assetOrigins].sort(),
    o.maxDepth, [...run.depth.rootDepth].sort(), o.maxUrlLength, o.robots, o.sample ?? null,
  ]), 'hex');
}

/**
 * Noted for a local crawl that writes a state; the last state's read when pages may be carried unasked.
 * @param {CrawlRun} run @param {import('../store/arena.js').Arena} arena the run's
 */
export async function openFollows(run, arena) {
  if (!run.stateDir || run.coordination.shared) return null;
  const key = followKey(run);
  const found = run.prior?.reuse && run.unasked ? run.prior.follow : null;
  const last = found ? await readFollowLists(run.stateDir, { token: found.token, key, lines: found.lines, slotOf: (url) => arena.slotOf(url) }) : null;
  /** @type {Follows} */ const follows = { notes: new FollowNotes(arena), key, last };
  return follows;
}

/**
 * The last run's list for a page carried unchanged, when it can stand for its scan: no sampling, no listener of each
 * link or admission (those hear each link's decision). Early writes want every link of new pages only (early.js).
 * @param {CrawlRun} run @param {string} key
 */
export function lastFollowed(run, key) {
  const last = run.follows?.last;
  if (!last || run.sample !== null || run.listening('link') || run.listening('admit')) return null;
  return last.of(key);
}

/** As `links()` would follow them from its scan. @param {CrawlRun} run @param {PageInFlight} page @param {FollowList} list */
export async function followAgain(run, page, list) {
  run.counts.requisitesNotFetched += list.skipped;
  page.requisitesSkipped = list.skipped;
  page.linksTo = undefined;
  run.follows?.notes.note(page.key, list.items, list.skipped, list.complete);
  await admit(run, list.items.map((item) => ({ key: item.key, kind: item.kind, referrer: page.key })));
}
