// @ts-check
import { UsageError } from '../errors.js';
import { compilePattern } from '../roots/scope.js';
import { PLACEHOLDER } from '../options/name-rules.js';

/**
 * --name <pattern> <template>: names for sites that cannot send
 * X-Builder-FileName. The first rule whose pattern (--include syntax)
 * matches wins; a name header beats any rule. The result is read as a name
 * header, with the same safety checks and collisions. Placeholders: {path},
 * {dir}, {base}, {ext}, {query.NAME} (percent-decoded; in query values "/",
 * "\" and characters file names cannot hold become "_").
 * @typedef {{ pattern: string, template: string }} NameRule
 * @typedef {{ templateFor(url: string): string | null, rules: NameRule[] }} NameRules
 */

const UNSAFE_IN_VALUE = /[/\\<>:"|?*\u0000-\u001f\u007f]/g;


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

/** The name a template gives a URL, before the name checks. @param {string} template @param {URL} url */
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
