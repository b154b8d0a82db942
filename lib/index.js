// @ts-check
/**
 * prerender's programmatic API. See docs/api.md.
 * @typedef {import('./options/crawl-options.js').CrawlOptions} CrawlOptions
 * @typedef {import('./crawler/index.js').CrawlResult} CrawlResult
 * @typedef {import('./crawler/index.js').CrawlerOptions} CrawlerOptions
 * @typedef {import('./fetch/http.js').Loader} Loader
 * @typedef {import('./fetch/http.js').LoadResult} LoadResult
 * @typedef {import('./output/target.js').OutputTarget} OutputTarget
 * @typedef {import('./output/manifest/schema.js').Manifest} Manifest
 * @typedef {import('./engine/run.js').Transform} Transform
 */
export { Crawler, crawl } from './crawler/index.js';
export { createHttpLoader, withRetry } from './fetch/index.js';
export { LocalTree } from './output/local-tree.js';
export { readManifest, parseManifest, MANIFEST_NAME, MANIFEST_VERSION, ManifestFormatError } from './output/manifest/index.js';
export { WARNING_CODES } from './warnings.js';
export { preview, explainUrl } from './preview/index.js';
export { findConfig, loadConfigFile } from './options/config-file.js';
export { resolveCrawlOptions, CRAWL_OPTIONS } from './options/crawl-options.js';
export { createPriceFilter, createServer, runServeCommand } from './serve/index.js';
// The front (serve's `origin` option, `prerender front`): docs/front.md.
export { frontConfigs } from './front/command.js';
export { RouteTable } from './front/route.js';
export { Scope } from './roots/scope.js';
export { normalizeUrl } from './url.js';
export { defaultFileName, headerFileName } from './naming/file-names.js';
export { renderPlaceholder } from './document/placeholders.js';
export { PriceFileError, InvalidPriceAnswerError } from './prices/index.js';
export { run } from './cli/index.js';
export * from './errors.js';
export { deploy, publish, rollback, listReleases, verify } from './deploy/deploy.js';
export { measureCapacity, defaultProfile as defaultCapacityProfile } from './capacity/index.js';
