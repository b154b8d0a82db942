// @ts-check
/** OUT/prerender-manifest.json as the server needs it; malformed entries are skipped with a warning, a malformed manifest throws. */
import { MANIFEST_NAME, checkManifest } from '../output/manifest/schema.js';
import { safeContentType } from './content-type.js';
import { PageIndex } from './page-index.js';
import { normalizeManifestPath } from './paths.js';

export { MANIFEST_NAME };

/**
 * @typedef {import('./page-index.js').Slot} Slot @typedef {import('./page-index.js').PageMeta} PageMeta
 * @typedef {{ mode: import('../document/placeholders.js').PlaceholderMode, pages: PageIndex, warnings: string[], generatedAt: string | null,
 *   roots: string[], rootFile: { key: string, url: string } | null }} Manifest rootFile: the first written crawl root's file, after its redirects, for `/`
 */

const PAGES_OPEN = '\n  "pages": [';
const PAGES_CLOSE = '\n  ],\n';

/**
 * A manifest as `prerender crawl` writes it, a page per line: each line is parsed alone, so 200,000 pages never exist as one
 * object tree. Null for another layout. @param {Buffer} buf @returns {{ data: any, pages: Iterable<any> } | null}
 */
function splitManifest(buf) {
  const open = buf.indexOf(PAGES_OPEN);
  const close = buf.lastIndexOf(PAGES_CLOSE);
  if (open === -1 || close <= open) return null;
  const from = open + PAGES_OPEN.length;
  let data;
  try {
    data = JSON.parse(buf.toString('utf8', 0, from) + buf.toString('utf8', close));
  } catch {
    return null;
  }
  checkManifest(data);
  /** @type {Map<string, string>} */ const interned = new Map();
  function* pages() {
    let at = buf.indexOf(10, from);
    while (at !== -1 && at < close) {
      const next = buf.indexOf(10, at + 1);
      const end = next === -1 || next > close ? close : next;
      let text = buf.toString('utf8', at + 1, end).trim();
      at = end === close ? -1 : next;
      if (text === '') continue;
      if (text.endsWith(',')) text = text.slice(0, -1);
      yield compactPage(JSON.parse(text), interned); // throws on a line that is not a whole page
    }
  }
  return { data, pages: pages() };
}

/** One copy of each content type. @param {Map<string, string>} interned @param {unknown} s */
function intern(interned, s) {
  if (typeof s !== 'string') return s;
  let found = interned.get(s);
  if (found === undefined) {
    found = s;
    if (interned.size < 1000) interned.set(s, s);
  }
  return found;
}

/** Only the fields the server reads, in fresh strings: slices of the line would keep each line alive. @param {any} page @param {Map<string, string>} interned */
function compactPage(page, interned) {
  if (!page || typeof page !== 'object') return page;
  return {
    url: page.url,
    file: typeof page.file === 'string' ? Buffer.from(page.file, 'utf8').toString('utf8') : page.file,
    contentType: intern(interned, page.contentType),
    bytes: page.bytes,
    placeholders: Array.isArray(page.placeholders)
      ? page.placeholders.map((/** @type {any} */ p) => (p && typeof p === 'object' ? { sku: typeof p.sku === 'string' ? Buffer.from(p.sku, 'utf8').toString('utf8') : p.sku, offset: p.offset, length: p.length } : p))
      : page.placeholders,
  };
}

/** @param {string | Buffer} input the file's bytes, or text @returns {Manifest} */
export function parseManifest(input) {
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const lines = splitManifest(buf);
  if (lines) {
    try {
      return readManifest(lines.data, lines.pages);
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      // a page spread over lines: parse it whole
    }
  }
  // The top level is checked by the manifest module; pages one by one, leniently, below.
  const data = /** @type {any} */ (checkManifest(JSON.parse(buf.toString('utf8'))));
  return readManifest(data, data.pages);
}

/** @param {any} data the top level @param {Iterable<any>} pageList @returns {Manifest} */
function readManifest(data, pageList) {
  const mode = data.placeholderMode;
  /** @type {string[]} */ const warnings = [];
  const pages = new PageIndex();
  let skipped = 0;
  const roots = Array.isArray(data.roots) ? data.roots.filter((/** @type {unknown} */ r) => typeof r === 'string') : [];
  // Where each root ended up, following the crawl's redirects (bounded).
  /** @type {Map<string, string>} */ const redirects = new Map();
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
  /** @type {{ key: string, url: string, rank: number } | null} */ let rootFile = null;
  const rank = [...wanted.keys()];
  for (const page of pageList) {
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
    pages.set(key, contentType, Number.isSafeInteger(page.bytes) && page.bytes >= 0 ? page.bytes : null, slots, valid);
  }
  pages.trim();
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

/** @param {unknown} list @returns {{ slots: Slot[], valid: boolean }} */
function readSlots(list) {
  if (list === undefined || list === null) return { slots: [], valid: true };
  if (!Array.isArray(list)) return { slots: [], valid: false };
  /** @type {Slot[]} */ const slots = [];
  let end = 0;
  for (const item of list) {
    if (!item || typeof item.sku !== 'string' || !Number.isSafeInteger(item.offset) || !Number.isSafeInteger(item.length)) return { slots: [], valid: false };
    if (item.offset < end || item.length <= 0) return { slots: [], valid: false };
    slots.push({ sku: item.sku, offset: item.offset, length: item.length });
    end = item.offset + item.length;
  }
  return { slots, valid: true };
}
