// @ts-check
import { OPTION_BY_NAME } from '../options/crawl-options.js';


/**
 * Stored under the crawl id: the roots and every option that changes the result. A later `crawl` with the same id must
 * give the same, or is refused with what differs.
 * @typedef {{ format: 'prerender-crawl', version: string, roots: string[], listed: string[], options: Record<string, unknown>, createdAt: string }} SharedConfig
 */

/** They must agree across processes and runs. */
export const RESULT_OPTIONS = [
  'out', 'include', 'exclude', 'maxPages', 'timeout', 'retries', 'maxDepth', 'maxUrlLength', 'maxRedirects', 'dynamicBase', 'assets', 'maxPageBytes',
  'placeholders', 'pricePath', 'header', 'sitemap', 'urls', 'writeSitemap', 'siteUrl', 'ignore', 'precompress',
  'blobs', 'originConcurrency', 'rate', 'delay', 'maxDeliveries', 'leaseTimeout', 'robots', 'assetsOrigins', 'name', 'relativeLinks',
  'includeRegex', 'excludeRegex', 'requisiteErrors', 'dedupe',
  // --render: how pages are rendered is the crawl's; how many tabs and which browser binary, each process's.
  'render', 'renderOnly', 'renderSkip', 'renderWait', 'renderIdle', 'renderTimeout', 'onRenderTimeout', 'renderScripts',
  'renderResources', 'renderBlock', 'renderBlockDefaults', 'renderIsolation', 'renderMemory',
];

/** A worker's come from its own command line. */
export const LOCAL_OPTIONS = ['concurrency', 'threads', 'renderConcurrency', 'renderRecycle', 'browser', 'browserEndpoint'];

/** As a config file value. @param {string} name @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o */
function inputValue(name, o) {
  const value = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (o))[name];
  if (name === 'header') return Object.entries(o.headers).map(([key, text]) => `${key}: ${text}`);
  if (name === 'precompress') return o.precompress.length > 0 ? o.precompress.join(',') : undefined;
  if (value instanceof URL) return value.href;
  return value ?? undefined;
}

/** @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {string[]} listed @param {string} version @returns {SharedConfig} */
export function sharedConfig(o, listed, version) {
  /** @type {Record<string, unknown>} */ const options = {};
  for (const name of RESULT_OPTIONS) {
    const value = inputValue(name, o);
    if (value !== undefined) options[name] = value;
  }
  return { format: 'prerender-crawl', version, roots: o.roots, listed, options, createdAt: new Date().toISOString() };
}

/** One line, or null. Header values are never shown: they may be secrets. @param {SharedConfig} stored @param {SharedConfig} given */
export function configDifference(stored, given) {
  const differences = [];
  if (stored.version !== given.version) differences.push(`prerender version (stored ${stored.version}, this is ${given.version})`);
  if (JSON.stringify(stored.roots) !== JSON.stringify(given.roots)) differences.push(`roots (stored ${JSON.stringify(stored.roots)}, given ${JSON.stringify(given.roots)})`);
  if (JSON.stringify(stored.listed) !== JSON.stringify(given.listed)) differences.push(`URLs from --sitemap/--urls (stored ${stored.listed.length}, given ${given.listed.length})`);
  for (const name of RESULT_OPTIONS) {
    // A key the stored configuration lacks had its default then.
    const a = JSON.stringify(stored.options[name] ?? OPTION_BY_NAME.get(name)?.default ?? null);
    const b = JSON.stringify(given.options[name] ?? null);
    if (a === b) continue;
    const flag = OPTION_BY_NAME.get(name)?.flags.split(/[ ,]+/).find((f) => f.startsWith('--')) ?? name;
    differences.push(name === 'header' ? `${flag} (values not shown)` : `${flag} (stored ${a}, given ${b})`);
  }
  return differences.length > 0 ? differences.join('; ') : null;
}

/**
 * The stored ones, plus its own LOCAL_OPTIONS. @param {SharedConfig} config
 * @param {{ frontier: string, crawlId: string, concurrency?: number, threads?: number, renderConcurrency?: number, renderRecycle?: number, browser?: string, browserEndpoint?: string }} local
 */
export function workerOptions(config, local) {
  /** @type {Record<string, unknown>} */ const own = {};
  for (const name of LOCAL_OPTIONS) {
    const value = /** @type {Record<string, unknown>} */ (local)[name];
    if (value !== undefined) own[name] = value;
  }
  return { ...config.options, frontier: local.frontier, crawlId: local.crawlId, roots: config.roots, ...own };
}
