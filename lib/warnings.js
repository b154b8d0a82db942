// @ts-check
/** Warnings have stable codes: scripts (and `preview`) tell them apart by `code`, never by text. */
export const WARNING_CODES = Object.freeze({
  NAME_COLLISION: 'two URLs want the same file name; the later one in URL order gets a suffix',
  UNSAFE_NAME: 'a name header was refused as unsafe; the page gets its default name',
  MAX_PAGES: '--max-pages was reached; links to the in-scope URLs not crawled stay live',
  MAX_DEPTH: 'in-scope URLs deeper than --max-depth were not crawled; links to them stay live',
  MAX_URL_LENGTH: 'links to in-scope URLs longer than --max-url-length were not followed; they stay live',
  SLOT_NO_SKU: 'a price slot has an empty data-price-sku and the page has no x-price-sku meta: left as it is',
  SLOT_UNCLOSED: 'a price slot element is never closed: left as it is',
  PRUNE_REFUSED: 'more pages of the last crawl are gone than --prune-max allows: no file was removed',
  STALE: 'a page failed this time (server error, timeout...): its file from the last crawl is kept, marked stale',
  NAME_RULE: 'a --name rule gave an unsafe or empty name for a URL; the page gets its default name',
  ROBOTS: 'robots.txt disallows a root (with --robots): it is not crawled',
  RENDER_PARTIAL: 'a rendered page did not become ready within --render-timeout; --on-render-timeout save kept its partial DOM (marked "partial" in the manifest)',
  RENDER_STATUS: 'a rendered page has a <meta name="prerender-status-code"> that is not a status code: ignored',
  SIBLING_TAKEN: 'a .gz or .br beside a file was not made by a crawl (--precompress): left as it is, and none is made',
  SIBLING_IS_PAGE: 'the .gz or .br name beside a file is the file of another page of the crawl (--precompress): that sibling is not made',
  ROOT_REDIRECT: 'a root redirects outside the crawl\'s scope (another scheme or host): nothing under it is crawled',
  STAGED_DAMAGED: 'the staged copy of a page (OUT/.prerender/blobs.log) does not match its hash: it is not used, and the page is fetched (or scanned) again',
  NOT_RESUMED: 'OUT holds the journal of an interrupted crawl with other roots, scope or --name rules: not resumed, every page is fetched',
  SITEMAP: 'a sitemap (or one listed in an index) could not be read, lists nothing, or lists unusable entries',
  DEPLOY_REBUILT: 'publish/deploy: the current release on a target holds a symbolic link, a special file, or not exactly its record\'s files: the new release is built from OUT alone, never linked from it',
  CHANGED_OUT_OF_SCOPE: 'URLs of the --changed list are outside the crawl\'s scope: ignored',
  CHANGED_NOT_CRAWLED: 'URLs of the --changed list were never crawled and no page fetched links to them: not fetched',
  CHANGED_KEPT: 'pages of the last crawl no longer linked from the pages fetched, and not in the --changed list: their files are kept, listed stale',
  CHANGED_NO_STATE: '--changed without a last crawl to carry pages from (none, --full, or other --name rules): every page is fetched',
});

/** @typedef {keyof typeof WARNING_CODES} WarningCode @typedef {{ url: string, code: WarningCode, message: string }} Warning */

/** Recorded, and listeners told. @param {{ warnings: Warning[], emit: (event: string, data: object) => void }} run @param {string} url @param {WarningCode} code @param {string} message */
export function warn(run, url, code, message) {
  const warning = { url, code, message };
  run.warnings.push(warning);
  run.emit('warning', warning);
}
