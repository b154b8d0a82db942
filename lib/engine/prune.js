// @ts-check
import { warn } from '../warnings.js';
import { pickEach, pruneLimit } from '../recrawl/prior.js';
import { siblingsOf } from './precompress.js';
import { splitGone } from './unasked.js';

/**
 * Pruning: the last run's files this run did not write, planned before the write passes, removed at the commit.
 * The one module of the write phase that deletes files.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../naming/assign.js').Naming} Naming
 * @typedef {import('../recrawl/state.js').StoredPage} StoredPage
 * @typedef {{ remove: StoredPage[], moved: StoredPage[], stray: { url: string, file: string }[], carried: StoredPage[],
 *   leftOld: Map<string, string[]>, refused: boolean }} RemovalPlan
 *   stray: files a page had before its last one, left by an incomplete run; carried: listed as they were, files untouched.
 */

/**
 * Whether a name is a page's file now, exactly or in any case: on a case-blind file system it would be that file.
 * @param {Naming} naming @returns {(name: string, anyCase?: boolean) => boolean}
 */
export function pageFileTest(naming) {
  /** @type {Set<string> | null} */ let exact = null;
  /** @type {Set<string> | null} */ let lowered = null;
  return (name, anyCase = false) => {
    if (!exact || !lowered) {
      exact = new Set(naming.files.values());
      lowered = new Set([...exact].map((file) => file.toLowerCase()));
    }
    return anyCase ? lowered.has(name.toLowerCase()) : exact.has(name);
  };
}

/**
 * Removed only after a complete crawl and within --prune-max unless --force; otherwise carried for a later one.
 * Decided before writing, so that a refusal is in the manifest's warnings.
 * @param {CrawlRun} run @param {Naming} naming @param {boolean} complete
 * @param {Set<string>} dropped pages not written: their last files stay, carried
 * @param {Map<string, string | undefined>} redirected URLs that redirect now, and where @returns {RemovalPlan}
 */
export function planRemoval(run, naming, complete, dropped, redirected) {
  const o = run.options;
  const prior = run.prior;
  /** @type {RemovalPlan} */ const plan = { remove: [], moved: [], stray: [], carried: [], leftOld: new Map(), refused: false };
  if (!prior) return plan;
  const fileNow = naming.files;
  const isFileNow = pageFileTest(naming);
  const taken = (/** @type {string} */ file) => isFileNow(file, true);
  /** @type {StoredPage[]} */ const found = [];
  /** @type {StoredPage[]} pages that could not be written this time: their last files stay */ const unwritten = [];
  let previousPages = 0;
  /** @type {StoredPage[]} pages that redirect now */ const redirecting = [];
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
    // Redirecting to a page of the crawl is not gone, but redirecting off it (a login page) is.
    const moved = now !== undefined || leadsToPage(url);
    if (moved) for (const old of oldFiles ?? []) if (!taken(old)) plan.stray.push({ url, file: old });
    if (now === file || taken(file)) continue; // still there, or its file is another page's now
    const stored = /** @type {StoredPage} */ (prior.pages.get(url));
    if (now === undefined && moved) redirecting.push(stored);
    else if (moved) plan.moved.push(stored);
    else found.push(stored);
  }
  const { gone, kept } = splitGone(run, found);
  // Pages not reached may still link to any of these files: only a complete crawl removes them.
  if (!complete) return leaveAll(plan, [...gone, ...kept, ...unwritten, ...redirecting]);
  const max = pruneLimit(o.pruneMax, previousPages);
  if (gone.length > max && !o.force) {
    warn(run, o.roots[0] ?? gone[0].url, 'PRUNE_REFUSED', `${gone.length} page${gone.length === 1 ? '' : 's'} of the last crawl ${gone.length === 1 ? 'is' : 'are'} gone, more than --prune-max ${o.pruneMax} allows (${max}): no file was removed; check the site, then run again with --force`);
    plan.carried = [...gone, ...kept, ...redirecting]; // no file removed: theirs neither
    plan.refused = true;
    return plan;
  }
  plan.remove = gone;
  plan.carried = kept;
  plan.moved.push(...redirecting);
  for (const stored of gone) for (const old of stored.oldFiles ?? []) if (!taken(old)) plan.stray.push({ url: stored.url, file: old });
  return plan;
}

/**
 * An incomplete run removes nothing: moved pages' old files stay, listed in their entries for a later run.
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

/** @param {RemovalPlan} plan @param {string} url @param {string[]} files left on disk, not the page's file */
function leaveOld(plan, url, files) {
  const left = plan.leftOld.get(url) ?? [];
  for (const file of files) if (!left.includes(file)) left.push(file);
  plan.leftOld.set(url, left);
}

/**
 * Through the output target, so the commit makes it so. Only siblings a crawl made go: a hand-made .gz stays.
 * @param {CrawlRun} run @param {RemovalPlan} plan @param {(name: string) => boolean} pageFile a page's file now: never removed
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
