// @ts-check
import { createSampler } from './sample.js';
import { ignoreRegExp } from '../options/ignore.js';
import { Scope } from '../roots/scope.js';
import { createRobots } from '../fetch/robots.js';
import { compileNameRules } from '../naming/rules.js';
import { PageThreads } from './threads/page-threads.js';
import { Hooks } from './hooks.js';

/**
 * What one run shares between its phases: options, seams, scope, counters and lists. Made by `Crawler.run()`, never
 * at module scope, so two runs in one process cannot interfere.
 * @typedef {import('../options/crawl-options.js').ResolvedCrawlOptions} ResolvedCrawlOptions @typedef {import('../warnings.js').Warning} Warning
 * @typedef {import('../warnings.js').WarningCode} WarningCode
 * @typedef {{ fetched: number, failed: number, written: number, active: number, queued: number, resumed: number, carried?: number, startedAt: number, phase: 'start' | 'discover' | 'write' }} CrawlStats
 *   fetched: pages done, with or without a request; carried: those without.
 * @typedef {{ name: string, concurrency?: number, run: (page: import('./fetch-phase.js').PageInFlight, run: CrawlRun) => unknown,
 *   open?: (run: CrawlRun) => Promise<void>, close?: () => Promise<void> }} Transform
 *   A step between load and scan, such as render. An error in open ends the run; close runs whatever happened.
 * @typedef {{
 *   options: ResolvedCrawlOptions, emit: (event: string, data: object) => void, listening: (event: string) => boolean,
 *   stats: CrawlStats, signal: AbortSignal, scope: import('../roots/scope.js').Scope, loader: import('../fetch/http.js').Loader,
 *   coordination: import('./coordination.js').Coordination, hooks: import('./hooks.js').Hooks,
 *   frontier: import('../store/frontier.js').Frontier, records: import('../store/records.js').RecordStore,
 *   blobs: import('../store/blobs.js').BlobStore | null, target: import('../output/target.js').OutputTarget | null,
 *   transforms: Transform[], multiOrigin: boolean, staticRoot: URL, origins: Set<string>, warnings: Warning[],
 *   redirects: import('../output/manifest/schema.js').ManifestRedirect[], interned: Map<string, string>,
 *   depth: { rootDepth: Map<string, number>, tooDeep: Set<string>, tooLong: number, noteTooLong?: (key: string) => void },
 *   prior: import('../recrawl/prior.js').Prior | null, ignore: RegExp | null,
 *   resumed: import('../store/stored-pages.js').StoredPages<import('../recrawl/journal.js').JournalEntry> | null,
 *   journal: ReturnType<typeof import('../recrawl/journal.js').createJournal> | null, stateDir: string | null,
 *   sources: Record<string, unknown>, assetOrigins: Set<string>, robots: import('../fetch/robots.js').Robots | null,
 *   nameRules: import('../naming/rules.js').NameRules, sample: { take(key: string): boolean } | null,
 *   counts: { requisitesNotFetched: number }, threads: PageThreads, finishPool?: FinishPool | null,
 *   early?: import('./early.js').EarlyWrites | null, revalidator?: import('../fetch/revalidate.js').Revalidator | null,
 *   now: number, unasked?: import('./unasked.js').Unasked | null, follows?: import('./follow.js').Follows | null,
 * }} CrawlRun
 *   assetOrigins: where --assets fetches requisites outside the page scope; threads: closed by whoever made the run;
 *   finishPool: a shared crawl's write-pass work, spread over every live process; now: the fetch time, in epoch seconds;
 *   follows: the links each page followed, noted for the next state, and the last state's (follow.js).
 * @typedef {{ window: number,
 *   begin(context: import('./page-work.js').RenderContext, table: import('../naming/name-table.js').SharedNameTable): Promise<void>,
 *   render(input: Omit<import('./page-work.js').RenderInput, 'raw' | 'scan'>): Promise<import('./page-work.js').RenderOutput>, end(): Promise<void> }} FinishPool
 */

/**
 * @typedef {Pick<CrawlRun, 'options' | 'emit' | 'listening' | 'stats' | 'signal' | 'loader' | 'coordination' | 'blobs'
 *   | 'target' | 'transforms' | 'warnings' | 'prior' | 'resumed' | 'journal' | 'stateDir' | 'sources'>} RunParts
 */

/**
 * The given parts and what follows from the options and roots; one place for the crawl and the workers alike.
 * @param {RunParts} parts @param {string[]} listed canonical URLs from sitemaps and URL lists @returns {CrawlRun}
 */
export function createCrawlRun(parts, listed) {
  const o = parts.options;
  const origins = new Set([...o.roots, ...listed].map((root) => new URL(root).origin));
  return {
    ...parts,
    frontier: parts.coordination.frontier,
    records: parts.coordination.records,
    scope: new Scope({ roots: o.roots, include: o.include, exclude: o.exclude, includeRegex: o.includeRegex, excludeRegex: o.excludeRegex, listed }),
    multiOrigin: origins.size > 1,
    staticRoot: origins.size > 1 ? new URL('http://prerender.invalid/') : new URL(`${[...origins][0]}/`),
    origins,
    redirects: [],
    interned: new Map(),
    depth: { rootDepth: rootDepths([...o.roots, ...listed]), tooDeep: new Set(), tooLong: 0 },
    ignore: ignoreRegExp(o.ignore),
    assetOrigins: new Set([...origins, ...o.assetsOrigins]),
    robots: o.robots ? createRobots(parts.loader) : null,
    nameRules: compileNameRules(o.name, [...origins]),
    sample: o.sample ? createSampler(o.sample) : null,
    counts: { requisitesNotFetched: 0 },
    threads: new PageThreads(o.threads),
    hooks: new Hooks(),
    now: Math.floor((o.now?.() ?? Date.now()) / 1000),
  };
}

/** Per origin, the directory depth of its shallowest root: --max-depth counts segments below it. @param {string[]} roots */
export function rootDepths(roots) {
  /** @type {Map<string, number>} */ const depths = new Map();
  for (const root of roots) {
    const url = new URL(root);
    const depth = url.pathname.split('/').length - 2;
    depths.set(url.origin, Math.min(depths.get(url.origin) ?? Infinity, depth));
  }
  return depths;
}


/** One copy of each content type and charset string for the whole run. @param {CrawlRun} run @param {string} text */
export function intern(run, text) {
  let kept = run.interned.get(text);
  if (kept === undefined) {
    kept = text;
    if (run.interned.size < 1000) run.interned.set(text, text);
  }
  return kept;
}
