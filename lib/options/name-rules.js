// @ts-check
/** --name rules as options: their shape only; what they do is naming/rules.js's. @typedef {import('../naming/rules.js').NameRule} NameRule */

export const PLACEHOLDER = /\{(path|dir|base|ext|rest|query\.[^{}]+)\}/g;

/**
 * @param {unknown} input a flat list [pattern, template, ...], or [pattern, template] pairs or { pattern, template } objects
 * @param {(message: string) => Error} fail @returns {NameRule[]}
 */
export function parseNameRules(input, fail) {
  if (input === undefined) return [];
  if (!Array.isArray(input)) throw fail('--name takes a pattern and a template, e.g. --name "/doku.php?id=*" "{query.id}.html"');
  /** @type {NameRule[]} */ const rules = [];
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
    if (unknown) throw fail(`--name template ${JSON.stringify(rule.template)} has an unknown placeholder ${unknown[0]}: use {path}, {dir}, {base}, {ext}, {rest} or {query.NAME}`);
    if (/[{}]/.test(rest)) throw fail(`--name template ${JSON.stringify(rule.template)} has a brace that opens or closes no placeholder: use {path}, {dir}, {base}, {ext}, {rest} or {query.NAME}`);
  }
  return rules;
}
