// @ts-check
/**
 * Reads OUT/prerender-manifest.json into what the server needs: for every
 * page, its key (relative file path), content type, and price slots.
 * Malformed entries are skipped with a warning; a malformed manifest throws.
 */
import { MANIFEST_NAME, checkManifest } from '../manifest/schema.js';
import { safeContentType } from './mime.js';
import { normalizeManifestPath } from './paths.js';

export { MANIFEST_NAME };

/**
 * @typedef {{ sku: string, offset: number, length: number }} Slot
 * @typedef {{ key: string, contentType: string | null, bytes: number | null, slots: Slot[], slotsValid: boolean }} PageMeta
 * @typedef {{ mode: import('../placeholders.js').PlaceholderMode, pages: Map<string, PageMeta>, warnings: string[], generatedAt: string | null,
 *   roots: string[], rootFile: { key: string, url: string } | null }} Manifest
 *   rootFile: the file of the first crawl root that was written (after its redirects), for `/`
 */

/**
 * @param {string} text the manifest file's text
 * @returns {Manifest}
 */
export function parseManifest(text) {
  // The top level is checked by the manifest module; pages one by one, leniently, below.
  const data = /** @type {import('../manifest/schema.js').Manifest & { pages: any[] }} */ (checkManifest(JSON.parse(text)));
  const mode = data.placeholderMode;
  /** @type {string[]} */
  const warnings = [];
  /** @type {Map<string, PageMeta>} */
  const pages = new Map();
  let skipped = 0;
  const roots = Array.isArray(data.roots) ? data.roots.filter((r) => typeof r === 'string') : [];
  // Where each root ended up, following the crawl's redirects (bounded).
  /** @type {Map<string, string>} */
  const redirects = new Map();
  for (const r of Array.isArray(data.redirects) ? data.redirects : []) {
    if (r && typeof r.url === 'string' && typeof r.location === 'string') redirects.set(r.url, r.location);
  }
  /** @type {Map<string, string>} final URL -> root */
  const wanted = new Map();
  for (const root of roots) {
    let url = root;
    for (let hop = 0; hop < 10 && redirects.has(url); hop++) url = /** @type {string} */ (redirects.get(url));
    if (!wanted.has(url)) wanted.set(url, root);
  }
  /** @type {{ key: string, url: string, rank: number } | null} */
  let rootFile = null;
  const rank = [...wanted.keys()];
  for (const page of data.pages) {
    if (!page || typeof page !== 'object' || page.file === undefined || page.file === null) continue; // failed pages have no file
    const key = normalizeManifestPath(page.file);
    if (key === null) {
      if (++skipped <= 5) warnings.push(`manifest: skipping page with unsafe file ${JSON.stringify(String(page.file)).slice(0, 200)}`);
      continue;
    }
    const contentType = page.contentType === undefined ? null : safeContentType(page.contentType);
    if (page.contentType !== undefined && contentType === null) {
      warnings.push(`manifest: ${key}: ignoring unusable contentType ${JSON.stringify(String(page.contentType)).slice(0, 100)}; typing by extension`);
    }
    if (typeof page.url === 'string' && wanted.has(page.url)) {
      const at = rank.indexOf(page.url);
      if (!rootFile || at < rootFile.rank) rootFile = { key, url: /** @type {string} */ (wanted.get(page.url)), rank: at };
    }
    const { slots, valid } = readSlots(page.placeholders);
    if (!valid) warnings.push(`manifest: ${key}: placeholder list is malformed; the file will be scanned instead`);
    pages.set(key, {
      key,
      contentType,
      bytes: Number.isSafeInteger(page.bytes) && page.bytes >= 0 ? page.bytes : null,
      slots,
      slotsValid: valid,
    });
  }
  if (skipped > 5) warnings.push(`manifest: skipped ${skipped} pages with unsafe file names in all`);
  return {
    mode,
    pages,
    warnings,
    generatedAt: typeof data.generatedAt === 'string' ? data.generatedAt : null,
    roots,
    rootFile: rootFile && { key: rootFile.key, url: rootFile.url },
  };
}

/**
 * @param {unknown} list
 * @returns {{ slots: Slot[], valid: boolean }}
 */
function readSlots(list) {
  if (list === undefined || list === null) return { slots: [], valid: true };
  if (!Array.isArray(list)) return { slots: [], valid: false };
  /** @type {Slot[]} */
  const slots = [];
  let end = 0;
  for (const item of list) {
    if (!item || typeof item.sku !== 'string' || !Number.isSafeInteger(item.offset) || !Number.isSafeInteger(item.length)) return { slots: [], valid: false };
    if (item.offset < end || item.length <= 0) return { slots: [], valid: false };
    slots.push({ sku: item.sku, offset: item.offset, length: item.length });
    end = item.offset + item.length;
  }
  return { slots, valid: true };
}
