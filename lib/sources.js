// @ts-check
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { gunzipSync } from 'node:zlib';
import { decodeXML } from 'entities';
import { PrerenderError, UsageError } from './errors.js';
import { normalizeUrl } from './url.js';
import { defaultLoader } from './load/index.js';

/**
 * Roots from outside the site's own links: sitemaps (urlset, sitemap index,
 * gzipped) and URL lists (a file or stdin, one URL per line).
 */

export class SitemapError extends PrerenderError {
  code = 'SITEMAP';
}

const MAX_SITEMAP_BYTES = 256 * 1024 * 1024; // decompressed; the protocol's own limit is 50 MB
/** Largest sitemap body fetched (compressed or not): above the protocol's 50 MB. */
export const MAX_SITEMAP_FETCH_BYTES = 64 * 1024 * 1024;
const MAX_INDEX_DEPTH = 4;

/**
 * The <loc> values of a sitemap document, and whether it is an index.
 * @param {string} xml
 * @returns {{ index: boolean, locs: string[] }}
 */
export function parseSitemap(xml) {
  const index = /<(?:[\w-]+:)?sitemapindex[\s>]/.test(xml);
  const locs = [];
  // <loc> of the sitemap namespace (unprefixed, or "sm:"-style when the whole
  // document is prefixed); never <image:loc>, <video:loc>... of extensions.
  const prefix = /<([\w-]+):(?:urlset|sitemapindex)[\s>]/.exec(xml)?.[1];
  const tag = prefix ? `${prefix}:loc` : 'loc';
  const pattern = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g');
  for (const match of xml.matchAll(pattern)) {
    let value = match[1].trim();
    const cdata = /^<!\[CDATA\[([\s\S]*)\]\]>$/.exec(value);
    value = cdata ? cdata[1].trim() : decodeXML(value);
    if (value) locs.push(value);
  }
  return { index, locs };
}

/**
 * @param {Buffer} body
 */
function sitemapText(body) {
  if (body[0] === 0x1f && body[1] === 0x8b) {
    return gunzipSync(body, { maxOutputLength: MAX_SITEMAP_BYTES }).toString('utf8');
  }
  return body.toString('utf8');
}

/**
 * Fetch sitemaps (following sitemap indexes) and return their page URLs, canonical and deduplicated.
 * @param {string[]} sitemaps
 * @param {{
 *   fetchPage: (url: string) => Promise<import('./load/http.js').LoadResult>,
 *   onWarning?: (url: string, message: string) => void,
 * }} context
 * @returns {Promise<string[]>}
 */
export async function loadSitemaps(sitemaps, { fetchPage, onWarning = () => {} }) {
  /** @type {Set<string>} */
  const urls = new Set();
  /** @type {Set<string>} */
  const seen = new Set();

  /**
   * @param {string} url
   * @param {number} depth
   * @param {boolean} top
   */
  const visit = async (url, depth, top) => {
    if (seen.has(url)) return;
    seen.add(url);
    let body;
    try {
      let response = await fetchPage(url);
      for (let hops = 0; response.location !== undefined && hops < 5; hops++) {
        response = await fetchPage(/** @type {string} */ (normalizeUrl(response.location, url)));
      }
      if (response.location !== undefined) throw new Error('too many redirects');
      body = response.body;
    } catch (error) {
      const message = `cannot fetch sitemap ${url}: ${error.message}`;
      if (top) throw new SitemapError(message, { cause: error });
      onWarning(url, message);
      return;
    }
    let parsed;
    try {
      parsed = parseSitemap(sitemapText(body));
    } catch (error) {
      const message = `cannot read sitemap ${url}: ${error.message}`;
      if (top) throw new SitemapError(message, { cause: error });
      onWarning(url, message);
      return;
    }
    if (parsed.locs.length === 0) onWarning(url, `sitemap ${url} lists no URLs (is it a sitemap?)`);
    for (const loc of parsed.locs) {
      const canonical = normalizeUrl(loc, url);
      if (!canonical) {
        onWarning(url, `sitemap entry is not an http(s) URL: ${JSON.stringify(loc)}`);
      } else if (parsed.index) {
        if (depth >= MAX_INDEX_DEPTH) onWarning(url, `sitemap index nested deeper than ${MAX_INDEX_DEPTH}: ${canonical} skipped`);
        else await visit(canonical, depth + 1, false);
      } else {
        urls.add(canonical);
      }
    }
  };
  for (const sitemap of sitemaps) await visit(sitemap, 0, true);
  return [...urls];
}

/**
 * Read a URL list: one absolute URL per line; blank lines and "#" comments are skipped.
 * @param {string} file a path, or "-" for `stdin`
 * @param {{ stdin?: NodeJS.ReadableStream }} [context]
 * @returns {Promise<string[]>}
 */
export async function readUrlList(file, context = {}) {
  const name = file === '-' ? 'stdin' : file;
  const input = file === '-' ? (context.stdin ?? process.stdin) : createReadStream(file);
  /** @type {string[]} */
  const urls = [];
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
    throw new UsageError(`cannot read --urls ${name}: ${error.message}`, { cause: error });
  }
  return [...new Set(urls)];
}

/**
 * The URLs of --sitemap and --urls, canonical and deduplicated. Sitemaps are
 * fetched with their own connection pool and a size cap fit for sitemaps.
 * @param {import('./options.js').ResolvedCrawlOptions} o
 * @param {(url: string, message: string) => void} onWarning
 * @returns {Promise<string[]>}
 */
export async function loadListedRoots(o, onWarning) {
  /** @type {string[]} */
  const listed = [];
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
      listed.push(...await loadSitemaps(o.sitemap, { fetchPage: (url) => loader.load(url, { signal: o.signal }), onWarning }));
    } finally {
      await loader.close();
    }
  }
  if (o.urls !== undefined) listed.push(...await readUrlList(o.urls, { stdin: o.stdin }));
  return [...new Set(listed)];
}
