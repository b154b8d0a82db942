// @ts-check
import { UsageError } from '../errors.js';
import { compilePattern } from '../roots/scope.js';

/**
 * --name <pattern> <template>: readable file names for sites that cannot
 * send X-Builder-FileName. For a URL matching the pattern (the syntax of
 * --include), the name comes from the template; the first matching rule
 * wins, and the name header still wins over any rule. The name is then read
 * as a name header would be (a bare name goes in the directory of the URL's
 * path, "/..." is relative to the output root) and goes through the same
 * safety checks and collision handling.
 *
 * Placeholders: {path} the URL's path without its leading "/" ("wiki/doku.php"),
 * {dir} its directory ("wiki", "" at the top), {base} the last segment without
 * its extension ("doku"), {ext} that extension without the dot ("php"),
 * {query.NAME} the value of query parameter NAME ("" when absent). Values
 * are percent-decoded; in a query value, "/", "\" and the characters file
 * names cannot hold become "_".
 *
 * @typedef {{ pattern: string, template: string }} NameRule
 * @typedef {{ templateFor(url: string): string | null, rules: NameRule[] }} NameRules
 */

const PLACEHOLDER = /\{(path|dir|base|ext|query\.[^{}]+)\}/g;
const UNSAFE_IN_VALUE = /[/\\<>:"|?*\u0000-\u001f\u007f]/g;

/**
 * Check the rules of the options (CLI pairs, or config objects/pairs).
 * @param {unknown} input a flat list [pattern, template, ...], or a list of
 *   [pattern, template] pairs or { pattern, template } objects
 * @param {(message: string) => Error} fail
 * @returns {NameRule[]}
 */
export function parseNameRules(input, fail) {
  if (input === undefined) return [];
  if (!Array.isArray(input)) throw fail('--name takes a pattern and a template, e.g. --name "/doku.php?id=*" "{query.id}.html"');
  /** @type {NameRule[]} */
  const rules = [];
  if (input.every((item) => typeof item === 'string')) {
    if (input.length % 2 !== 0) {
      const last = input[input.length - 1];
      // Commander gives --name every argument after it: a root after it is read as one more value.
      const root = /^https?:\/\//i.test(last) ? `; if ${JSON.stringify(last)} is a root, give the roots first (prerender crawl ${last} --name ...) or end --name's values with "--" (--name ... -- ${last})` : '';
      throw fail(`--name takes a pattern and a template each time: got an odd number of values (${input.map((v) => JSON.stringify(v)).join(' ')})${root}`);
    }
    for (let i = 0; i < input.length; i += 2) rules.push({ pattern: input[i], template: input[i + 1] });
  } else {
    for (const item of input) {
      if (Array.isArray(item) && item.length === 2 && item.every((v) => typeof v === 'string')) rules.push({ pattern: item[0], template: item[1] });
      else if (item && typeof item === 'object' && typeof item.pattern === 'string' && typeof item.template === 'string') rules.push({ pattern: item.pattern, template: item.template });
      else throw fail(`"name" must be a list of [pattern, template] pairs or { pattern, template } objects, got ${JSON.stringify(item)}`);
    }
  }
  for (const rule of rules) {
    if (!rule.pattern.startsWith('/') && !/^https?:\/\//i.test(rule.pattern)) throw fail(`--name pattern must be a path starting with "/" or an absolute http(s) URL, got ${JSON.stringify(rule.pattern)}`);
    if (rule.template.trim() === '') throw fail(`--name template for ${JSON.stringify(rule.pattern)} is empty`);
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(rule.template)) {
      throw fail(`--name template ${JSON.stringify(rule.template)} is a URL: a template is a file name in the tree, such as "{query.id}.html" (a root after --name's values? give the roots first, or end --name's values with "--")`);
    }
    const rest = rule.template.replace(PLACEHOLDER, '');
    const unknown = rest.match(/\{[^{}]*\}/);
    if (unknown) throw fail(`--name template ${JSON.stringify(rule.template)} has an unknown placeholder ${unknown[0]}: use {path}, {dir}, {base}, {ext} or {query.NAME}`);
    if (/[{}]/.test(rest)) throw fail(`--name template ${JSON.stringify(rule.template)} has a brace that opens or closes no placeholder: use {path}, {dir}, {base}, {ext} or {query.NAME}`);
  }
  return rules;
}

/**
 * @param {NameRule[]} rules
 * @param {string[]} origins the roots' origins (for patterns starting with "/")
 * @returns {NameRules}
 */
export function compileNameRules(rules, origins) {
  const compiled = rules.map((rule) => {
    try {
      return { rule, patterns: compilePattern(rule.pattern, origins) };
    } catch (error) {
      throw new UsageError(`--name: ${/** @type {Error} */ (error).message}`);
    }
  });
  return {
    rules,
    templateFor(url) {
      for (const { rule, patterns } of compiled) {
        if (patterns.some((pattern) => pattern.regex.test(url))) return rule.template;
      }
      return null;
    },
  };
}

/**
 * The name a template gives a URL (before the name checks).
 * @param {string} template
 * @param {URL} url
 */
export function expandTemplate(template, url) {
  const path = decode(url.pathname).slice(1);
  const slash = path.lastIndexOf('/');
  const dir = slash < 0 ? '' : path.slice(0, slash);
  const last = path.slice(slash + 1);
  const dot = last.lastIndexOf('.');
  const base = dot > 0 ? last.slice(0, dot) : last;
  const ext = dot > 0 ? last.slice(dot + 1) : '';
  return template.replace(PLACEHOLDER, (_, name) => {
    if (name === 'path') return path;
    if (name === 'dir') return dir;
    if (name === 'base') return base;
    if (name === 'ext') return ext;
    return (url.searchParams.get(name.slice(6)) ?? '').replace(UNSAFE_IN_VALUE, '_');
  });
}

/** @param {string} text */
function decode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
