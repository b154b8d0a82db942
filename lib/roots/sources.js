// @ts-check
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { gunzipSync } from 'node:zlib';
import { Parser } from '../document/htmlparser.js';
import { AbortError, PrerenderError, UsageError } from '../errors.js';
import { normalizeUrl } from '../url.js';
import { defaultLoader } from '../fetch/index.js';

/** Roots from outside the site's links: sitemaps (urlset, index, gzipped) and URL lists (file or stdin). */

export class SitemapError extends PrerenderError {
  code = 'SITEMAP';
}

const MAX_SITEMAP_BYTES = 256 * 1024 * 1024; // decompressed; the protocol's own limit is 50 MB
/** Above the protocol's 50 MB, compressed or not. */
export const MAX_SITEMAP_FETCH_BYTES = 64 * 1024 * 1024;
const MAX_INDEX_DEPTH = 4;
/** Sitemaps read in one run at most: indexes nest, and a trap grows without end. */
export const MAX_SITEMAPS = 1000;

/**
 * Only the sitemap namespace's <loc> counts (unprefixed or the root's prefix), never an extension's <image:loc>.
 * @param {string} xml @returns {{ index: boolean, locs: string[], lastmods: (string | undefined)[], root: string | null }}
 *   root: the root element's name ("urlset", "sm:sitemapindex", "html"...); lastmods: each loc's <lastmod>, as written
 */
export function parseSitemap(xml) {
  let index = false;
  /** @type {string | null} */ let root = null;
  /** @type {string | null} the root element's prefix, "" for none */
  let prefix = null;
  let locTag = 'loc';
  let lastmodTag = 'lastmod';
  let urlTag = 'url';
  /** @type {string[]} */ const locs = [];
  /** @type {(string | undefined)[]} */ const lastmods = [];
  /** The first loc of the <url> entry being read, and its <lastmod>. */
  let entryStart = 0;
  /** @type {string | null} */ let lastmod = null;
  let depth = 0;
  let text = '';
  const parser = new Parser({
    onopentag(name) {
      if (prefix === null) {
        const colon = name.indexOf(':');
        const local = name.slice(colon + 1);
        prefix = colon < 0 ? '' : name.slice(0, colon);
        root = name;
        if (local === 'urlset' || local === 'sitemapindex') {
          index = local === 'sitemapindex';
          locTag = prefix ? `${prefix}:loc` : 'loc';
          lastmodTag = prefix ? `${prefix}:lastmod` : 'lastmod';
          urlTag = prefix ? `${prefix}:url` : 'url';
        }
      }
      if (name === urlTag) {
        entryStart = locs.length;
        lastmod = null;
      }
      if (name === locTag || name === lastmodTag) {
        if (depth === 0) text = '';
        depth++;
      }
    },
    ontext(chunk) {
      if (depth > 0) text += chunk;
    },
    onclosetag(name) {
      if (name === urlTag && lastmod !== null) for (let i = entryStart; i < locs.length; i++) lastmods[i] = lastmod;
      if ((name !== locTag && name !== lastmodTag) || depth === 0) return;
      depth--;
      if (depth > 0) return;
      const value = text.trim();
      if (name === lastmodTag) lastmod = value;
      else if (value) locs.push(value);
    },
  }, { xmlMode: true, decodeEntities: true, recognizeCDATA: true });
  parser.write(xml);
  parser.end();
  lastmods.length = locs.length;
  return { index, locs, lastmods, root };
}

/** An HTML fallback or feed answered 200 is not an empty sitemap. @param {string | null} root parseSitemap's root */
export const isSitemapRoot = (root) => root !== null && /^([^:]+:)?(urlset|sitemapindex)$/.test(root);

/** @param {Buffer} body */
function sitemapText(body) {
  if (body[0] === 0x1f && body[1] === 0x8b) {
    return gunzipSync(body, { maxOutputLength: MAX_SITEMAP_BYTES }).toString('utf8');
  }
  return body.toString('utf8');
}

/**
 * Sitemaps' page URLs, indexes followed, canonical and deduplicated.
 * @param {string[]} sitemaps @param {{ fetchPage: (url: string) => Promise<import('../fetch/http.js').LoadResult>,
 *   onWarning?: (url: string, message: string) => void, maxUrls?: number, onCut?: () => void, dates?: Map<string, string> }} context
 *   maxUrls: stop once this many are listed; onCut: some sitemaps were not read, so the crawl is not complete @returns {Promise<string[]>}
 */
