// @ts-check
/**
 * The partitioned front's one routing rule: `prerender serve --origin` asks `decide()` per request, and the nginx and Varnish
 * generators write the same tables. Static: a GET or HEAD whose URL is in the manifest, or whose path names a file of the tree.
 * The origin's: other queries on a crawled path, directories that exist only because of the tree (index.php/), other methods,
 * --dynamic patterns. Never either: the manifest, the front's own configurations, hidden files, targets that could leave the tree.
 */
import { UsageError } from '../errors.js';
import { FRONT_FILES } from './front-files.js';
import { MANIFEST_NAME } from '../output/manifest/index.js';
import { compilePattern } from '../roots/scope.js';
import { ABSOLUTE_FORM, parseRequestTarget } from '../serve/paths.js';
import { canonicalKey, parseHttpUrl } from '../url.js';

export { FRONT_FILES };

/** What the tree never serves and the front never proxies, by path. */
const PRIVATE = new Set([MANIFEST_NAME, ...FRONT_FILES]);
/** The others a crawl records are the origin's to give. */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * @typedef {{ kind: 'refuse', status: 400 | 404, reason: string } | { kind: 'redirect', status: number, location: string }
 *   | { kind: 'page', file: string } | { kind: 'tree', target: import('../serve/paths.js').ParsedTarget }
 *   | { kind: 'origin', reason: 'method' | 'dynamic' | 'unknown' }} Route tree: a path that may name a file of the tree, else the origin's
 * @typedef {{ status: number, location: string }} Redirect
 */

/** Origin-form, or absolute-form with its authority dropped: the authority never comes from the client. @param {string | undefined} url */
export function originForm(url) {
  if (typeof url !== 'string' || url === '') return null;
  if (url.charCodeAt(0) === 47 /* / */) return url;
  const absolute = ABSOLUTE_FORM.exec(url); // the same check as serve's: no userinfo, no empty host
  if (!absolute) return null;
  const rest = absolute[1] ?? '';
  return rest.startsWith('/') ? rest : `/${rest}`;
}

export class RouteTable {
  /**
   * @param {{ site: string, pages?: Map<string, string>, redirects?: Map<string, Redirect>, dynamic?: string[], warnings?: string[] }} options
   *   site: http://host[:port] of the manifest's URLs; pages and redirects: by path and query as the crawl keyed them
   */
  constructor({ site, pages = new Map(), redirects = new Map(), dynamic = [], warnings = [] }) {
    this.site = site;
    this.pages = pages;
    this.redirects = redirects;
    this.warnings = warnings;
    this.dynamicPatterns = dynamic;
    this.dynamic = dynamic.flatMap((pattern) => {
      try {
        return compilePattern(pattern, [site]);
      } catch (error) {
        throw new UsageError(`--dynamic ${JSON.stringify(pattern)}: ${/** @type {Error} */ (error).message.replace(/^invalid scope pattern "[^"]*": /, '')}`, { cause: error });
      }
    });
  }

  /** @param {import('../output/manifest/schema.js').Manifest} manifest @param {{ dynamic?: string[], site?: string }} [options] */
  static fromManifest(manifest, options = {}) {
    const first = manifest.roots?.[0] ?? manifest.pages.find((p) => typeof p?.url === 'string')?.url;
    const site = options.site ?? (first ? parseHttpUrl(first)?.origin : undefined);
    if (!site) throw new UsageError('the manifest names no crawl root: cannot tell which site its URLs are on');
    /** @type {string[]} */ const warnings = [];
    /** @type {Map<string, string>} */ const pages = new Map();
    for (const page of manifest.pages) {
      if (!page || typeof page.url !== 'string' || typeof page.file !== 'string') continue; // failed pages have no file
      const key = siteKey(page.url, site);
      if (key !== null && !PRIVATE.has(page.file)) pages.set(key, page.file);
    }
    /** @type {Map<string, Redirect>} */ const redirects = new Map();
    for (const r of manifest.redirects ?? []) {
      if (!r || typeof r.url !== 'string' || typeof r.location !== 'string') continue;
      const key = siteKey(r.url, site);
      const target = parseHttpUrl(r.location);
      if (key === null || pages.has(key)) continue;
      if (!target || !REDIRECT_STATUSES.has(r.status)) {
        warnings.push(`redirect ${r.url} (${r.status} to ${r.location}) left to the origin: only 301, 302, 303, 307 and 308 to an http(s) URL are answered by the front`);
        continue;
      }
      // Same site: a path, so the visitor stays on the front.
      redirects.set(key, { status: r.status, location: target.origin === site ? canonicalKey(target).slice(site.length) : canonicalKey(target) });
    }
    return new RouteTable({ site, pages, redirects, dynamic: options.dynamic, warnings });
  }

  /** @param {string | undefined} method @param {string | undefined} url the request target as received @returns {Route} */
  decide(method, url) {
    const raw = originForm(url);
    if (raw === null) return { kind: 'refuse', status: 400, reason: 'request target must be a path or an absolute http(s) URL' };
    const target = parseRequestTarget(raw);
    if (target.ok === false) {
      const rejected = /** @type {import('../serve/paths.js').RejectedTarget} */ (target);
      // A segment longer than any file name of a tree cannot be the tree's: the origin may know it.
      if (rejected.code !== 'long') return { kind: 'refuse', status: rejected.status, reason: rejected.reason };
    } else if (PRIVATE.has(target.path)) {
      return { kind: 'refuse', status: 404, reason: 'never served' };
    }
    if (method !== 'GET' && method !== 'HEAD') return { kind: 'origin', reason: 'method' };
    const key = isCanonical(raw) ? raw : siteKey(this.site + raw, this.site);
    if (key === null) return { kind: 'refuse', status: 400, reason: 'not a URL' };
    if (this.dynamic.length > 0) {
      const absolute = this.site + key;
      for (const pattern of this.dynamic) if (pattern.regex.test(absolute)) return { kind: 'origin', reason: 'dynamic' };
    }
    const redirect = this.redirects.get(key);
    if (redirect) return { kind: 'redirect', status: redirect.status, location: redirect.location };
    const file = this.pages.get(key);
    if (file !== undefined) return { kind: 'page', file };
    if (target.ok) return { kind: 'tree', target };
    return { kind: 'origin', reason: 'unknown' };
  }
}

/** Nothing WHATWG URL or the crawl would encode or decode, no dot segment. */
const PLAIN_TARGET = /^\/[A-Za-z0-9\-._~!$&()*+,;=:@/]*(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/?]+)?$/;
const DOT_SEGMENT = /\/\.\.?(?:\/|\?|$)/;

/** Most requests are their own key: then no URL is parsed. @param {string} raw */
function isCanonical(raw) {
  return PLAIN_TARGET.test(raw) && !DOT_SEGMENT.test(raw);
}

/** Its path and query after the crawl's normalisation, when on `site`; else null. @param {string} url @param {string} site */
export function siteKey(url, site) {
  const parsed = parseHttpUrl(url);
  if (!parsed || parsed.origin !== site) return null;
  return canonicalKey(parsed).slice(site.length);
}
