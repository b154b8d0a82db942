// @ts-check
/** Each operation's requests: a static one's pages come from the manifest (their path at the origin, their file at the static server). */
import { UsageError } from '../errors.js';
import { compilePattern } from '../roots/scope.js';
import { encodePath } from '../serve/paths.js';

/** Spread evenly over the pages that match. */
export const MAX_PAGES_PER_OPERATION = 2000;

/**
 * @typedef {{ method: 'GET', path: string }} LoadRequest
 * @typedef {{ name: string, weight: number, isStatic: boolean, dynamic: LoadRequest[], static: LoadRequest[] | null }} Operation
 */

/** @param {string} path */ const get = (path) => /** @type {LoadRequest} */ ({ method: 'GET', path });

/** @template T @param {T[]} list @param {number} most */
function spread(list, most) {
  if (list.length <= most) return list;
  return Array.from({ length: most }, (_, i) => list[Math.floor((i * list.length) / most)]);
}

/** @param {import('./profile.js').Profile} profile @param {import('../output/manifest/schema.js').Manifest} manifest @returns {Operation[]} */
export function resolveOperations(profile, manifest) {
  const pages = manifest.pages.filter((page) => page.status === 200 && typeof page.file === 'string');
  const origins = [...new Set([...manifest.roots, ...pages.slice(0, 1).map((page) => page.url)].map((url) => {
    try {
      return new URL(url).origin;
    } catch {
      return null;
    }
  }).filter((origin) => origin !== null))];
  return profile.operations.map((op) => {
    if (op.dynamic) return { name: op.name, weight: op.weight, isStatic: false, dynamic: op.dynamic.map(get), static: null };
    const regexes = (op.pages ?? []).flatMap((pattern) => compilePattern(pattern, origins).map((compiled) => compiled.regex));
    const matched = pages.filter((page) => regexes.some((regex) => regex.test(page.url)));
    if (matched.length === 0) {
      const examples = pages.slice(0, 3).map((page) => new URL(page.url).pathname + new URL(page.url).search).join(', ');
      throw new UsageError(`operation "${op.name}": no page of the tree matches ${op.pages?.join(' or ')}${examples ? ` (its pages are like ${examples})` : ' (the manifest lists no page)'}; give a --profile whose "pages" match them`);
    }
    const chosen = spread(matched, MAX_PAGES_PER_OPERATION);
    return {
      name: op.name,
      weight: op.weight,
      isStatic: true,
      dynamic: chosen.map((page) => { const url = new URL(page.url); return get(url.pathname + url.search); }),
      static: chosen.map((page) => get(encodePath(page.file))),
    };
  });
}

/** Each operation's share of the list is its weight's; a seeded shuffle fixes the order. @param {{ weight: number, requests: LoadRequest[] }[]} parts @param {number} [size] */
export function mixRequests(parts, size = 1000) {
  const total = parts.reduce((sum, part) => sum + part.weight, 0);
  /** @type {LoadRequest[]} */ const list = [];
  for (const part of parts) {
    const count = Math.max(1, Math.round((size * part.weight) / total));
    for (let i = 0; i < count; i++) list.push(part.requests[i % part.requests.length]);
  }
  let seed = 12345;
  for (let i = list.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    [list[i], list[j]] = [list[j], list[i]];
  }
  return list;
}