export async function loadSitemaps(sitemaps, { fetchPage, onWarning = () => {}, maxUrls = Infinity, onCut = () => {}, dates }) {
  /** @type {Set<string>} */ const urls = new Set();
  /** @type {Set<string>} */ const seen = new Set();
  let stopped = false;
  /** Past --max-pages URLs or MAX_SITEMAPS read. @param {string} url */
  const enough = (url) => {
    if (stopped) return true;
    const why = urls.size >= maxUrls ? `they list ${maxUrls} URLs already (--max-pages)` : seen.size >= MAX_SITEMAPS ? `${MAX_SITEMAPS} sitemaps were read` : '';
    if (!why) return false;
    stopped = true;
    onWarning(url, `no more sitemaps are read: ${why}; the URLs of those not read are not crawled, and nothing is removed`);
    onCut();
    return true;
  };

  /** @param {string} url @param {number} depth @param {boolean} top */ const visit = async (url, depth, top) => {
    if (seen.has(url) || enough(url)) return;
    seen.add(url);
    let body;
    // Relative entries are read against where the sitemap was found, after its redirects.
    let base = url;
    try {
      let response = await fetchPage(url);
      for (let hops = 0; response.location !== undefined && hops < 5; hops++) {
        base = /** @type {string} */ (normalizeUrl(response.location, base));
        response = await fetchPage(base);
      }
      if (response.location !== undefined) throw new Error('too many redirects');
      body = response.body;
    } catch (error) {
      if (error instanceof AbortError) throw error; // interrupted: not a sitemap's fault
      const message = `cannot fetch sitemap ${url}: ${/** @type {Error} */ (error).message}`;
      if (top) throw new SitemapError(message, { cause: error });
      onWarning(url, message);
      return;
    }
    let parsed;
    try {
      parsed = parseSitemap(sitemapText(body));
    } catch (error) {
      const message = `cannot read sitemap ${url}: ${/** @type {Error} */ (error).message}`;
      if (top) throw new SitemapError(message, { cause: error });
      onWarning(url, message);
      return;
    }
    if (!isSitemapRoot(parsed.root)) {
      // Given on the command line: a mistake to stop on (exit 2), not an empty sitemap.
      const message = `${url} is not a sitemap: ${parsed.root === null ? 'it holds no XML element' : `its root element is <${parsed.root}>`}, not <urlset> or <sitemapindex>`;
      if (top) throw new SitemapError(message);
      onWarning(url, message);
      return;
    }
    if (parsed.locs.length === 0) onWarning(url, `sitemap ${url} lists no URLs`);
    for (const [i, loc] of parsed.locs.entries()) {
      const canonical = normalizeUrl(loc, base);
      if (!canonical) {
        onWarning(url, `sitemap entry is not an http(s) URL: ${JSON.stringify(loc)}`);
      } else if (parsed.index) {
        if (depth >= MAX_INDEX_DEPTH) onWarning(url, `sitemap index nested deeper than ${MAX_INDEX_DEPTH}: ${canonical} skipped`);
        else await visit(canonical, depth + 1, false);
      } else {
        urls.add(canonical); // every URL of a sitemap read: the crawl's --max-pages says which are not crawled
        const lastmod = parsed.lastmods[i];
        if (dates && lastmod !== undefined) dates.set(canonical, lastmod);
      }
    }
  };
  for (const sitemap of sitemaps) await visit(sitemap, 0, true);
  return [...urls];
}

/** Blank lines and "#" comments skipped. @param {string} file a path, or "-" for `stdin` @param {{ stdin?: NodeJS.ReadableStream, option?: string }} [context] option: for messages @returns {Promise<string[]>} */
export async function readUrlList(file, context = {}) {
  const name = file === '-' ? 'stdin' : file;
  const input = file === '-' ? (context.stdin ?? process.stdin) : createReadStream(file);
  /** @type {string[]} */ const urls = [];
  let lineNumber = 0;
  try {
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      lineNumber++;
      const text = line.trim();
      if (text === '' || text.startsWith('#')) continue;
      const canonical = normalizeUrl(text);
      if (!canonical) throw new UsageError(`${name}:${lineNumber}: not an absolute http(s) URL: ${JSON.stringify(text.slice(0, 200))}`);
      urls.push(canonical);
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`cannot read ${context.option ?? '--urls'} ${name}: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
  return [...new Set(urls)];
}

/**
 * Canonical and deduplicated; sitemaps are fetched with their own pool and a size cap fit for them.
 * @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {(url: string, message: string) => void} onWarning
 * @param {() => void} [onCut] @param {Map<string, string>} [dates] the sitemaps' <lastmod> by URL @returns {Promise<string[]>}
 */
export async function loadListedRoots(o, onWarning, onCut = () => {}, dates = undefined) {
  /** @type {string[]} */ const listed = [];
  if (o.sitemap.length > 0) {
    const loader = defaultLoader({
      concurrency: 2,
      timeout: o.timeout,
      retries: o.retries,
      maxPageBytes: Math.max(o.maxPageBytes, MAX_SITEMAP_FETCH_BYTES),
      headers: o.headers,
      retryDelay: o.retryDelay,
    });
    try {
      // One by one: a spread of 125,000 URLs or more overflows the call stack.
      for (const url of await loadSitemaps(o.sitemap, { fetchPage: (url) => loader.load(url, { signal: o.signal }), onWarning, maxUrls: o.maxPages, onCut, dates })) listed.push(url);
    } finally {
      await loader.close();
    }
  }
  if (o.urls !== undefined) for (const url of await readUrlList(o.urls, { stdin: o.stdin })) listed.push(url);
  return [...new Set(listed)];
}
