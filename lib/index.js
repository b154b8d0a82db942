// @ts-check
/**
 * prerender's programmatic API. See README.md, "API".
 * @typedef {import('./options.js').CrawlOptions} CrawlOptions
 * @typedef {import('./crawl/index.js').CrawlResult} CrawlResult
 * @typedef {import('./crawl/index.js').CrawlerOptions} CrawlerOptions
 * @typedef {import('./load/http.js').Loader} Loader
 * @typedef {import('./load/http.js').LoadResult} LoadResult
 * @typedef {import('./output/target.js').OutputTarget} OutputTarget
 * @typedef {import('./manifest/schema.js').Manifest} Manifest
 */
export { crawl, Crawler } from './crawl/index.js';
export { createHttpLoader, withRetry } from './load/index.js';
export { LocalTree } from './output/local.js';
export { readManifest, parseManifest, MANIFEST_NAME } from './manifest/index.js';
export { WARNING_CODES } from './warnings.js';
export { preview, explainUrl } from './preview.js';
export { findConfig, loadConfigFile } from './config.js';
export { resolveCrawlOptions, CRAWL_OPTIONS } from './options.js';
export { createPriceFilter, createServer, runServeCommand } from './serve/index.js';
export { Scope } from './scope.js';
export { normalizeUrl } from './url.js';
export { defaultFileName, headerFileName } from './naming.js';
export { renderPlaceholder } from './placeholders.js';
export { PriceFileError, InvalidPriceAnswerError } from './prices/index.js';
export { run } from './cli.js';
export * from './errors.js';
export { deploy, publish, rollback, listReleases, verify } from './deploy/deploy.js';
