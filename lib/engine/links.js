// @ts-check
import { warn } from '../warnings.js';

/**
 * Link decisions: every link of a page decided once (scope, --max-depth,
 * --max-url-length, robots.txt), and the ones followed admitted to the frontier.
 *
 * @typedef {import('./run.js').CrawlRun} CrawlRun
 * @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight
 * @typedef {import('../store/frontier.js').FrontierItem} FrontierItem
 */

/**
 * Decide every link once: in scope and followed (navigation, or a requisite
 * with --assets) goes to the frontier.
 * @param {CrawlRun} run
 * @param {PageInFlight} page
 */
export async function links(run, page) {
  if (!page.scan) return;
  const listening = run.listening('link');
  const followRequisites = run.options.assets;
  // <meta name="robots" content="nofollow">, with --robots: links are rewritten, not followed.
  const nofollow = run.robots !== null && page.scan.nofollow === true;
  /** @type {(FrontierItem & { decision: import('../roots/scope.js').ScopeDecision })[]} */
  const follow = [];
  let skipped = 0;
  // A shared frontier wants them for its coordinator's early writes (sent with the page's result).
  const shared = run.frontier.wantsLinks !== undefined;
  /** @type {import('./early.js').LinksTo | undefined} */
  const linksTo = (shared ? run.frontier.wantsLinks?.() : run.early?.wanted()) ? { keys: [], never: new Set() } : undefined;
  for (const link of page.scan.links) {
    const key = link.key;
    if (!key) continue;
    const decision = decideLink(run, key, link.kind);
    if (linksTo) {
      linksTo.keys.push(key);
      // Not crawled as this kind of link, nor (--assets) as a requisite of an assets origin: never a page.
      if (decision.decision !== 'crawl' && !(followRequisites && run.assetOrigins.has(originOf(key)))) linksTo.never.add(key);
    }
    let followed = decision.decision === 'crawl' && link.kind !== 'form' && (link.kind !== 'requisite' || followRequisites) && !nofollow;
    if (followed && tooDeep(run, key)) followed = false;
    // A trap that makes every URL longer than the last (a path that grows by each link) would fill
    // memory with its keys before --max-pages: past --max-url-length a link is not followed.
    if (followed && key.length > run.options.maxUrlLength) {
      followed = false;
      run.depth.tooLong++;
      run.depth.noteTooLong?.(key); // a shared crawl's coordinator learns it too
    }
    // preview --sample: an in-scope link past the sample is planned, not fetched.
    const sampledOut = followed && run.sample !== null && !run.sample.take(key);
    if (sampledOut) followed = false;
    if (followed) follow.push({ key, kind: link.kind === 'requisite' ? 'requisite' : 'navigation', referrer: page.key, decision });
    else if (link.kind === 'requisite' && !followRequisites && run.origins.has(originOf(key))) skipped++;
    if (listening) run.emit('link', { from: page.key, url: key, kind: link.kind, followed, nofollow, sampledOut, ...decision });
  }
  page.linksTo = linksTo;
  run.counts.requisitesNotFetched += skipped;
  page.requisitesSkipped = skipped; // a shared crawl counts them in Redis, with the page's result
  const admittedHere = await admitFollowed(run, follow);
  if (linksTo && shared) {
    // The coordinator waits for a link only if it is sure to be fetched (this page added it, or
    // the frontier knew it): one not followed here (a form, a requisite without --assets,
    // nofollow, too deep, robots.txt, past --max-pages) may never come, and is not waited for.
    linksTo.sure = new Set(admittedHere.items.filter((_, i) => admittedHere.outcomes[i] !== 'limit').map((item) => item.key));
  }
}

/**
 * The scope decision for a link: the scope's, except that with --assets a
 * page requisite on a root's origin (or an --assets-origins origin) is
 * fetched even outside the page scope, as wget -p does, unless excluded.
 * @param {CrawlRun} run
 * @param {string} key
 * @param {import('../document/scan-html.js').LinkKind} kind
 * @returns {import('../roots/scope.js').ScopeDecision}
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

/** Distinct too-deep URLs remembered for the count. */
const MAX_TOO_DEEP_TRACKED = 200_000;

/**
 * Path segments of a canonical URL below the directory of the shallowest
 * root on its origin; over --max-depth it is not crawled (and counted).
 * @param {CrawlRun} run
 * @param {string} key
 */
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
 * Add in-scope URLs to the frontier and the record store.
 * @param {CrawlRun} run
 * @param {(FrontierItem & { decision?: import('../roots/scope.js').ScopeDecision })[]} items
 * @returns {Promise<import('../store/frontier.js').AddOutcome[]>}
 */
export async function admit(run, items) {
  return (await admitFollowed(run, items)).outcomes;
}

/**
 * admit(), with the items robots.txt let through (outcomes are theirs).
 * @template {FrontierItem} T
 * @param {CrawlRun} run
 * @param {T[]} items
 * @returns {Promise<{ items: T[], outcomes: import('../store/frontier.js').AddOutcome[] }>}
 */
async function admitFollowed(run, items) {
  if (run.robots !== null && items.length > 0) items = await allowedByRobots(run, items);
  if (items.length === 0) return { items, outcomes: [] };
  // The items themselves: a frontier may replace an added item's key by its own copy (ownString), which the records then keep too.
  const outcomes = await run.frontier.add(items);
  await admitted(run, items, outcomes);
  return { items, outcomes };
}

/**
 * With --robots, the items robots.txt allows; the others are told to
 * listeners as excluded by robots.txt.
 * @template {FrontierItem} T
 * @param {CrawlRun} run
 * @param {T[]} items
 * @returns {Promise<T[]>}
 */
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
 * @param {CrawlRun} run
 * @param {(FrontierItem & { decision?: import('../roots/scope.js').ScopeDecision })[]} items
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
