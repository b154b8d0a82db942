// @ts-check
import pLimit from 'p-limit';
import { isHtmlType } from '../naming/file-names.js';
import { createManifestWriter } from '../output/manifest/write.js';
import { SitemapWriter } from '../output/sitemap.js';
import { byKey, createNameTable, namedRecord, splitAlias } from '../naming/assign.js';
import { encodeNameTable } from '../naming/name-table.js';
import { priorFiles } from '../recrawl/prior.js';
import { openNextState } from '../recrawl/next-state.js';
import { writeAlias } from './aliases.js';
import { errorsOf } from './errors-list.js';
import { carriedEntry } from './manifest-entries.js';
import { pageFileTest, planRemoval, prune } from './prune.js';
import { namesAsBefore, renderContext, writePage } from './write-page.js';

/**
 * Phase two: write each page, stream manifest, sitemap and next state in URL order, prune, commit. A pass with a new
 * failure is done again without it, so links never point at a file that was not written.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../output/manifest/schema.js').ManifestPage} ManifestPage @typedef {import('../warnings.js').Warning} Warning
 * @typedef {import('../naming/assign.js').Naming} Naming @typedef {import('./prune.js').RemovalPlan} RemovalPlan
 * @typedef {import('./write-page.js').PassRun} PassRun @typedef {import('./write-page.js').NameTable} NameTable
 * @typedef {{ filesWritten: number, bytesWritten: number, removed: number, pruneRefused: boolean, kept: number, keptBlobs: string[], complete: boolean }} WriteOutcome
 *   keptBlobs: the carried pages' body and scan, and the blobs retained; complete: false once a page was not written
 */

/** Enough for batched worker messages and that a slow page holds no others up: see BENCHMARKS.md, "Fourth pass". */
const WRITE_CONCURRENCY = 128;
const WRITE_HOLDING = 32;

/** Smaller when page bytes come to the main thread. @param {{ precompress: boolean, threads: number, locate: boolean, pool?: number }} how */
export function writeWindow({ precompress, threads, locate, pool }) {
  if (pool !== undefined) return pool;
  return precompress || threads === 0 || !locate ? WRITE_HOLDING : WRITE_CONCURRENCY;
}

/** Read whole, up to --max-page-bytes each. */
const WHOLE_BODIES = 4;
const MAX_PASSES = 10;

/** @param {CrawlRun} run @param {Naming} naming @param {{ interrupted: boolean, complete: boolean }} state @returns {Promise<{ warnings: Warning[] } & WriteOutcome>} */
export async function finalize(run, naming, { interrupted, complete }) {
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  const redirects = await run.records.list('redirect');
  /** @type {Map<string, string | undefined>} a last-crawl page among them is not gone */
  const redirected = new Map(redirects.map((record) => [record.key, record.location]));
  /** @type {Set<string>} pages that failed in a pass: skipped, and links to them stay live */ const dropped = new Set();
  run.stats.phase = 'write';
  /** @type {RemovalPlan | null} */ let removal = null;
  const plan = () => {
    // A plan made again replaces the last one and its refusal: an incomplete run removes nothing, --force or not.
    if (removal?.refused) run.warnings.splice(0, run.warnings.length, ...run.warnings.filter((warning) => warning.code !== 'PRUNE_REFUSED'));
    const made = planRemoval(run, naming, complete, dropped, redirected);
    // Links to a carried page lead to its file, not the live site; links to one that redirects now follow the redirect.
    for (const stored of made.carried) if (!naming.files.has(stored.url) && !redirected.has(stored.url)) naming.files.set(stored.url, /** @type {string} */ (stored.file));
    run.early?.forgetLinksTo(made.carried.map((stored) => stored.url));
    return made;
  };
  removal = plan();
  const context = renderContext(run);
  run.threads.setContext(context);
  for (let pass = 1; ; pass++) {
    const pageFile = pageFileTest(naming);
    const named = {
      * [Symbol.iterator]() {
        for (const [key, file] of naming.files) if (!dropped.has(key)) yield { key, file };
      },
    };
    const names = createNameTable(naming.files, dropped, redirects, run.options.maxRedirects);
    /** @type {ReturnType<typeof encodeNameTable> | null} */ let encoded = null;
    const encode = () => (encoded ??= encodeNameTable(named, redirects, run.options.maxRedirects));
    run.threads.setNames(names, encode);
    await run.finishPool?.begin(context, encode());
    const outcome = await writePass(run, { naming, names, dropped, interrupted, complete, removal, pageFile })
      .finally(() => run.finishPool?.end())
      .finally(() => run.hooks.afterPass());
    if (outcome.failed.length === 0 && outcome.split.length === 0) {
      await prune(run, removal, pageFile);
      await outcome.state?.finish(redirects, removal.carried);
      await target.commit();
      await outcome.state?.commit();
      const keptBlobs = [...removal.carried.flatMap((stored) => [stored.body, stored.scan]), ...outcome.retained].filter((id) => id !== undefined);
      return { warnings: outcome.warnings, filesWritten: outcome.filesWritten, bytesWritten: outcome.bytesWritten, removed: removal.remove.length, pruneRefused: removal.refused, kept: removal.carried.length, keptBlobs, complete };
    }
    await outcome.state?.abort();
    if (pass >= MAX_PASSES) throw new Error(`pages kept failing in ${MAX_PASSES} write passes; nothing was committed`);
    // Nothing of this pass is committed: the next one writes and removes all it wants again.
    await target.abort();
    await target.init();
    for (const record of outcome.failed) dropped.add(record.key);
    // A page not written makes the run incomplete: it removes nothing.
    if (complete && outcome.failed.length > 0) {
      complete = false;
      removal = plan();
    }
    // Aliases whose output differs get files of their own: links change, so the pass is redone.
    for (const record of outcome.split) splitAlias(run, naming, record);
  }
}

