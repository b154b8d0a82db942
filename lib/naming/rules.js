// @ts-check
import { UsageError } from '../errors.js';
import { compilePattern } from '../roots/scope.js';
import { PLACEHOLDER } from '../options/name-rules.js';

/**
 * --name <pattern> <template>: names for sites that cannot send X-Builder-FileName. The first matching rule wins, a name
 * header beats any, and the result is checked as a name header. Placeholder values are percent-decoded, and a character
 * file names cannot hold becomes "_", "/" too.
 * @typedef {{ pattern: string, template: string }} NameRule
 * @typedef {{ template: string, prefix: string }} MatchedRule prefix: the pattern's fixed path start, which {rest} follows
 * @typedef {{ ruleFor(url: string): MatchedRule | null, templateFor(url: string): string | null, rules: NameRule[] }} NameRules
 */

const UNSAFE_IN_VALUE = /[/\\<>:"|?*\u0000-\u001f\u007f]/g;


/** @param {NameRule[]} rules @param {string[]} origins the roots', for patterns starting with "/" @returns {NameRules} */
export function compileNameRules(rules, origins) {
  const compiled = rules.map((rule) => {
    try {
      return compilePattern(rule.pattern, origins).map((pattern) => ({ regex: pattern.regex, matched: { template: rule.template, prefix: fixedPath(pattern.absolute) } }));
    } catch (error) {
      throw new UsageError(`--name: ${/** @type {Error} */ (error).message}`);
    }
  }).flat();
  /** @param {string} url */ const ruleFor = (url) => compiled.find((pattern) => pattern.regex.test(url))?.matched ?? null;
  return { rules, ruleFor, templateFor: (url) => ruleFor(url)?.template ?? null };
}

/** The path a pattern fixes before its first "*" or its query. @param {string} absolute a normalized pattern URL */
function fixedPath(absolute) {
  const head = absolute.split('*')[0].split('?')[0];
  return /^[a-z]+:\/\/[^/]*(\/.*)$/i.exec(head)?.[1] ?? '/';
}

/** Split on "&" and ";" as CGI reads them: gitweb and every CGI.pm app write "?p=repo.git;a=commit;h=abc". @param {URL} url */
export function queryParams(url) {
  return new URLSearchParams(url.search.slice(1).replace(/;/g, '&'));
}

/** Before the name checks. @param {string} template @param {URL} url @param {string} [prefix] the matched pattern's fixed path, which {rest} follows */
export function expandTemplate(template, url, prefix = '/') {
  const segments = url.pathname.slice(1).split('/').map((segment) => safeValue(segment));
  const path = segments.join('/');
  const dir = segments.slice(0, -1).join('/');
  const last = segments[segments.length - 1];
  const dot = last.lastIndexOf('.');
  const base = dot > 0 ? last.slice(0, dot) : last;
  const ext = dot > 0 ? last.slice(dot + 1) : '';
  /** @type {URLSearchParams | undefined} */ let query;
  return template.replace(PLACEHOLDER, (_, name) => {
    if (name === 'path') return path;
    if (name === 'dir') return dir;
    if (name === 'base') return base;
    if (name === 'ext') return ext;
    if (name === 'rest') return restOf(url.pathname, prefix);
    query ??= queryParams(url);
    return safeValue(query.get(name.slice(6)) ?? '', false);
  });
}

/** The path after `prefix`, its segments made safe; "" when the path does not start so. @param {string} pathname @param {string} prefix */
function restOf(pathname, prefix) {
  if (!pathname.startsWith(prefix)) return '';
  return pathname.slice(prefix.length).split('/').filter((segment) => segment !== '').map((segment) => safeValue(segment)).join('/');
}

/** Decoded; characters file names cannot hold, "/" and the dots of "." or ".." become "_". @param {string} value @param {boolean} [encoded] a raw path segment */
function safeValue(value, encoded = true) {
  const text = (encoded ? decode(value) : value).replace(UNSAFE_IN_VALUE, '_');
  return text === '.' || text === '..' ? text.replace(/\./g, '_') : text;
}

/** @param {string} text */
function decode(text) {
  try {
    return decodeURIComponent(text).normalize('NFC');
  } catch {
    return text;
  }
}
