// @ts-check
import { warn } from '../warnings.js';

/**
 * Every link of a page decided once: scope, depth, length, robots.txt. Those followed are admitted to the frontier.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight
 * @typedef {import('../store/frontier.js').FrontierItem} FrontierItem
 */

/** @param {CrawlRun} run @param {PageInFlight} page */
export async function links(run, page) {
  if (!page.scan) return;
  const listening = run.listening('link');
  const followRequisites = run.options.assets;
  // <meta name="robots" content="nofollow"> with --robots: links are rewritten, not followed.
  const nofollow = run.robots !== null && page.scan.nofollow === true;
  /** @type {(FrontierItem & { decision: import('../roots/scope.js').ScopeDecision })[]} */ const follow = [];
  let skipped = 0;
  // For the next run's follow lists: a link followed or not by more than its URL and kind is not replayed.
  let complete = true;
  let effects = false;
  const shared = run.coordination.shared;
  /** @type {import('./early.js').LinksTo | undefined} for early writes */
  const linksTo = run.coordination.wantsLinks(run) ? { keys: [], never: new Set() } : undefined;
  for (const link of page.scan.links) {
    const key = link.key;
    if (!key) continue;
    const decision = decideLink(run, key, link.kind);
    if (linksTo) {
      linksTo.keys.push(key);
      // Not crawled as this kind of link, nor as an --assets requisite: never a page.
      if (decision.decision !== 'crawl' && !(followRequisites && run.assetOrigins.has(originOf(key)))) linksTo.never.add(key);
    }
    let followed = decision.decision === 'crawl' && link.kind !== 'form' && (link.kind !== 'requisite' || followRequisites) && !nofollow;
    if (followed && tooDeep(run, key)) {
      followed = false;
      effects = true;
    }
    // A trap whose URLs grow with each link would fill memory with keys before --max-pages.
    if (followed && key.length > run.options.maxUrlLength) {
      followed = false;
      effects = true;
      run.depth.tooLong++;
      run.depth.noteTooLong?.(key); // a shared crawl's coordinator learns it too
    }
    const sampledOut = followed && run.sample !== null && !run.sample.take(key);
    if (sampledOut) {
      followed = false;
      effects = true;
    }
    if (!followed && decision.decision === 'crawl') complete = false;
    if (followed) follow.push({ key, kind: link.kind === 'requisite' ? 'requisite' : 'navigation', referrer: page.key, decision });
    else if (link.kind === 'requisite' && !followRequisites && run.origins.has(originOf(key))) skipped++;
    if (listening) run.emit('link', { from: page.key, url: key, kind: link.kind, followed, nofollow, sampledOut, ...decision });
  }
  page.linksTo = linksTo;
  if (run.follows) {
    if (effects) run.follows.notes.forget(page.key);
    else run.follows.notes.note(page.key, follow, skipped, complete);
  }
  run.counts.requisitesNotFetched += skipped;
  page.requisitesSkipped = skipped; // a shared crawl counts them in Redis
  const admittedHere = await admitFollowed(run, follow);
  if (linksTo && shared) {
    // The coordinator waits only for links sure to be fetched: one not followed here may never come.
    linksTo.sure = new Set(admittedHere.items.filter((_, i) => admittedHere.outcomes[i] !== 'limit').map((item) => item.key));
  }
}

/**
 * With --assets, a requisite on an asset origin is fetched outside the page scope, as wget -p does, unless excluded.
 * @param {CrawlRun} run @param {string} key @param {import('../document/scan-html.js').LinkKind} kind @returns {import('../roots/scope.js').ScopeDecision}
 */
export function decideLink(run, key, kind) {
  const decision = run.scope.decide(key);
  if (decision.decision === 'dynamic' && kind === 'requisite' && run.options.assets && run.assetOrigins.has(originOf(key))) {
    return { decision: 'crawl', pattern: 'requisite' };
  }
  return decision;
}

/** @param {string} key a canonical URL */
function originOf(key) {
  const pathStart = key.indexOf('/', key.indexOf('//') + 2);
  return pathStart < 0 ? key : key.slice(0, pathStart);
}

const MAX_TOO_DEEP_TRACKED = 200_000;

/** Depth counts from the shallowest root's directory on its origin. @param {CrawlRun} run @param {string} key */
function tooDeep(run, key) {
  const pathStart = key.indexOf('/', key.indexOf('//') + 2);
  if (pathStart < 0) return false;
  let segments = 0;
  for (let i = pathStart + 1; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) break;
    if (c === 47 /* / */) segments++;
  }
  const base = run.depth.rootDepth.get(key.slice(0, pathStart)) ?? 0;
  if (segments - base <= run.options.maxDepth) return false;
  if (run.depth.tooDeep.size < MAX_TOO_DEEP_TRACKED) run.depth.tooDeep.add(key);
  return true;
}

/**
 * To the frontier and the record store.
 * @param {CrawlRun} run @param {(FrontierItem & { decision?: import('../roots/scope.js').ScopeDecision })[]} items
 * @returns {Promise<import('../store/frontier.js').AddOutcome[]>}
 */
export async function admit(run, items) {
  return (await admitFollowed(run, items)).outcomes;
}

/** @template {FrontierItem} T @param {CrawlRun} run @param {T[]} items @returns {Promise<{ items: T[], outcomes: import('../store/frontier.js').AddOutcome[] }>} */
async function admitFollowed(run, items) {
  if (run.robots !== null && items.length > 0) items = await allowedByRobots(run, items);
  if (items.length === 0) return { items, outcomes: [] };
  // The items themselves: the frontier may swap in its own copy of a key, which the records keep.
  const outcomes = await run.frontier.add(items);
  await admitted(run, items, outcomes);
  return { items, outcomes };
}

/** Listeners hear of the others as excluded. @template {FrontierItem} T @param {CrawlRun} run @param {T[]} items @returns {Promise<T[]>} */
async function allowedByRobots(run, items) {
  const robots = /** @type {NonNullable<CrawlRun['robots']>} */ (run.robots);
  const allowed = [];
  for (const item of items) {
    if (await robots.allowed(item.key, run.signal)) {
      allowed.push(item);
      continue;
    }
    run.emit('link', { from: item.referrer, url: item.key, kind: item.kind, followed: false, decision: 'excluded', pattern: 'robots.txt' });
    if (item.referrer === null) warn(run, item.key, 'ROBOTS', 'robots.txt disallows this root: not crawled (--robots)');
  }
  return allowed;
}

/**
 * @param {CrawlRun} run @param {(FrontierItem & { decision?: import('../roots/scope.js').ScopeDecision })[]} items
 * @param {import('../store/frontier.js').AddOutcome[]} outcomes
 */
export async function admitted(run, items, outcomes) {
  await run.records.admit(items, outcomes);
  if (run.revalidator) run.revalidator.hint(items.flatMap((item, i) => (outcomes[i] === 'added' ? [item.key] : [])));
  if (!run.listening('admit')) return;
  items.forEach((item, i) => {
    if (outcomes[i] === 'known') return;
    const decision = item.decision ?? run.scope.decide(item.key);
    run.emit('admit', { url: item.key, from: item.referrer, pattern: decision.pattern, root: decision.root, admitted: outcomes[i] === 'added' });
  });
}