/**
 * @param {CrawlRun} run @param {{ naming: Naming, names: NameTable, dropped: Set<string>, interrupted: boolean, complete: boolean,
 *   removal: RemovalPlan, pageFile: (name: string, anyCase?: boolean) => boolean }} how pageFile: see precompress.js `isPageFile`
 */
async function writePass(run, { naming, names, dropped, interrupted, complete, removal, pageFile }) {
  const o = run.options;
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  const previous = run.prior?.reuseOutput ? priorFiles(run.prior, o.maxRedirects) : null;
  /** @type {PassRun} */ const pass = {
    ...run, warnings: [], names, previous, pageFile, counters: { filesWritten: 0, bytesWritten: 0 }, failed: [], split: [], retained: [],
    sameNames: previous !== null && namesAsBefore(run, naming, names, dropped),
    wholeBodies: pLimit(WHOLE_BODIES),
  };
  const manifest = createManifestWriter(target, {
    roots: o.roots,
    scope: run.scope.toJSON(),
    placeholderMode: o.placeholders,
    sources: run.sources,
  });
  const sitemap = o.writeSitemap && o.siteUrl ? new SitemapWriter(target, o.siteUrl) : null;
  const state = run.stateDir ? openNextState(run, complete, removal) : null;
  const { warnings, failed, split, retained } = pass;
  /** @type {Map<string, Promise<{ page: ManifestPage, record: PageRecord } | null>>} pages that have aliases */ const firsts = new Map();
  for (const [alias, first] of naming.aliasOf) if (!dropped.has(alias)) firsts.set(first, Promise.resolve(null));
  run.stats.written = 0;
  const inFlight = writeWindow({ precompress: run.hooks.has('afterWrite'), threads: run.threads.size, locate: Boolean(run.blobs?.locate), pool: run.finishPool?.window });
  const limit = pLimit(inFlight);
  try {
    /** @type {Promise<{ page: ManifestPage, record: PageRecord } | null>[]} in URL order */ const window = [];
      // Carried pages are listed stale in URL order among the others, so the manifest says what OUT holds.
    const carried = [...removal.carried].sort((a, b) => byKey(a.url, b.url));
    let nextCarried = 0;
    /** @param {string | undefined} key list the carried pages before it; all, without one */
    const listCarried = async (key) => {
      while (nextCarried < carried.length && (key === undefined || byKey(carried[nextCarried].url, key) < 0)) await manifest.addPage(carriedEntry(carried[nextCarried++]));
    };
    const drain = async () => {
      const done = await window.shift();
      if (!done) return;
      await listCarried(done.page.url);
      await manifest.addPage(done.page);
      if (sitemap && isHtmlType(done.page.contentType) && !done.record.aliasOf) await sitemap.add(done.page.file);
      await state?.addPage(done.record, done.page);
    };
    for (const key of naming.keys) {
      if (dropped.has(key)) continue;
      const aliasOf = naming.aliasOf.get(key);
      const first = aliasOf === undefined ? undefined : firsts.get(aliasOf);
      // Each record is read when its turn comes: the pages are never all in memory as objects.
      const written = limit(async () => {
        const record = await namedRecord(run, naming, key);
        return first ? writeAlias(pass, record, first) : writePage(pass, record);
      });
      written.catch(() => {}); // awaited in order by drain(); a later one may fail first
      if (firsts.has(key)) firsts.set(key, written);
      window.push(written);
      if (window.length >= inFlight * 2) await drain();
    }
    while (window.length > 0) await drain();
    await listCarried(undefined);
    if (failed.length > 0 || split.length > 0) {
      await manifest.abort();
      return { failed, split, warnings, state, retained, ...pass.counters };
    }
    if (sitemap) await sitemap.finish();
    const { errors } = await errorsOf(run);
    await manifest.finish({
      errors,
      warnings: [...run.warnings, ...warnings],
      redirects: [...run.redirects].sort((a, b) => (a.url < b.url ? -1 : 1)),
      interrupted,
    });
    return { failed, split, warnings, state, retained, ...pass.counters };
  } catch (error) {
    limit.clearQueue();
    await manifest.abort();
    await state?.abort();
    throw error;
  }
}
