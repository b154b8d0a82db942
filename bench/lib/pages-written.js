// @ts-check
/**
 * The shop's pages a tool wrote, whatever it named them: every file under
 * the output folder is read, and a page counts when its own text is there
 * (a product page's "Item SKU-N", a dir.asp page's "All products S to E").
 * So wget's product.asp?SKUSetID=N.html, HTTrack's productXXXX.html and
 * prerender's productN.htm are checked the same way.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** Folders of a tool's own bookkeeping, not pages. */
const SKIP = new Set(['hts-cache', '.prerender-tmp']);

/** Larger files are not pages of the shop (a product page is ~15 KB). */
const MAX_BYTES = 1 << 20;

/**
 * @param {string} out the tool's output folder
 * @param {{ products: number, count: number }} shop
 * @returns {{ written: number, expected: number, products: number, dirPages: number, missing: string[] }}
 *   `missing`: the first few pages not found
 */
export function pagesWritten(out, { products, count }) {
  const skus = new Set();
  const starts = new Set();
  for (const file of files(out)) {
    const text = readFileSync(file, 'latin1');
    const sku = /class="sku">Item SKU-(\d+)</.exec(text);
    if (sku) skus.add(Number(sku[1]));
    const dir = /<h1>All products (\d+) to \d+<\/h1>/.exec(text);
    if (dir) starts.add(Number(dir[1]));
  }
  const dirPages = Math.ceil(products / count);
  /** @type {string[]} */
  const missing = [];
  for (let start = 1; start <= products && missing.length < 5; start += count) {
    if (!starts.has(start)) missing.push(`dir.asp from product ${start}`);
  }
  for (let n = 1; n <= products && missing.length < 5; n++) {
    if (!skus.has(n)) missing.push(`product ${n}`);
  }
  const productsFound = [...skus].filter((n) => n >= 1 && n <= products).length;
  const dirsFound = [...starts].filter((s) => s >= 1 && s <= products && (s - 1) % count === 0).length;
  return { written: productsFound + dirsFound, expected: products + dirPages, products: productsFound, dirPages: dirsFound, missing };
}

/**
 * Regular files under `dir`, depth first, bookkeeping folders left out.
 * @param {string} dir
 * @returns {Generator<string>}
 */
function* files(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // no output at all: every page is missing
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP.has(entry.name)) yield* files(full);
    } else if (entry.isFile() && statSync(full).size <= MAX_BYTES) {
      yield full;
    }
  }
}
