// @ts-check
/**
 * prerender's programmatic API. See README.md, "API".
 * @typedef {import('./options.js').CrawlOptions} CrawlOptions
 * @typedef {import('./crawl.js').CrawlResult} CrawlResult
 */
export { crawl, Crawler } from './crawl.js';
export { preview, explainUrl } from './preview.js';
export { findConfig, loadConfigFile } from './config.js';
export { resolveCrawlOptions, CRAWL_OPTIONS } from './options.js';
export { createPriceFilter, createServer, runServeCommand } from './serve/index.js';
export { Scope } from './scope.js';
export { normalizeUrl } from './url.js';
export { defaultFileName, headerFileName } from './naming.js';
export { renderPlaceholder } from './placeholders.js';
export { run } from './cli.js';
export * from './errors.js';
