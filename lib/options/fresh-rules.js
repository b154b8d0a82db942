// @ts-check
/**
 * --fresh rules as options: a pattern and how long a stored copy it matches stays fresh; what a rule does is recrawl/freshness.js's.
 * @typedef {{ pattern: string, duration: string, seconds: number }} FreshRule seconds: Infinity for "forever"
 */

const UNITS = /** @type {Record<string, number>} */ ({ s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 });

export const DURATION = 'a whole number and a unit (90s, 30m, 6h, 2d, 1w) or "forever"';

/** Infinity for "forever", NaN for anything else. @param {string} text */
export function parseDuration(text) {
  if (text === 'forever') return Infinity;
  const match = /^(\d{1,9})([smhdw])$/.exec(text);
  return match ? Number(match[1]) * UNITS[match[2]] : NaN;
}

/**
 * @param {unknown} input a flat list [pattern, duration, ...], or [pattern, duration] pairs or { pattern, duration } objects
 * @param {(message: string) => Error} fail @returns {FreshRule[]}
 */
export function parseFreshRules(input, fail) {
  if (input === true) throw fail('--fresh takes a pattern and a duration, e.g. --fresh /st/product.asp 6h (to clear a shared crawl first, give --fresh-start)');
  if (!Array.isArray(input)) throw fail('--fresh takes a pattern and a duration, e.g. --fresh /st/product.asp 6h');
  /** @type {{ pattern: string, duration: string }[]} */ const pairs = [];
  if (input.every((item) => typeof item === 'string')) {
    if (input.length % 2 !== 0) {
      const last = input[input.length - 1];
      const root = /^https?:\/\//i.test(last) ? `; if ${JSON.stringify(last)} is a root, give the roots first or end --fresh's values with "--"` : '';
      throw fail(`--fresh takes a pattern and a duration each time: got an odd number of values (${input.map((v) => JSON.stringify(v)).join(' ')})${root}`);
    }
    for (let i = 0; i < input.length; i += 2) pairs.push({ pattern: input[i], duration: input[i + 1] });
  } else {
    for (const item of input) {
      if (Array.isArray(item) && item.length === 2 && item.every((v) => typeof v === 'string')) pairs.push({ pattern: item[0], duration: item[1] });
      else if (item && typeof item === 'object' && typeof item.pattern === 'string' && typeof item.duration === 'string') pairs.push({ pattern: item.pattern, duration: item.duration });
      else throw fail(`"fresh" must be a list of [pattern, duration] pairs or { pattern, duration } objects, got ${JSON.stringify(item)}`);
    }
  }
  return pairs.map(({ pattern, duration }) => {
    if (!pattern.startsWith('/') && !/^https?:\/\//i.test(pattern)) throw fail(`--fresh pattern must be a path starting with "/" or an absolute http(s) URL, got ${JSON.stringify(pattern)}`);
    const seconds = parseDuration(duration);
    if (Number.isNaN(seconds)) throw fail(`--fresh duration for ${JSON.stringify(pattern)} must be ${DURATION}, got ${JSON.stringify(duration)}`);
    return { pattern, duration, seconds };
  });
}
