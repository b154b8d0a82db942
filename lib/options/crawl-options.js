// @ts-check
import { ignoreRegExp } from './ignore.js';
import os from 'node:os';
import { ConfigError, UsageError } from '../errors.js';
import { PLACEHOLDER_MODES, renderPlaceholder } from '../document/placeholders.js';
import { normalizeUrl } from '../url.js';
import { parseNameRules } from './name-rules.js';
import { frontierUrlProblem, redactValue } from './frontier-url.js';
import { parseFreshRules } from './fresh-rules.js';

/**
 * The one table of crawl options: the CLI and the config loader are built from it, so a default lives in one place.
 * @typedef {'string' | 'string[]' | 'integer' | 'number' | 'boolean' | 'url' | 'choice' | 'bytes' | 'name-rules' | 'fresh-rules'} OptionType
 * @typedef {{ name: string, flags: string, type: OptionType, description: string,
 *   default?: unknown, min?: number, max?: number, choices?: readonly string[], cliOnly?: boolean,
 *   check?: (item: string) => string | null, numeric?: string, shown?: (value: unknown) => unknown }} OptionSpec
 *   check: what is wrong with an item, or null; shown: the value as messages show it; numeric: what a string option given as a JSON number takes
 */

/** @param {string} item */
const checkPattern = (item) => (item.startsWith('/') || normalizeUrl(item) ? null : 'a path starting with "/" or an absolute http(s) URL');
/** @param {string} item */ const checkAbsoluteUrl = (item) => (normalizeUrl(item) ? null : 'an absolute http(s) URL');
/** @param {string} item */
const checkHeader = (item) => (/^[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*:/.test(item) ? null : 'a header like "Name: value"');
/** @param {string} item */ const checkPath = (item) => (item.startsWith('/') ? null : 'a path starting with "/"');
/** @param {string} item */ const checkRegex = (item) => {
  try {
    new RegExp(item, 'g');
    return null;
  } catch (error) {
    return `a regular expression (${/** @type {Error} */ (error).message})`;
  }
};

/** @param {string} item */
const checkRenderWait = (item) => (/^(load|domcontentloaded|networkidle)$|^(selector|event|flag):./.test(item) ? null : 'load, domcontentloaded, networkidle, selector:<css>, event:<name> or flag:<js expression>');

/** Worker threads by default: one per core the process may use. */
export const DEFAULT_THREADS = os.availableParallelism();
/** Tabs rendering at once by default when networkidle is awaited: its quiet window leaves each tab idle (BENCHMARKS.md, "Rendering"). */
export const RENDER_TABS_IDLE = 8;
/** Tabs by default for waits the page answers at once: one per core (a renderer process each, at most 16). */
export const DEFAULT_RENDER_TABS = Math.min(16, Math.max(2, DEFAULT_THREADS));
/** Pages a crawl fetches before its worker threads start (a small crawl does not pay for them). */
export const THREADS_FROM = 64;

/** What --prune-max takes. */
const PRUNE_MAX = 'a whole number of files, or a percentage up to 100% such as "10%"';

/** --browser-endpoint: a DevTools address. @param {string} item @returns {string | null} */
function endpointProblem(item) {
  try {
    const url = new URL(item);
    return ['ws:', 'wss:', 'http:', 'https:'].includes(url.protocol) ? null : `a ws://, wss://, http:// or https:// address, not ${url.protocol}`;
  } catch {
    return 'a ws://, wss://, http:// or https:// address';
  }
}

/** @type {OptionSpec[]} */
export const CRAWL_OPTIONS = [
  { name: 'out', flags: '-o, --out <dir>', type: 'string', default: './prerendered', description: 'output directory' },
  { name: 'include', flags: '-i, --include <pattern...>', type: 'string[]', default: [], check: checkPattern, description: 'scope: URL prefixes to crawl ("/path" on the root\'s origin, or an absolute URL; "*" matches any run of characters). Default: each root\'s directory and below' },
  { name: 'exclude', flags: '-x, --exclude <pattern...>', type: 'string[]', default: [], check: checkPattern, description: 'URL prefixes never to crawl (exclude wins over include)' },
  { name: 'includeRegex', flags: '--include-regex <regex...>', type: 'string[]', default: [], check: checkRegex, description: 'scope: URLs to crawl, as regular expressions on the whole URL (as wget --accept-regex): "a=tree$" takes a=tree, not a=tree;h=...; with --include, a URL matching either is in scope' },
  { name: 'excludeRegex', flags: '--exclude-regex <regex...>', type: 'string[]', default: [], check: checkRegex, description: 'URLs never to crawl, as regular expressions on the whole URL (as wget --reject-regex); wins as --exclude does' },
  { name: 'dedupe', flags: '--dedupe', type: 'boolean', default: false, description: 'pages with the same bytes under two URLs (gitweb\'s a=shortlog and a=shortlog;pg=0) share one file: the later URL is an alias in the manifest, as / and /index.html are; split again if their rewritten output differs' },
  { name: 'concurrency', flags: '-c, --concurrency <n>', type: 'integer', min: 1, max: 256, default: 8, description: 'requests in flight at once' },
  { name: 'threads', flags: '--threads <n>', type: 'integer', min: 0, max: 64, default: DEFAULT_THREADS, description: `worker threads for the per-page work (tokenising, rewriting, writing), the first started once a crawl is past its first ${THREADS_FROM} pages and at least ${THREADS_FROM / 2} needed that work (a re-crawl whose pages answer 304 needs next to none), the others once those running are kept busy; a re-crawl also does its requests on one more thread; 0 does it all in the main thread (default: one per CPU core, ${DEFAULT_THREADS} here)` },
  { name: 'maxPages', flags: '--max-pages <n>', type: 'integer', min: 1, default: 100_000, description: 'stop admitting new pages after n (guard against crawler traps)' },
  { name: 'timeout', flags: '--timeout <ms>', type: 'integer', min: 1, default: 30_000, description: 'per-request timeout in milliseconds' },
  { name: 'retries', flags: '--retries <n>', type: 'integer', min: 0, max: 20, default: 2, description: 'retries for network errors, timeouts, 5xx and 429 (Retry-After honoured), with exponential backoff' },
  { name: 'maxUrlLength', flags: '--max-url-length <n>', type: 'integer', min: 64, max: 1_000_000, default: 4096, description: 'follow no link to a URL longer than n characters (guard against URL-growing traps, whose keys would fill memory); such links stay live' },
  { name: 'maxDepth', flags: '--max-depth <n>', type: 'integer', min: 1, max: 10_000, default: 64, description: 'follow links at most n path segments below the root\'s directory (guard against deep-path traps); deeper URLs stay live' },
  { name: 'maxRedirects', flags: '--max-redirects <n>', type: 'integer', min: 0, max: 100, default: 10, description: 'redirects followed from a link; a longer chain, or a loop, is a recorded failure with the chain in its message' },
  { name: 'dynamicBase', flags: '--dynamic-base <url>', type: 'url', description: 'write out-of-scope links as absolute URLs on this base (when the static tree is served from another host)' },
  { name: 'assets', flags: '--assets', type: 'boolean', default: false, description: 'also fetch page requisites (stylesheets, scripts, images, fonts, CSS url()/@import) on the roots\' origins, even outside the page scope (as wget -p does; --exclude still wins), and rewrite references to them' },
  { name: 'requisiteErrors', flags: '--requisite-errors <mode>', type: 'choice', choices: ['warn', 'fail'], default: 'warn', description: 'warn: a requisite (--assets) the site itself lacks (404, 410: a linked /favicon.ico it has not) is listed in the manifest\'s errors and the summary, but is no failure (exit 0); fail: it fails the run as a page does' },
  { name: 'assetsOrigins', flags: '--assets-origins <origin...>', type: 'string[]', default: [], check: checkAbsoluteUrl, description: 'with --assets, also fetch requisites from these origins (a CDN: https://cdn.example.com); written under a directory named after the host' },
  { name: 'relativeLinks', flags: '--relative-links', type: 'boolean', default: true, description: 'write every link to a written file relative to the page, root-relative and absolute ones too, so the tree works under any path (https://host/docs/) and from file:// (on by default; --no-relative-links keeps links that already reach the right file at the site\'s root as written)' },
  { name: 'name', flags: '--name <rule...>', type: 'name-rules', default: [], description: 'a pattern (as for --include) then a template: URLs matching it get the name the template gives, e.g. --name "/doku.php?id=*" "{query.id}.html"; placeholders {path} {dir} {base} {ext} {rest} {query.NAME} (split on & and ;); repeatable; the name header still wins' },
  { name: 'rate', flags: '--rate <n>', type: 'number', min: 0.001, description: 'at most n requests per second across the run (a decimal is fine: 0.5 is one every 2 s), for crawling a production site' },
  { name: 'delay', flags: '--delay <ms>', type: 'integer', min: 0, max: 3_600_000, default: 0, description: 'wait ms between the end of a request and the start of the next on the same connection (-c connections)' },
  { name: 'robots', flags: '--robots', type: 'boolean', default: false, description: 'honour robots.txt (user agent "prerender", else "*") and <meta name="robots" content="nofollow">; off by default: prerender is a tool for the site\'s owner' },
  { name: 'maxPageBytes', flags: '--max-page-bytes <n>', type: 'bytes', min: 1, default: 10 * 1024 * 1024, description: 'largest body accepted per page (bytes, or with a k/m/g suffix); larger is a recorded failure' },
  { name: 'placeholders', flags: '--placeholders <mode>', type: 'choice', choices: PLACEHOLDER_MODES, default: 'filter', description: 'price slot form: filter (prerender serve), ssi (nginx), esi (Varnish/CDN)' },
  { name: 'pricePath', flags: '--price-path <path>', type: 'string', default: '/price', check: checkPath, description: 'price endpoint path used in ssi/esi placeholders' },
  { name: 'header', flags: '-H, --header <header...>', type: 'string[]', default: [], check: checkHeader, description: 'extra request header "Name: value" (e.g. a cookie); repeatable' },
  { name: 'sitemap', flags: '--sitemap <url...>', type: 'string[]', default: [], check: checkAbsoluteUrl, description: 'add every URL of a sitemap (sitemap.xml, sitemap index, .xml.gz) as a root; in scope unless excluded' },
  { name: 'urls', flags: '--urls <file>', type: 'string', description: 'add the URLs of a file (one per line, "#" comments; "-" for stdin) as roots; in scope unless excluded' },
  { name: 'writeSitemap', flags: '--write-sitemap', type: 'boolean', default: false, description: 'write sitemap.xml for the static tree (needs --site-url)' },
  { name: 'siteUrl', flags: '--site-url <url>', type: 'url', description: 'public base URL of the static tree, for --write-sitemap' },
  { name: 'full', flags: '--full', type: 'boolean', default: false, description: 'fetch and write every page again, ignoring what the last crawl into OUT left (its state is still updated, and files of pages gone are still removed)' },
  { name: 'precompress', flags: '--precompress <formats>', type: 'string', check: (item) => (/^(gzip|br)(,(gzip|br))?$/.test(item) && new Set(item.split(',')).size === item.split(',').length ? null : 'gzip, br or gzip,br (each once)'), description: 'gzip, br or gzip,br: write FILE.gz and/or FILE.br beside each HTML, CSS, JS, SVG, JSON, XML and text file of at least 1 KiB they make at least 10% smaller (never a page with price slots), for nginx gzip_static/brotli_static and prerender serve' },
  { name: 'resume', flags: '--resume', type: 'boolean', default: true, description: 'go on from where a killed or interrupted crawl into OUT stopped, without fetching again the pages it had (on by default; --no-resume starts over)' },
  { name: 'ignore', flags: '--ignore <regex...>', type: 'string[]', default: [], check: checkRegex, description: 'spans of a page to ignore when telling whether it changed since the last crawl (a "generated at" time, a session id): a page that differs only there is not written again' },
  { name: 'pruneMax', flags: '--prune-max <n|n%>', type: 'string', numeric: PRUNE_MAX, default: '10%', check: (item) => (/^\d+$/.test(item) || (/^\d+(\.\d+)?%$/.test(item) && Number(item.slice(0, -1)) <= 100) ? null : PRUNE_MAX), description: 'refuse to remove more files of pages gone than this (a whole number of files, or a percentage up to 100% of the last crawl\'s pages), unless --force; the run then removes nothing and exits 1' },
  // Re-crawls that ask only for what may have changed (docs/keeping-up-to-date.md).
  { name: 'changed', flags: '--changed <file>', type: 'string', description: 'URLs known to have changed, been added or been removed, one per line ("#" comments; "-" for stdin): only they and the new pages they link to are fetched, every other page of the last crawl is carried without a request, and only listed pages are removed' },
  { name: 'withReferrers', flags: '--with-referrers', type: 'boolean', default: false, description: 'with --changed, also fetch the pages that link to a listed URL in the last crawl (the category page that lists a product)' },
  { name: 'fresh', flags: '--fresh <rule...>', type: 'fresh-rules', default: [], description: 'a pattern (as for --include) then a duration (90s, 30m, 6h, 2d, 1w or forever): a page of the last crawl matching it, fetched less than that long ago, is carried without a request; repeatable, the first matching rule wins' },
  { name: 'honourCacheControl', flags: '--honour-cache-control', type: 'boolean', default: false, description: 'also carry without a request a page of the last crawl that its Cache-Control said is still fresh: max-age (or s-maxage) not yet past, or immutable (fresh for good)' },
  { name: 'force', flags: '--force', type: 'boolean', default: false, description: 'remove the files of pages gone even past --prune-max' },
  { name: 'render', flags: '--render', type: 'boolean', default: false, description: 'render in-scope text/html pages in headless Chromium (fetched once by prerender, handed to the browser) and write the rendered DOM' },
  { name: 'renderOnly', flags: '--render-only <pattern...>', type: 'string[]', default: [], check: checkPattern, description: 'with --render, render only pages matching these patterns (syntax of --include)' },
  { name: 'renderSkip', flags: '--render-skip <pattern...>', type: 'string[]', default: [], check: checkPattern, description: 'with --render, never render pages matching these patterns (written as fetched)' },
  { name: 'renderWait', flags: '--render-wait <cond...>', type: 'string[]', default: ['networkidle'], check: checkRenderWait, description: 'when a rendered page is ready, all must hold: load, domcontentloaded, networkidle (load fired, no request in flight for --render-idle ms, then the page settled: its DOM unchanged as long), selector:<css>, event:<name> (dispatched on document), flag:<js expression>. A page that sets window.prerenderReady = false is also waited for until it is true' },
  { name: 'renderIdle', flags: '--render-idle <ms>', type: 'integer', min: 0, max: 60_000, default: 500, description: 'quiet time that makes networkidle: of the network, then of the page\'s DOM' },
  { name: 'renderTimeout', flags: '--render-timeout <ms>', type: 'integer', min: 100, max: 600_000, default: 30_000, description: 'bound on a render (navigation, waiting, serialisation); past it the page fails, with what was still awaited' },
  { name: 'onRenderTimeout', flags: '--on-render-timeout <mode>', type: 'choice', choices: ['fail', 'save'], default: 'fail', description: 'fail: a render timeout is a failed page; save: keep its partial DOM, marked "partial" in the manifest' },
  { name: 'renderScripts', flags: '--render-scripts <mode>', type: 'choice', choices: ['keep', 'strip'], default: 'keep', description: 'keep the scripts in the rendered page, or strip executable ones (JSON-LD and other data scripts stay)' },
  { name: 'renderResources', flags: '--render-resources <mode>', type: 'choice', choices: ['dom', 'all'], default: 'dom', description: 'dom: abort images, media and fonts (they do not change the DOM); all: let them load' },
  { name: 'renderBlock', flags: '--render-block <pattern...>', type: 'string[]', default: [], description: 'more requests to abort while rendering: a host (and its subdomains), or a URL prefix ("*" wildcards; "/path" on any origin)' },
  { name: 'renderBlockDefaults', flags: '--render-block-defaults', type: 'boolean', default: true, description: 'abort requests to the built-in list of analytics and ads hosts (on by default)' },
  { name: 'renderConcurrency', flags: '--render-concurrency <n>', type: 'integer', min: 1, max: 64, description: `pages rendered at once (independent of --concurrency); default: ${RENDER_TABS_IDLE} when networkidle is awaited (its quiet window leaves a tab idle), else one per CPU core, 2 to 16 (${DEFAULT_RENDER_TABS} here)` },
  { name: 'renderRecycle', flags: '--render-recycle <n>', type: 'integer', min: 1, default: 200, description: 'restart the browser after n pages (bounds its memory)' },
  { name: 'renderMemory', flags: '--render-memory <MiB>', type: 'integer', min: 64, max: 65_536, default: 512, description: 'bound on the private memory of each tab\'s renderer process (read every 0.2 s on Linux; V8\'s heap limit is twice it); a page past it fails with RENDER_MEMORY, its renderer killed' },
  { name: 'renderIsolation', flags: '--render-isolation <mode>', type: 'choice', choices: ['slot', 'context'], default: 'slot', description: 'slot: each of the --render-concurrency tabs renders page after page, its cookies, storage and cache cleared between pages (fast); context: a new browser context for every page (strict, about 2x the CPU)' },
  { name: 'browser', flags: '--browser <path>', type: 'string', description: 'Chromium or Chrome to render with (default: PUPPETEER_EXECUTABLE_PATH, CHROME_PATH, then chromium-headless-shell, chrome-headless-shell, chromium, chromium-browser, google-chrome on the PATH); never downloaded' },
  { name: 'browserEndpoint', flags: '--browser-endpoint <url>', type: 'string', check: endpointProblem, description: 'render in a browser that already runs, at its DevTools address (ws://host:port/devtools/browser/<id>, or http://host:port); the run opens and closes its own contexts there and leaves the browser running; --render-recycle restarts only its connection, and --render-memory does not apply' },
  // Crawl across processes and machines on Redis (lib/distributed/): see docs/distributed.md.
  { name: 'frontier', flags: '--frontier <url>', type: 'string', check: frontierUrlProblem, shown: redactValue, description: 'share the crawl through Redis (redis://[user:pass@]host:port/db, rediss:// for TLS; or REDIS_URL) with `prerender worker` processes; needs --crawl-id' },
  { name: 'crawlId', flags: '--crawl-id <id>', type: 'string', check: (item) => (/^[A-Za-z0-9._-]{1,100}$/.test(item) ? null : 'letters, digits, ".", "_" and "-" (at most 100)'), description: 'name of the shared crawl in Redis (its configuration, frontier and records live under it)' },
  { name: 'freshStart', flags: '--fresh-start', type: 'boolean', default: false, description: 'with --frontier: clear everything stored under the crawl id first' },
  { name: 'blobs', flags: '--blobs <dir>', type: 'string', description: 'with --frontier: directory of fetched bodies, by content hash, shared by every process (a shared mount across machines) (default: OUT/.prerender/blobs)' },
  { name: 'originConcurrency', flags: '--origin-concurrency <n>', type: 'integer', min: 1, max: 100_000, default: 64, description: 'with --frontier: requests in flight to one origin from all processes together' },
  { name: 'maxDeliveries', flags: '--max-deliveries <n>', type: 'integer', min: 1, max: 100, default: 3, description: 'with --frontier: a URL taken this many times without a result (its workers died or hung) is a failure' },
  { name: 'frontierTimeout', flags: '--frontier-timeout <s>', type: 'integer', min: 1, max: 86_400, default: 60, description: 'with --frontier: how long to keep retrying while Redis is unreachable before giving up (exit 2)' },
  { name: 'leaseTimeout', flags: '--lease-timeout <ms>', type: 'integer', min: 200, max: 3_600_000, default: 30_000, description: 'with --frontier: a URL taken by a process that sends no heartbeat for half this long (or holds it this long without one) goes to another' },
  { name: 'json', flags: '--json', type: 'boolean', default: false, description: 'print a machine-readable summary on stdout', cliOnly: true },
  { name: 'quiet', flags: '-q, --quiet', type: 'boolean', default: false, description: 'no progress line and no summary (errors still go to stderr)', cliOnly: true },
  { name: 'progressInterval', flags: '--progress-interval <s>', type: 'integer', min: 0, max: 86_400, default: 10, description: 'when stderr is not a terminal (a CI log), print a progress line every s seconds; 0: none', cliOnly: true },
];

export const OPTION_BY_NAME = new Map(CRAWL_OPTIONS.map((spec) => [spec.name, spec]));
const BY_NAME = OPTION_BY_NAME;
/** API-only keys: `roots`, and knobs for tests and embedding. */
const INTERNAL_KEYS = ['roots', 'retryDelay', 'signal', 'dryRun', 'stdin', 'env', 'threadsFrom', 'early', 'now', 'sample'];

/**
 * The options of `crawl()`, `new Crawler()` and `preview()`, as in a config file: all optional but a root.
 * @typedef {{
 *   roots?: string[], out?: string, include?: string[], exclude?: string[], concurrency?: number, threads?: number,
 *   maxPages?: number, maxDepth?: number, maxUrlLength?: number, timeout?: number, retries?: number, maxRedirects?: number, dynamicBase?: string, assets?: boolean,
 *   maxPageBytes?: number, placeholders?: 'filter' | 'ssi' | 'esi', pricePath?: string, header?: string[],
 *   sitemap?: string[], urls?: string, writeSitemap?: boolean, siteUrl?: string, json?: boolean, quiet?: boolean,
 *   full?: boolean, pruneMax?: string, force?: boolean, ignore?: string[], resume?: boolean, precompress?: string,
 *   changed?: string, withReferrers?: boolean, fresh?: ([string, string] | { pattern: string, duration: string } | string)[], honourCacheControl?: boolean,
 *   assetsOrigins?: string[], relativeLinks?: boolean, name?: ([string, string] | { pattern: string, template: string } | string)[],
 *   rate?: number, delay?: number, robots?: boolean,
 *   render?: boolean, renderOnly?: string[], renderSkip?: string[], renderWait?: string[], renderIdle?: number, renderTimeout?: number,
 *   onRenderTimeout?: 'fail' | 'save', renderScripts?: 'keep' | 'strip', renderResources?: 'dom' | 'all', renderBlock?: string[],
 *   renderBlockDefaults?: boolean, renderConcurrency?: number, renderRecycle?: number, renderMemory?: number, renderIsolation?: 'slot' | 'context', browser?: string, browserEndpoint?: string,
 *   signal?: AbortSignal, retryDelay?: number, env?: Record<string, string | undefined>, threadsFrom?: number, early?: boolean | 'always',
 *   now?: () => number,
 *   frontier?: string, crawlId?: string, freshStart?: boolean, blobs?: string, originConcurrency?: number,
 *   maxDeliveries?: number, frontierTimeout?: number, leaseTimeout?: number,
 *   requisiteErrors?: 'warn' | 'fail', includeRegex?: string[], excludeRegex?: string[], dedupe?: boolean, progressInterval?: number, sample?: number,
 * }} CrawlOptions
 */

/**
 * @typedef {{
 *   roots: string[], out: string, include: string[], exclude: string[], concurrency: number, threads: number,
 *   maxPages: number, maxDepth: number, maxUrlLength: number, timeout: number, retries: number, maxRedirects: number, dynamicBase: URL | null, assets: boolean,
 *   maxPageBytes: number, placeholders: 'filter' | 'ssi' | 'esi', pricePath: string,
 *   headers: Record<string, string>, retryDelay: number, signal?: AbortSignal, threadsFrom: number, early: boolean | 'always',
 *   sitemap: string[], urls?: string, writeSitemap: boolean, siteUrl: URL | null, dryRun: boolean,
 *   full: boolean, pruneMax: string, force: boolean, ignore: string[], resume: boolean, precompress: ('gzip' | 'br')[],
 *   changed?: string, withReferrers: boolean, fresh: import('./fresh-rules.js').FreshRule[], honourCacheControl: boolean, now?: () => number,
 *   assetsOrigins: string[], relativeLinks: boolean, name: import('../naming/rules.js').NameRule[],
 *   rate: number | undefined, delay: number, robots: boolean,
 *   stdin?: NodeJS.ReadableStream,
 *   render: boolean, renderOnly: string[], renderSkip: string[], renderWait: string[], renderIdle: number, renderTimeout: number,
 *   onRenderTimeout: 'fail' | 'save', renderScripts: 'keep' | 'strip', renderResources: 'dom' | 'all', renderBlock: string[],
 *   renderBlockDefaults: boolean, renderConcurrency: number, renderRecycle: number, renderMemory: number, renderIsolation: 'slot' | 'context', browser?: string, browserEndpoint?: string,
 *   env?: Record<string, string | undefined>,
 *   frontier?: string, crawlId?: string, freshStart: boolean, blobs?: string, originConcurrency: number,
 *   maxDeliveries: number, frontierTimeout: number, leaseTimeout: number,
 *   requisiteErrors: 'warn' | 'fail', includeRegex: string[], excludeRegex: string[], dedupe: boolean, sample?: number,
 * }} ResolvedCrawlOptions
 *   assetsOrigins: scheme://host:port; env: where the browser is looked for (default process.env)
 */

/** @param {string} message @param {string | undefined} source where the value came from (a config file), for the message */
function fail(message, source) {
  return source ? new ConfigError(`${source}: ${message}`) : new UsageError(message);
}

/** Command-line strings are converted; config values must have the JSON type. @param {OptionSpec} spec @param {unknown} value @param {string} [source] */
export function coerceOption(spec, value, source) {
  const key = source ? `"${spec.name}"` : spec.flags.split(' ').filter((f) => f.startsWith('--'))[0];
  const expect = (/** @type {string} */ what) => fail(`${key} must be ${what}, got ${shownValue(spec.shown ? spec.shown(value) : value)}`, source);
  switch (spec.type) {
    case 'string': {
      // A count in a config file may be a JSON number ("pruneMax": 5): checked as its text.
      const text = typeof value === 'number' && spec.numeric ? String(value) : value;
      if (typeof text !== 'string' || text === '') throw expect(spec.numeric ? spec.numeric : 'a non-empty string');
      checkItem(spec, text, key, source);
      return text;
    }
    case 'string[]': {
      const list = typeof value === 'string' && !source ? [value] : value;
      if (!Array.isArray(list) || !list.every((item) => typeof item === 'string' && item !== '')) throw expect('a list of non-empty strings');
      for (const item of list) checkItem(spec, item, key, source);
      return list;
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw expect('true or false');
      return value;
    case 'number': {
      const number = typeof value === 'number' ? value : typeof value === 'string' && !source && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
      if (!Number.isFinite(number)) throw expect('a number');
      if (spec.min !== undefined && number < spec.min) throw expect(`at least ${spec.min}`);
      if (spec.max !== undefined && number > spec.max) throw expect(`at most ${spec.max}`);
      return number;
    }
    case 'name-rules':
      return parseNameRules(value, (message) => fail(source ? message.replace(/--name/g, '"name"') : message, source));
    case 'fresh-rules':
      return parseFreshRules(value, (message) => fail(source ? message.replace(/--fresh/g, '"fresh"') : message, source));
    case 'integer':
    case 'bytes': {
      const fromText = typeof value === 'string' && (!source || spec.type === 'bytes');
      const number = typeof value === 'number' ? value : fromText ? parseNumber(value, spec.type === 'bytes') : NaN;
      if (!Number.isSafeInteger(number)) throw expect(spec.type === 'bytes' ? 'a whole number of bytes (k/m/g suffix allowed)' : 'a whole number');
      if (spec.min !== undefined && number < spec.min) throw expect(`at least ${spec.min}`);
      if (spec.max !== undefined && number > spec.max) throw expect(`at most ${spec.max}`);
      return number;
    }
    case 'url': {
      const url = typeof value === 'string' ? normalizeUrl(value) : null;
      if (!url) throw expect('an absolute http(s) URL');
      return url;
    }
    case 'choice':
      if (typeof value !== 'string' || !spec.choices?.includes(value)) throw expect(`one of ${spec.choices?.join(', ')}`);
      return value;
    default:
      throw new TypeError(`unknown option type ${spec.type}`);
  }
}

/** @param {OptionSpec} spec @param {string} item @param {string | undefined} key @param {string | undefined} source */
function checkItem(spec, item, key, source) {
  const problem = spec.check?.(item);
  if (problem) throw fail(`${key} must be ${problem}, got ${JSON.stringify(spec.shown ? spec.shown(item) : item)}`, source);
}

/** @param {string} text @param {boolean} allowSuffix */
function parseNumber(text, allowSuffix) {
  const match = /^\s*(\d+)\s*([kmg]i?b?|b)?\s*$/i.exec(text);
  if (!match || (match[2] && !allowSuffix)) return NaN;
  const scale = { k: 1024, m: 1024 ** 2, g: 1024 ** 3, b: 1 }[(match[2] ?? 'b')[0].toLowerCase()] ?? 1;
  return Number(match[1]) * scale;
}

/** "Name: value" headers, already checked by checkHeader. @param {string[]} list */
function parseHeaders(list) {
  /** @type {Record<string, string>} */ const headers = {};
  for (const item of list) {
    const colon = item.indexOf(':');
    headers[item.slice(0, colon).trim().toLowerCase()] = item.slice(colon + 1).trim();
  }
  return headers;
}

/** @param {Record<string, unknown>} input @param {{ source?: string }} [context] source: a config file name, for messages @returns {ResolvedCrawlOptions} */
export function resolveCrawlOptions(input, context = {}) {
  const { source } = context;
  /** @type {Record<string, any>} */ const out = {};
  for (const spec of CRAWL_OPTIONS) {
    const value = input[spec.name];
    out[spec.name] = value === undefined ? structuredClone(spec.default) : coerceOption(spec, value, source);
  }
  // Each pattern compiles (checkRegex); together they must too (two named groups of one name do not).
  try {
    ignoreRegExp(out.ignore);
  } catch (error) {
    throw fail(`${source ? '"ignore"' : '--ignore'} patterns cannot be used together: ${/** @type {Error} */ (error).message}`, source);
  }
  const rootsInput = input.roots ?? [];
  if (!Array.isArray(rootsInput)) throw fail('"roots" must be a list of absolute http(s) URLs', source);
  if (rootsInput.length === 0 && out.sitemap.length === 0 && out.urls === undefined) {
    throw fail('give at least one root URL (or --sitemap / --urls)', source);
  }
  out.roots = rootsInput.map((root) => {
    const url = typeof root === 'string' ? normalizeUrl(root) : null;
    if (!url) throw fail(`root must be an absolute http(s) URL, got ${JSON.stringify(root)}`, source);
    return url;
  });
  out.roots = [...new Set(out.roots)];
  out.headers = parseHeaders(out.header);
  delete out.header;
  if (out.dynamicBase) {
    const base = new URL(out.dynamicBase);
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    base.search = '';
    out.dynamicBase = base;
  } else {
    out.dynamicBase = null;
  }
  out.sitemap = out.sitemap.map((/** @type {string} */ url) => {
    const normalized = normalizeUrl(url);
    if (!normalized) throw fail(`sitemap must be an absolute http(s) URL, got ${JSON.stringify(url)}`, source);
    return normalized;
  });
  if (out.siteUrl) {
    const site = new URL(out.siteUrl);
    if (!site.pathname.endsWith('/')) site.pathname += '/';
    site.search = '';
    out.siteUrl = site;
  } else {
    out.siteUrl = null;
  }
  if (out.writeSitemap && !out.siteUrl) throw fail('--write-sitemap needs --site-url <url>: a sitemap lists absolute URLs', source);
  out.precompress = out.precompress ? [...new Set(out.precompress.split(','))] : [];
  out.assetsOrigins = [...new Set(out.assetsOrigins.map((/** @type {string} */ url) => new URL(url).origin))];
  checkApiValues(input, source);
  out.dryRun = input.dryRun === true;
  // preview --sample (preview.js checks the number).
  if (out.dryRun && typeof input.sample === 'number') out.sample = input.sample;
  if (input.stdin !== undefined) out.stdin = input.stdin;
  if (input.env !== undefined) out.env = input.env;
  if (!out.pricePath.startsWith('/')) throw fail(`price path must start with "/", got ${JSON.stringify(out.pricePath)}`, source);
  if (out.placeholders !== 'filter') {
    // Checked here: an unusable path would fail every slotted page after the whole crawl.
    try {
      renderPlaceholder(out.placeholders, 'SKU', { pricePath: out.pricePath });
    } catch (error) {
      throw fail(`${source ? '"pricePath"' : '--price-path'} cannot be used with ${source ? '"placeholders"' : '--placeholders'} ${out.placeholders}: ${/** @type {Error} */ (error).message}`, source);
    }
  }
  if (out.frontier && !out.crawlId) throw fail(`${source ? '"frontier"' : '--frontier'} needs ${source ? '"crawlId"' : '--crawl-id <id>'}: the name of the shared crawl`, source);
  if (out.crawlId && !out.frontier) throw fail(`${source ? '"crawlId"' : '--crawl-id'} needs ${source ? '"frontier"' : '--frontier <redis-url>'} (or REDIS_URL)`, source);
  if (!out.frontier && (out.blobs !== undefined || out.freshStart)) {
    throw fail('--blobs and --fresh-start are options of a shared crawl: give --frontier and --crawl-id too', source);
  }
  // A shared crawl's workers fetch what their frontier gives them: they know no list nor rule.
  if (out.frontier && (out.changed !== undefined || out.fresh.length > 0 || out.honourCacheControl)) {
    throw fail('--changed, --fresh and --honour-cache-control are not options of a shared crawl (--frontier)', source);
  }
  if (out.withReferrers && out.changed === undefined) throw fail('--with-referrers needs --changed <file>: the pages it fetches link to the listed URLs', source);
  if (out.changed === '-' && out.urls === '-') throw fail('--changed and --urls cannot both read stdin ("-")', source);
  if (out.browser !== undefined && out.browserEndpoint !== undefined) throw fail('--browser starts a browser and --browser-endpoint uses a running one: give one of them', source);
  out.renderConcurrency ??= out.renderWait.includes('networkidle') ? RENDER_TABS_IDLE : DEFAULT_RENDER_TABS;
  out.retryDelay = typeof input.retryDelay === 'number' && input.retryDelay >= 0 ? input.retryDelay : 500;
  out.threadsFrom = typeof input.threadsFrom === 'number' && input.threadsFrom >= 0 ? input.threadsFrom : THREADS_FROM;
  // Pages written while the crawl runs (early.js); internal: false leaves all to phase two, 'always' ignores load.
  out.early = input.early === 'always' ? 'always' : input.early !== false;
  if (input.signal !== undefined) out.signal = input.signal;
  // The clock of freshness and fetch times (ms since the epoch); tests set it.
  if (input.now !== undefined) out.now = input.now;
  for (const key of Object.keys(input)) {
    if (!BY_NAME.has(key) && !INTERNAL_KEYS.includes(key)) {
      throw fail(`unknown option "${key}"`, source);
    }
  }
  return /** @type {ResolvedCrawlOptions} */ (out);
}

/** API-only values a mistake would silently default (`dryRun: "yes"`) or turn into a deep TypeError (`signal: {}`). @param {Record<string, unknown>} input @param {string | undefined} source */
function checkApiValues(input, source) {
  /** @type {[string, (value: unknown) => boolean, string][]} */ const checks = [
    ['dryRun', (value) => typeof value === 'boolean', 'true or false'],
    ['signal', isAbortSignal, 'an AbortSignal'],
    ['retryDelay', (value) => typeof value === 'number' && Number.isFinite(value) && value >= 0, 'a number of milliseconds, at least 0'],
    ['threadsFrom', (value) => Number.isSafeInteger(value) && /** @type {number} */ (value) >= 0, 'a whole number, at least 0'],
    ['early', (value) => typeof value === 'boolean' || value === 'always', 'true, false or "always"'],
    ['env', (value) => isPlainObject(value), 'an object of environment variables'],
    ['stdin', (value) => typeof (/** @type {{ on?: unknown }} */ (value)?.on) === 'function', 'a readable stream'],
    ['now', (value) => typeof value === 'function', 'a function returning milliseconds since the epoch'],
  ];
  for (const [key, ok, what] of checks) {
    // null is "not given", as undefined is
    if (input[key] != null && !ok(input[key])) throw fail(`"${key}" must be ${what}, got ${describe(input[key])}`, source);
  }
}

/** @param {unknown} value */ const isPlainObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);

/** @param {unknown} value */
function isAbortSignal(value) {
  if (value instanceof AbortSignal) return true;
  const signal = /** @type {Record<string, unknown> | null} */ (isPlainObject(value) ? value : null);
  return !!signal && typeof signal.aborted === 'boolean' && typeof signal.addEventListener === 'function' && typeof signal.removeEventListener === 'function';
}

/** JSON where it can, else as a JS config writes it (10n, /re/, a function). @param {unknown} value @returns {string} */
function shownValue(value) {
  const bare = (/** @type {string} */ text) => `\u0000${text}\u0000`;
  try {
    const json = JSON.stringify(value, (_key, item) => {
      if (typeof item === 'bigint') return bare(`${item}n`);
      if (item instanceof RegExp) return bare(String(item));
      if (typeof item === 'function') return bare('a function');
      if (typeof item === 'symbol') return bare(String(item));
      return item;
    });
    return json === undefined ? String(value) : json.replace(/"\\u0000(.*?)\\u0000"/g, (_match, text) => JSON.parse(`"${text}"`));
  } catch {
    return describe(value); // a cycle
  }
}

/** JSON when short, else the value's kind. @param {unknown} value */
function describe(value) {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value); // JSON says null for NaN and Infinity
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? String(value);
  return Array.isArray(value) ? 'a list' : `an object (${Object.keys(value).slice(0, 5).join(', ') || 'no keys'})`;
}

