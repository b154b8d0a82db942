// @ts-check
import { compilePattern } from '../roots/scope.js';

/**
 * When a stored page can be trusted without asking the origin: a --fresh
 * rule of the user, the origin's own Cache-Control (--honour-cache-control),
 * or a sitemap's <lastmod> no later than the stored copy's fetch time.
 * Times are whole seconds since the epoch; the stored copy's is `fetched`,
 * the start of the run that fetched (or revalidated) it.
 *
 * @typedef {import('../options/fresh-rules.js').FreshRule} FreshRule
 * @typedef {{ fetched?: number, maxAge?: number, immutable?: boolean }} Dated
 *   what a stored page says of its age and of the origin's Cache-Control
 * @typedef {{ by: 'rule', rule: FreshRule, until: number } | { by: 'cache-control', header: string, until: number } | { by: 'lastmod', lastmod: number, until: number }} Freshness
 *   until: the second it stops being fresh (Infinity: never)
 */

/**
 * The freshness the origin gave an answer (RFC 9111): s-maxage over max-age,
 * less its Age; immutable counts as fresh for good. None with no-cache,
 * no-store or private, which forbid reuse by a shared store without asking.
 * @param {Record<string, string | string[] | undefined>} headers
 * @returns {{ maxAge?: number, immutable?: true }}
 */
export function cacheLifetime(headers) {
  const raw = headers['cache-control'];
  const value = (Array.isArray(raw) ? raw.join(',') : raw ?? '').toLowerCase();
  if (value === '') return {};
  /** @type {Map<string, string>} */
  const directives = new Map();
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

/**
 * The --fresh rules (and --honour-cache-control) of a run, compiled once.
 * @param {{ rules: FreshRule[], honourCacheControl: boolean, origins: string[] }} options origins: for rules that are paths
 */
export function compileFreshness({ rules, honourCacheControl, origins }) {
  const compiled = rules.map((rule) => ({ rule, patterns: compilePattern(rule.pattern, origins) }));
  return {
    /** Whether any rule or the origin's headers may carry a page. */
    active: compiled.length > 0 || honourCacheControl,
    /**
     * The first rule matching a URL, whatever its stored copy.
     * @param {string} url
     */
    ruleFor(url) {
      for (const { rule, patterns } of compiled) if (patterns.some((pattern) => pattern.regex.test(url))) return rule;
      return null;
    },
    /**
     * Why a stored copy is still fresh at `now`, or null: the first matching
     * rule decides alone (a rule that has expired is not overridden by the
     * origin's headers: the user said how long to trust the page).
     * @param {string} url
     * @param {Dated} stored
     * @param {number} now
     * @returns {Freshness | null}
     */
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

/**
 * A sitemap's <lastmod> says the page has not changed since its stored copy
 * was fetched: that copy is carried.
 * @param {number | undefined} lastmod seconds
 * @param {Dated} stored
 * @returns {Freshness | null}
 */
export function datedFresh(lastmod, stored) {
  if (lastmod === undefined || stored.fetched === undefined || lastmod > stored.fetched) return null;
  return { by: 'lastmod', lastmod, until: Infinity };
}

/**
 * A <lastmod> value (W3C datetime: a date, or a date and time with a zone)
 * in seconds, or undefined when it is not one.
 * @param {string} text
 */
export function parseLastmod(text) {
  const value = text.trim();
  if (!/^\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?$/.test(value)) return undefined;
  // A date alone is its first second, in UTC.
  const whole = value.length === 4 ? `${value}-01-01T00:00:00Z` : value.length === 7 ? `${value}-01T00:00:00Z` : value.length === 10 ? `${value}T00:00:00Z` : value;
  const ms = Date.parse(whole);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/**
 * The sitemaps' <lastmod> values in seconds; those that are not W3C dates are counted, not kept.
 * @param {Map<string, string>} written by URL, as the sitemaps have them
 */
export function lastmodSeconds(written) {
  /** @type {Map<string, number>} */
  const dates = new Map();
  let unusable = 0;
  for (const [url, text] of written) {
    const seconds = parseLastmod(text);
    if (seconds === undefined) unusable++;
    else dates.set(url, seconds);
  }
  return { dates, unusable };
}

/**
 * When a fresh copy stops being fresh, as a message says it.
 * @param {Freshness} fresh
 */
export function describeFreshness(fresh) {
  const until = fresh.until === Infinity ? 'for good' : `until ${new Date(fresh.until * 1000).toISOString()}`;
  if (fresh.by === 'rule') return `--fresh ${fresh.rule.pattern} ${fresh.rule.duration}: fresh ${until}`;
  if (fresh.by === 'cache-control') return `Cache-Control ${fresh.header} (--honour-cache-control): fresh ${until}`;
  return `sitemap <lastmod> ${new Date(fresh.lastmod * 1000).toISOString()} is no later than the stored copy`;
}
