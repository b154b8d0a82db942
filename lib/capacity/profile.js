// @ts-check
/** The user profile of Transaction Cost Analysis: a shopper's operations, their weights, and the think time between them. */
import path from 'node:path';
import { readConfigValue } from '../options/config-file.js';
import { ConfigError } from '../errors.js';
import { parseDuration } from './capacity-options.js';

/**
 * @typedef {{ name: string, weight: number, pages?: string[], dynamic?: string[] }} OperationSpec
 *   pages: scope patterns of the manifest's pages; dynamic: paths requested on the origin, in turn
 * @typedef {{ name: string, operations: OperationSpec[], thinkTimeMs: number }} Profile
 */

/** The XBuilder study's catalogue shop: 10 operations in an 11-minute session, so 66 s between a shopper's operations. */
export const DEFAULT_PROFILE = Object.freeze({
  name: 'catalogue shop (the XBuilder study)',
  operations: [
    { name: 'browse category', weight: 30, pages: ['/st/dir.asp'] },
    { name: 'view product', weight: 60, pages: ['/st/product.asp'] },
    { name: 'add to cart', weight: 6, dynamic: ['/st/cart.asp?add=1&qty=1'] },
    { name: 'checkout', weight: 4, dynamic: ['/st/checkout.asp'] },
  ],
  operationsPerVisit: 10,
  sessionMinutes: 11,
});

/** @param {unknown} value */ const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Think time: `thinkTime`, else `sessionMinutes` over `operationsPerVisit`.
 * @param {unknown} value @param {string} source for messages @returns {Profile}
 */
export function checkProfile(value, source) {
  const fail = (/** @type {string} */ message) => new ConfigError(`${source}: ${message}`);
  if (!isObject(value)) throw fail('a capacity profile is an object with "operations"');
  const data = /** @type {Record<string, unknown>} */ (value);
  const known = ['name', 'operations', 'thinkTime', 'operationsPerVisit', 'sessionMinutes', 'browseToBuy'];
  for (const key of Object.keys(data)) if (!known.includes(key)) throw fail(`unknown key "${key}" in the profile (known: ${known.join(', ')})`);
  if (!Array.isArray(data.operations) || data.operations.length === 0) throw fail('"operations" must be a non-empty list');
  const names = new Set();
  const operations = data.operations.map((op, i) => {
    if (!isObject(op)) throw fail(`operation ${i + 1} must be an object`);
    const { name, weight, pages, dynamic, ...rest } = /** @type {Record<string, unknown>} */ (op);
    const label = typeof name === 'string' && name ? `operation "${name}"` : `operation ${i + 1}`;
    if (Object.keys(rest).length > 0) throw fail(`${label}: unknown key "${Object.keys(rest)[0]}" (known: name, weight, pages, dynamic)`);
    if (typeof name !== 'string' || name.trim() === '') throw fail(`${label} needs a "name"`);
    if (names.has(name)) throw fail(`two operations are named "${name}"`);
    names.add(name);
    if (typeof weight !== 'number' || !(weight > 0) || !Number.isFinite(weight)) throw fail(`${label}: "weight" must be a number greater than 0`);
    if ((pages === undefined) === (dynamic === undefined)) throw fail(`${label}: give either "pages" (static: patterns of the tree's pages) or "dynamic" (paths on the origin)`);
    const list = /** @type {unknown} */ (pages ?? dynamic);
    const items = typeof list === 'string' ? [list] : list;
    if (!Array.isArray(items) || items.length === 0 || !items.every((item) => typeof item === 'string' && item.startsWith('/'))) {
      throw fail(`${label}: "${pages !== undefined ? 'pages' : 'dynamic'}" must be a path starting with "/", or a list of them`);
    }
    return pages !== undefined ? { name, weight, pages: /** @type {string[]} */ (items) } : { name, weight, dynamic: /** @type {string[]} */ (items) };
  });
  return { name: typeof data.name === 'string' ? data.name : 'profile', operations, thinkTimeMs: thinkTimeOf(data, fail) };
}

/** @param {Record<string, unknown>} data @param {(message: string) => Error} fail */
function thinkTimeOf(data, fail) {
  if (data.thinkTime !== undefined) {
    if (typeof data.thinkTime === 'number' && data.thinkTime > 0) return data.thinkTime;
    if (typeof data.thinkTime === 'string') {
      try {
        return parseDuration(data.thinkTime, '"thinkTime"');
      } catch (error) {
        throw fail(/** @type {Error} */ (error).message);
      }
    }
    throw fail('"thinkTime" must be a duration such as "66s", or milliseconds');
  }
  const { sessionMinutes, operationsPerVisit } = data;
  if (typeof sessionMinutes === 'number' && sessionMinutes > 0 && typeof operationsPerVisit === 'number' && operationsPerVisit >= 1) {
    return (sessionMinutes * 60_000) / operationsPerVisit;
  }
  throw fail('give "thinkTime" (the time between a shopper\'s operations), or "sessionMinutes" and "operationsPerVisit"');
}

/** A JSON file, or a config file's "capacity" key; a file without one is a profile itself. @param {string} file @param {string} cwd @returns {Promise<Profile>} */
export async function loadProfile(file, cwd) {
  const absolute = path.resolve(cwd, file);
  const name = path.basename(absolute);
  const value = await readConfigValue(absolute, `--profile ${file}`);
  const profile = isObject(value) && 'capacity' in /** @type {object} */ (value) ? /** @type {Record<string, unknown>} */ (value).capacity : value;
  return checkProfile(profile, name);
}

export function defaultProfile() {
  return checkProfile(structuredClone(DEFAULT_PROFILE), 'the built-in profile');
}
