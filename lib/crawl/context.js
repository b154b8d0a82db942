// @ts-check
/**
 * What one run of the crawl shares between its phases: options, the seams
 * (loader, frontier, records, blobs, output target), scope, and the run's own
 * counters and lists. Created by `Crawler.run()`, never at module scope, so
 * two runs in one process cannot interfere.
 *
 * @typedef {import('../options.js').ResolvedCrawlOptions} ResolvedCrawlOptions
 * @typedef {import('../warnings.js').Warning} Warning
 * @typedef {import('../warnings.js').WarningCode} WarningCode
 * @typedef {{ fetched: number, failed: number, written: number, active: number, queued: number, resumed: number, startedAt: number, phase: 'discover' | 'write' }} CrawlStats
 * @typedef {{
 *   name: string, concurrency?: number,
 *   run: (page: import('./discover.js').PageInFlight, run: CrawlRun) => unknown,
 *   open?: (run: CrawlRun) => Promise<void>, close?: () => Promise<void>,
 * }} Transform
 *   A step between load and scan (the render step plugs in here). open: before
 *   the first page (an error ends the run); close: at the end of the run, whatever happened.
 * @typedef {{
 *   options: ResolvedCrawlOptions,
 *   emit: (event: string, data: object) => void,
 *   listening: (event: string) => boolean,
 *   stats: CrawlStats,
 *   signal: AbortSignal,
 *   scope: import('../scope.js').Scope,
 *   loader: import('../load/http.js').Loader,
 *   frontier: import('./frontier.js').Frontier,
 *   records: import('./records.js').RecordStore,
 *   blobs: import('./blobs.js').BlobStore | null,
 *   target: import('../output/target.js').OutputTarget | null,
 *   transforms: Transform[],
 *   multiOrigin: boolean,
 *   staticRoot: URL,
 *   origins: Set<string>,
 *   warnings: Warning[],
 *   redirects: import('../manifest/schema.js').ManifestRedirect[],
 *   interned: Map<string, string>,
 *   depth: { rootDepth: Map<string, number>, tooDeep: Set<string> },
 *   prior: import('./recrawl.js').Prior | null,
 *   ignore: RegExp | null,
 *   resumed: Map<string, import('./journal.js').JournalEntry> | null,
 *   journal: ReturnType<typeof import('./journal.js').createJournal> | null,
 *   stateDir: string | null,
 *   sources: Record<string, unknown>,
 *   assetOrigins: Set<string>,
 *   robots: import('../load/robots.js').Robots | null,
 *   nameRules: import('../name-rules.js').NameRules,
 *   counts: { requisitesNotFetched: number },
 * }} CrawlRun
 *   assetOrigins: origins whose page requisites --assets fetches outside the
 *   page scope (the roots' and --assets-origins); robots: with --robots
 */

/**
 * Record a warning and tell listeners.
 * @param {{ warnings: Warning[], emit: CrawlRun['emit'] }} run
 * @param {string} url
 * @param {WarningCode} code
 * @param {string} message
 */
export function warn(run, url, code, message) {
  const warning = { url, code, message };
  run.warnings.push(warning);
  run.emit('warning', warning);
}

/**
 * One copy of each content type and charset string for the whole run.
 * @param {CrawlRun} run
 * @param {string} text
 */
export function intern(run, text) {
  let kept = run.interned.get(text);
  if (kept === undefined) {
    kept = text;
    if (run.interned.size < 1000) run.interned.set(text, text);
  }
  return kept;
}