/** A wrong seam is a UsageError naming it, never a deep TypeError or a silent fall-back to HTTP. @param {unknown} options */
export function checkCrawlerSeams(options) {
  if (!isPlainObject(options)) throw new UsageError(`crawl options must be an object ({ roots, out, ... }), got ${describe(options)}`);
  const { onEvent, loader, transforms, target } = /** @type {Record<string, unknown>} */ (options);
  if (onEvent !== undefined && typeof onEvent !== 'function') throw new UsageError(`"onEvent" must be a function, got ${describe(onEvent)}`);
  if (loader !== undefined) checkMethods('loader', loader, ['load'], ['close']);
  if (target !== undefined) checkMethods('target', target, ['init', 'write', 'remove', 'commit', 'abort'], ['existing', 'reserve']);
  if (transforms !== undefined) {
    if (!Array.isArray(transforms)) throw new UsageError(`"transforms" must be a list of { name, concurrency?, run(page, run) }, got ${describe(transforms)}`);
    transforms.forEach((transform, index) => checkTransform(transform, `transforms[${index}]`));
  }
}

/** @param {string} what @param {unknown} value @param {string[]} required @param {string[]} optional */
function checkMethods(what, value, required, optional) {
  const object = /** @type {Record<string, unknown>} */ (value);
  if (typeof value !== 'object' || value === null) throw new UsageError(`"${what}" must be an object with ${required.map((name) => `${name}()`).join(', ')}, got ${describe(value)}`);
  for (const name of required) {
    if (typeof object[name] !== 'function') throw new UsageError(`"${what}" has no ${name}() method (it needs ${required.map((n) => `${n}()`).join(', ')})`);
  }
  for (const name of optional) {
    if (object[name] !== undefined && typeof object[name] !== 'function') throw new UsageError(`"${what}".${name} must be a function when given, got ${describe(object[name])}`);
  }
}

/** @param {unknown} transform @param {string} label */
function checkTransform(transform, label) {
  if (!isPlainObject(transform)) throw new UsageError(`${label} must be { name, concurrency?, run(page, run) }, got ${describe(transform)}`);
  const step = /** @type {Record<string, unknown>} */ (transform);
  if (typeof step.name !== 'string' || step.name === '') throw new UsageError(`${label} has no "name" (a non-empty string)`);
  if (typeof step.run !== 'function') throw new UsageError(`${label} ("${step.name}") has no run(page, run) function`);
  if (step.concurrency !== undefined && !(Number.isSafeInteger(step.concurrency) && /** @type {number} */ (step.concurrency) >= 1)) {
    throw new UsageError(`${label} ("${step.name}"): "concurrency" must be a whole number, at least 1, got ${describe(step.concurrency)}`);
  }
  for (const name of ['open', 'close']) {
    if (step[name] !== undefined && typeof step[name] !== 'function') throw new UsageError(`${label} ("${step.name}"): "${name}" must be a function when given`);
  }
}
