// @ts-check
/**
 * Checks that a benchmark run produced the right tree, so that a fast but
 * wrong run is caught: every product page present exactly once, links
 * between them static and relative, cart/checkout/search still live, price
 * slots turned into placeholders, no staging files left behind.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { relatedProducts } from '../origin.js';

/**
 * The products to look at closely: first, middle, last.
 * @param {number} products
 */
const samplesOf = (products) => [...new Set([1, Math.ceil(products / 2), products])];

/**
 * @param {string} text
 * @returns {string[]} values of href, action and src attributes
 */
const urlAttributes = (text) => [...text.matchAll(/\s(?:href|action|src)="([^"]*)"/g)].map((m) => m[1]);

/**
 * prerender's output.
 * @param {string} out
 * @param {{ products: number, count: number }} shop
 * @returns {{ ok: boolean, problems: string[], productFiles: number, manifestPages: number }}
 */
export function verifyPrerender(out, { products, count }) {
  /** @type {string[]} */
  const problems = [];
  const dir = path.join(out, 'st');
  const names = existsSync(dir) ? readdirSync(dir) : [];
  const found = new Set();
  for (const name of names) {
    const match = /^product(\d+)\.htm$/.exec(name);
    if (match) found.add(Number(match[1]));
  }
  if (found.size !== products) problems.push(`expected ${products} st/product*.htm files, found ${found.size}`);
  for (let n = 1; n <= products && problems.length < 10; n++) {
    if (!found.has(n)) problems.push(`st/product${n}.htm is missing`);
  }
  if (existsSync(path.join(out, '.prerender-tmp'))) problems.push('the staging folder .prerender-tmp was left behind');

  let manifestPages = 0;
  try {
    const manifest = JSON.parse(readFileSync(path.join(out, 'prerender-manifest.json'), 'utf8'));
    manifestPages = manifest.pages.length;
    const dirPages = Math.ceil(products / count);
    if (manifestPages !== products + dirPages) problems.push(`manifest lists ${manifestPages} pages, expected ${products + dirPages}`);
    if (manifest.errors.length > 0) problems.push(`manifest lists ${manifest.errors.length} errors, first: ${JSON.stringify(manifest.errors[0])}`);
  } catch (error) {
    problems.push(`prerender-manifest.json unreadable: ${error.message}`);
  }

  for (const n of samplesOf(products)) {
    if (!found.has(n)) continue;
    const text = readFileSync(path.join(dir, `product${n}.htm`), 'latin1');
    const urls = urlAttributes(text);
    const live = urls.filter((url) => url.includes('product.asp'));
    if (live.length > 0) problems.push(`product${n}.htm still links to the live product page: ${live[0]}`);
    for (const m of relatedProducts(n, products)) {
      if (!urls.some((url) => url === `product${m}.htm` || url === `product${m}.htm#reviews`)) problems.push(`product${n}.htm has no relative link to product${m}.htm`);
    }
    if (!urls.includes(`cart.asp?add=${n}&amp;qty=1`)) problems.push(`product${n}.htm: the add-to-cart link changed or is gone`);
    if (!urls.includes('/st/checkout.asp')) problems.push(`product${n}.htm: the checkout link changed or is gone`);
    if (!urls.includes('search.asp')) problems.push(`product${n}.htm: the search form changed or is gone`);
    if (!text.includes(`<!--prerender:price sku=SKU-${n}-->`)) problems.push(`product${n}.htm: the price slot is not a placeholder`);
  }
  return { ok: problems.length === 0, problems, productFiles: found.size, manifestPages };
}

/**
 * wget's output (--adjust-extension names: "product.asp?SKUSetID=N.html").
 * @param {string} out the -P directory
 * @param {{ products: number }} shop
 * @returns {{ ok: boolean, problems: string[], productFiles: number }}
 */
export function verifyWget(out, { products }) {
  /** @type {string[]} */
  const problems = [];
  const hosts = existsSync(out) ? readdirSync(out) : [];
  const dir = hosts.length === 1 ? path.join(out, hosts[0], 'st') : '';
  if (!dir || !existsSync(dir)) {
    problems.push(`no single host folder with st/ in ${out}`);
    return { ok: false, problems, productFiles: 0 };
  }
  let productFiles = 0;
  for (const name of readdirSync(dir)) if (/^product\.asp\?SKUSetID=\d+\.html$/.test(name)) productFiles++;
  if (productFiles !== products) problems.push(`expected ${products} product.asp?SKUSetID=N.html files, found ${productFiles}`);
  const n = Math.ceil(products / 2);
  const file = path.join(dir, `product.asp?SKUSetID=${n}.html`);
  if (existsSync(file)) {
    const urls = urlAttributes(readFileSync(file, 'latin1'));
    for (const m of relatedProducts(n, products)) {
      if (!urls.some((url) => url.startsWith(`product.asp%3FSKUSetID=${m}.html`))) problems.push(`wget's product ${n} has no converted link to product ${m}`);
    }
  }
  return { ok: problems.length === 0, problems, productFiles };
}
