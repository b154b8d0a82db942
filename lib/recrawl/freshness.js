// @ts-check
import { compilePattern } from '../roots/scope.js';

/**
 * When a stored page is trusted without asking: a --fresh rule, the origin's Cache-Control (--honour-cache-control), or a sitemap
 * <lastmod> no later than the copy's `fetched`. Times are whole seconds since the epoch; `until` Infinity is never.
 * @typedef {import('../options/fresh-rules.js').FreshRule} FreshRule @typedef {{ fetched?: number, maxAge?: number, immutable?: boolean }} Dated
 * @typedef {{ by: 'rule', rule: FreshRule, until: number } | { by: 'cache-control', header: string, until: number } | { by: 'lastmod', lastmod: number, until: number }} Freshness
 */

/** RFC 9111; none with no-cache, no-store or private, which forbid reuse. @param {Record<string, string | string[] | undefined>} headers @returns {{ maxAge?: number, immutable?: true }} */
export function cacheLifetime(headers) {
  const raw = headers['cache-control'];
  const value = (Array.isArray(raw) ? raw.join(',') : raw ?? '').toLowerCase();
  if (value === '') return {};
  /** @type {Map<string, string>} */ const directives = new Map();
  for (const part of value.split(',')) {
    const [name, arg = ''] = part.trim().split('=', 2);
    if (name) directives.set(name, arg.replace(/^"|"$/g, ''));
  }
  if (directives.has('no-cache') || directives.has('no-store') || directives.has('private')) return {};
  if (directives.has('immutable')) return { immutable: true };
  const seconds = Number(directives.get('s-maxage') ?? directives.get('max-age'));
  const ageHeader = headers.age;
  const age = Number(Array.isArray(ageHeader) ? ageHeader[0] : ageHeader ?? 0);
  const left = Number.isSafeInteger(seconds) ? seconds - (Number.isSafeInteger(age) && age > 0 ? age : 0) : 0;
  return left > 0 ? { maxAge: left } : {};
}

/** @param {{ rules: FreshRule[], honourCacheControl: boolean, origins: string[] }} options origins: for rules that are paths */
export function compileFreshness({ rules, honourCacheControl, origins }) {
  const compiled = rules.map((rule) => ({ rule, patterns: compilePattern(rule.pattern, origins) }));
  return {
    active: compiled.length > 0 || honourCacheControl,
    /** @param {string} url */
    ruleFor(url) {
      for (const { rule, patterns } of compiled) if (patterns.some((pattern) => pattern.regex.test(url))) return rule;
      return null;
    },
    /** The first matching rule decides alone: the user said how long to trust a page. @param {string} url @param {Dated} stored @param {number} now @returns {Freshness | null} */
    freshness(url, stored, now) {
      const rule = this.ruleFor(url);
      if (rule) {
        if (rule.seconds === Infinity) return { by: 'rule', rule, until: Infinity };
        if (stored.fetched === undefined) return null;
        const until = stored.fetched + rule.seconds;
        return now < until ? { by: 'rule', rule, until } : null;
      }
      if (!honourCacheControl) return null;
      if (stored.immutable) return { by: 'cache-control', header: 'immutable', until: Infinity };
      if (stored.maxAge === undefined || stored.fetched === undefined) return null;
      const until = stored.fetched + stored.maxAge;
      return now < until ? { by: 'cache-control', header: `max-age=${stored.maxAge}`, until } : null;
    },
  };
}

/** @param {number | undefined} lastmod seconds @param {Dated} stored @returns {Freshness | null} */
export function datedFresh(lastmod, stored) {
  if (lastmod === undefined || stored.fetched === undefined || lastmod > stored.fetched) return null;
  return { by: 'lastmod', lastmod, until: Infinity };
}

/** W3C datetime in seconds; undefined when it is not one. @param {string} text */
export function parseLastmod(text) {
  const value = text.trim();
  if (!/^\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?$/.test(value)) return undefined;
  // A date alone is its first second, in UTC.
  const whole = value.length === 4 ? `${value}-01-01T00:00:00Z` : value.length === 7 ? `${value}-01T00:00:00Z` : value.length === 10 ? `${value}T00:00:00Z` : value;
  const ms = Date.parse(whole);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/** Values that are not W3C dates are counted, not kept. @param {Map<string, string>} written by URL, as the sitemaps have them */
export function lastmodSeconds(written) {
  /** @type {Map<string, number>} */ const dates = new Map();
  let unusable = 0;
  for (const [url, text] of written) {
    const seconds = parseLastmod(text);
    if (seconds === undefined) unusable++;
    else dates.set(url, seconds);
  }
  return { dates, unusable };
}

/** @param {Freshness} fresh */
export function describeFreshness(fresh) {
  const until = fresh.until === Infinity ? 'for good' : `until ${new Date(fresh.until * 1000).toISOString()}`;
  if (fresh.by === 'rule') return `--fresh ${fresh.rule.pattern} ${fresh.rule.duration}: fresh ${until}`;
  if (fresh.by === 'cache-control') return `Cache-Control ${fresh.header} (--honour-cache-control): fresh ${until}`;
  return `sitemap <lastmod> ${new Date(fresh.lastmod * 1000).toISOString()} is no later than the stored copy`;
}
