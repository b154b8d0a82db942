// @ts-check
/**
 * prerender's programmatic API. See README.md, "API".
 */
export { crawl, Crawler } from './crawl.js';
export { resolveCrawlOptions, CRAWL_OPTIONS } from './options.js';
export { Scope } from './scope.js';
export { normalizeUrl } from './url.js';
export { defaultFileName, headerFileName } from './naming.js';
export { renderPlaceholder } from './placeholders.js';
export * from './errors.js';
