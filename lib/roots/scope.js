// @ts-check
import { UsageError } from '../errors.js';
import { normalizeUrl } from '../url.js';

/**
 * @typedef {{ decision: 'crawl' | 'dynamic' | 'excluded', pattern?: string, root?: string }} ScopeDecision
 * @typedef {{ source: string, absolute: string, regex: RegExp, excluded?: Readonly<ScopeDecision>, included?: Readonly<ScopeDecision> }} CompiledPattern
 */

/** "/..." is a path on each root's origin, else an absolute URL; a prefix of the canonical URL, "*" any run of characters. @param {string} pattern @param {string[]} origins @returns {CompiledPattern[]} */
export function compilePattern(pattern, origins) {
  if (typeof pattern !== 'string' || pattern.length === 0) {
    throw new UsageError('scope pattern must be a non-empty string');
  }
  const absolutes = pattern.startsWith('/')
    ? origins.map((origin) => origin + pattern)
    : [pattern];
  return absolutes.map((absolute) => {
    const normalized = normalizeUrl(absolute);
    if (!normalized) {
      throw new UsageError(`invalid scope pattern "${pattern}": use a path starting with "/" or an absolute http(s) URL`);
    }
    // A bare origin keeps its "/", so "http://h:8080" cannot match "http://h:8080.evil.example/".
    const text = normalized;
    const regex = new RegExp('^' + text.split('*').map(escapeRegExp).join('.*'));
    return { source: pattern, absolute: text, regex };
  });
}

/** Shown as /source/ in decisions and the manifest. @param {string} source @returns {CompiledPattern} */
export function compileRegex(source) {
  try {
    const shown = `/${source}/`;
    return { source: shown, absolute: shown, regex: new RegExp(source) };
  } catch (error) {
    throw new UsageError(`invalid scope regular expression ${JSON.stringify(source)}: ${/** @type {Error} */ (error).message}`);
  }
}

/** @param {string} text */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A root's default scope: its directory and below. @param {string} root canonical root URL */
export function defaultScopeOf(root) {
  const url = new URL(root);
  const dir = url.pathname.slice(0, url.pathname.lastIndexOf('/') + 1);
  return `${url.origin}${dir}`;
}

/** Up to this many roots are compared one by one. */
const FEW_ROOTS = 8;

/** @type {Readonly<ScopeDecision>} */ const DYNAMIC = Object.freeze({ decision: 'dynamic' });

export class Scope {
  /**
   * @param {{ roots: string[], include?: string[], exclude?: string[], includeRegex?: string[], excludeRegex?: string[], listed?: Iterable<string> }} options
   *   roots: canonical, each bringing its directory into scope when there is no include; listed: from sitemaps or URL lists, in scope unless excluded
   */
  constructor({ roots, include = [], exclude = [], includeRegex = [], excludeRegex = [], listed = [] }) {
    this.roots = roots;
    this.listed = new Set(listed);
    const origins = [...new Set([...roots, ...this.listed].map((root) => new URL(root).origin))];
    /** @type {CompiledPattern[]} */ this.include = include.length + includeRegex.length > 0
      ? [...include.flatMap((pattern) => compilePattern(pattern, origins)), ...includeRegex.map(compileRegex)]
      : roots.map((root) => {
        const absolute = defaultScopeOf(root);
        return { source: absolute, absolute, regex: new RegExp('^' + escapeRegExp(absolute)) };
      });
    this.exclude = [...exclude.flatMap((pattern) => compilePattern(pattern, origins)), ...excludeRegex.map(compileRegex)];
    this.rootSet = new Set(roots);
    // Every link is checked against both: a few roots are compared, and no set is asked that is empty, so a link's URL is not hashed.
    this.fewRoots = this.rootSet.size <= FEW_ROOTS ? [...this.rootSet] : null;
    this.anyListed = this.listed.size > 0;
  }

  /** @param {string} url canonical URL @returns {ScopeDecision} */
  decide(url) {
    // Called for every link: decisions that name no URL are made once, frozen.
    for (const pattern of this.exclude) {
      if (pattern.regex.test(url)) return (pattern.excluded ??= Object.freeze({ decision: /** @type {const} */ ('excluded'), pattern: pattern.source }));
    }
    if (this.fewRoots ? this.fewRoots.includes(url) : this.rootSet.has(url)) return { decision: 'crawl', root: url, pattern: 'root' };
    if (this.anyListed && this.listed.has(url)) return { decision: 'crawl', root: url, pattern: 'listed' };
    for (const pattern of this.include) {
      if (pattern.regex.test(url)) return (pattern.included ??= Object.freeze({ decision: /** @type {const} */ ('crawl'), pattern: pattern.source }));
    }
    return DYNAMIC;
  }

  /** @param {string} url */
  inScope(url) {
    return this.decide(url).decision === 'crawl';
  }

  toJSON() {
    return {
      include: this.include.map((pattern) => pattern.absolute),
      exclude: this.exclude.map((pattern) => pattern.absolute),
    };
  }
}
