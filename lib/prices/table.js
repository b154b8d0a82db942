// @ts-check
/** An in-memory price table `{ SKU: { ZIP: "text", "*": "default" } }`, zips normalised; shared by JSON and CSV. */
import { normalizeZip } from './zip.js';

/** Longest price text accepted from any source; longer values are rejected. */
export const DEFAULT_MAX_PRICE_LENGTH = 1024;

/** @typedef {Map<string, Map<string, string>>} PriceTable SKU -> (normalised zip or '*') -> price text */

/**
 * Any problem makes the caller reject the whole input, so a broken file never replaces good prices.
 * @param {Iterable<{ sku: unknown, zip: unknown, price: unknown, where: string }>} rows @param {{ maxPriceLength?: number }} [options]
 * @returns {{ table: PriceTable, problems: string[] }}
 */
export function buildTable(rows, options = {}) {
  const maxLength = options.maxPriceLength ?? DEFAULT_MAX_PRICE_LENGTH;
  /** @type {PriceTable} */ const table = new Map();
  /** @type {string[]} */ const problems = [];
  for (const { sku, zip, price, where } of rows) {
    if (problems.length >= 10) break;
    if (typeof sku !== 'string' || sku.length === 0) {
      problems.push(`${where}: empty or non-text SKU`);
      continue;
    }
    let zipKey;
    if (zip === '*') zipKey = '*';
    else {
      zipKey = normalizeZip(zip);
      if (zipKey === null) {
        problems.push(`${where}: zip ${JSON.stringify(zip)} is not a plausible zip code (3-10 letters, digits, spaces, hyphens) nor "*"`);
        continue;
      }
    }
    let text;
    if (typeof price === 'string') text = price;
    else if (typeof price === 'number' && Number.isFinite(price)) text = String(price);
    else {
      problems.push(`${where}: price must be text, got ${price === null ? 'null' : typeof price}`);
      continue;
    }
    if (text.length > maxLength) {
      problems.push(`${where}: price text is ${text.length} characters, more than the ${maxLength} allowed`);
      continue;
    }
    let bySku = table.get(sku);
    if (!bySku) table.set(sku, (bySku = new Map()));
    bySku.set(zipKey, text);
  }
  return { table, problems };
}

/** @param {PriceTable} table @param {string} sku @param {string | null} zip normalised @returns {string | null} the zip's price, else the SKU's default */
export function lookupTable(table, sku, zip) {
  const bySku = table.get(sku);
  if (!bySku) return null;
  if (zip !== null) {
    const price = bySku.get(zip);
    if (price !== undefined) return price;
  }
  return bySku.get('*') ?? null;
}
