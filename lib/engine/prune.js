// @ts-check
import { warn } from '../warnings.js';
import { pickEach, pruneLimit } from '../recrawl/prior.js';
import { siblingsOf } from './precompress.js';

/**
 * Pruning: files of the last run's pages this run did not write, planned before the write passes and
 * removed at the commit. The one module of the write phase that deletes files.
 * @typedef {import('./run.js').CrawlRun} CrawlRun
 * @typedef {import('../naming/assign.js').Naming} Naming
 * @typedef {import('../recrawl/state.js').StoredPage} StoredPage
 * @typedef {{
 *   remove: StoredPage[], moved: StoredPage[], stray: { url: string, file: string }[], carried: StoredPage[],
 *   leftOld: Map<string, string[]>, refused: boolean,
 * }} RemovalPlan
 *   remove: files of pages gone; moved: old files of pages that now have another; stray: files from before
 *   a page's last one, left by an incomplete run; carried: listed as they were, files untouched;
 *   leftOld: per URL, old files an incomplete run leaves on disk
 */

/**
 * Whether a name is a page's file of this run: exactly (a sibling of that name is not removed), or in any
 * case (none of that name is made: a case-insensitive file system would make it the page's file).
 * @param {Naming} naming @returns {(name: string, anyCase?: boolean) => boolean}
 */
export function pageFileTest(naming) {
  /** @type {Set<string> | null} */
  let exact = null;
  /** @type {Set<string> | null} */
  let lowered = null;
  return (name, anyCase = false) => {
    if (!exact || !lowered) {
      exact = new Set(naming.files.values());
      lowered = new Set([...exact].map((file) => file.toLowerCase()));
    }
    return anyCase ? lowered.has(name.toLowerCase()) : exact.has(name);
  };
}

/**
 * Files of the last run's pages this run did not write: removed (with .gz/.br siblings) after a complete
 * crawl, within --prune-max unless --force; else carried so a later complete crawl removes them.
 * Decided before writing, so a refusal is in the manifest's warnings.
 * @param {CrawlRun} run @param {Naming} naming @param {boolean} complete
 * @param {Set<string>} dropped pages that could not be written: their last files stay, listed (carried)
 * @param {Map<string, string | undefined>} redirected URLs that redirect now, and where
 * @returns {RemovalPlan}
 */
export function planRemoval(run, naming, complete, dropped, redirected) {
  const o = run.options;
  const prior = run.prior;
  /** @type {RemovalPlan} */
  const plan = { remove: [], moved: [], stray: [], carried: [], leftOld: new Map(), refused: false };
  if (!prior) return plan;
  const fileNow = naming.files;
  const isFileNow = pageFileTest(naming);
  const taken = (/** @type {string} */ file) => isFileNow(file, true);
  /** @type {StoredPage[]} */
  const gone = [];
  /** @type {StoredPage[]} pages that could not be written this time: their last files stay */
  const unwritten = [];
  let previousPages = 0;
  /** @type {StoredPage[]} pages that redirect now */
  const redirecting = [];
  /** @param {string} url */
  const leadsToPage = (url) => {
    let current = url;
    for (let hops = 0; hops <= o.maxRedirects && redirected.has(current); hops++) current = /** @type {string} */ (redirected.get(current));
    return current !== url && fileNow.has(current);
  };
  for (const { url, state, file, oldFiles } of pickEach(prior.pages, ['state', 'file', 'oldFiles'])) {
    if (state !== 'done' || !file) continue;
    previousPages++;
    if (dropped.has(url)) {
      unwritten.push(/** @type {StoredPage} */ (prior.pages.get(url)));
      continue;
    }
    const now = fileNow.get(url);
    // Redirecting to a page of the crawl is not gone (links lead to the target's file, its own is old);
    // redirecting off the crawl (a login page) is.
    const moved = now !== undefined || leadsToPage(url);
    // Files from before its last one, left by an incomplete run.
    if (moved) for (const old of oldFiles ?? []) if (!taken(old)) plan.stray.push({ url, file: old });
    if (now === file || taken(file)) continue; // still there, or its file is another page's now
    const stored = /** @type {StoredPage} */ (prior.pages.get(url));
    if (now === undefined && moved) redirecting.push(stored);
    else if (moved) plan.moved.push(stored);
    else gone.push(stored);
  }
    // Pages not reached may still link to any of these files: only a complete crawl removes them.
  if (!complete) return leaveAll(plan, [...gone, ...unwritten, ...redirecting]);
  const max = pruneLimit(o.pruneMax, previousPages);
  if (gone.length > max && !o.force) {
    warn(run, o.roots[0] ?? gone[0].url, 'PRUNE_REFUSED', `${gone.length} page${gone.length === 1 ? '' : 's'} of the last crawl ${gone.length === 1 ? 'is' : 'are'} gone, more than --prune-max ${o.pruneMax} allows (${max}): no file was removed; check the site, then run again with --force`);
    plan.carried = [...gone, ...redirecting]; // no file removed: theirs neither
    plan.refused = true;
    return plan;
  }
  plan.remove = gone;
  plan.moved.push(...redirecting);
  for (const stored of gone) for (const old of stored.oldFiles ?? []) if (!taken(old)) plan.stray.push({ url: stored.url, file: old });
  return plan;
}

/**
 * An incomplete run removes nothing: pages are carried (redirecting ones too, stale), and old files of
 * moved pages stay on disk, listed in their entries for a later run.
 * @param {RemovalPlan} plan @param {StoredPage[]} carried
 */
function leaveAll(plan, carried) {
  plan.carried = carried;
  for (const stored of plan.moved) leaveOld(plan, stored.url, [/** @type {string} */ (stored.file), ...siblingsOf(/** @type {string} */ (stored.file), stored.compressed)]);
  for (const { url, file } of plan.stray) leaveOld(plan, url, [file]);
  plan.moved = [];
  plan.stray = [];
  return plan;
}

/**
 * Files of a page this run leaves on disk without them being the page's file.
 * @param {RemovalPlan} plan @param {string} url @param {string[]} files
 */
function leaveOld(plan, url, files) {
  const left = plan.leftOld.get(url) ?? [];
  for (const file of files) if (!left.includes(file)) left.push(file);
  plan.leftOld.set(url, left);
}

/**
 * Carry out a plan through the output target (the commit makes it so): files of pages gone or moved, the
 * siblings a crawl made of them (a hand-made .gz stays), and stray old files.
 * @param {CrawlRun} run @param {RemovalPlan} plan
 * @param {(name: string) => boolean} pageFile whether a name is a page's file now: never removed
 */
export async function prune(run, plan, pageFile) {
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  for (const stored of [...plan.remove, ...plan.moved]) {
    const file = /** @type {string} */ (stored.file);
    for (const name of [file, ...siblingsOf(file, stored.compressed).filter((sibling) => !pageFile(sibling))]) await target.remove(name);
    run.emit('removed', { url: stored.url, file });
  }
  for (const { url, file } of plan.stray) {
    await target.remove(file);
    run.emit('removed', { url, file });
  }
}
