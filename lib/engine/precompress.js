// @ts-check
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { mimeOf } from '../naming/file-names.js';
import { warn } from '../warnings.js';
import { pickEach, pickStored } from '../recrawl/prior.js';

/**
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../output/manifest/schema.js').ManifestPage} ManifestPage
 */

const COMPRESSIBLE = /^(text\/(html|css|(x-)?javascript|ecmascript|plain|xml)|application\/((x-)?javascript|ecmascript|json|xml|xhtml\+xml|[\w.+-]+\+xml|[\w.+-]+\+json)|image\/svg\+xml)$/;
const SIBLING = /** @type {const} */ ({ gzip: '.gz', br: '.br' });
const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);

/** --precompress, on the hooks `mustRemake` and `afterWrite`. @param {CrawlRun} run */
export function plugPrecompress(run) {
  run.hooks.on('mustRemake', '--precompress', (pass, stored) => siblingsMissing(pass, stored));
  run.hooks.on('afterWrite', '--precompress', (pass, record, made, stored) => precompress(pass, record, /** @type {Buffer} */ (made.output), made.placeholders, made.written ? undefined : stored, pass.counters));
}

/** Only those a crawl wrote, in the formats a state lists. @param {string} file @param {string[] | undefined} formats */
export function siblingsOf(file, formats) {
  /** @type {string[]} */ const siblings = [];
  for (const format of formats ?? []) if (format === 'gzip' || format === 'br') siblings.push(file + SIBLING[format]);
  return siblings;
}

/**
 * Siblings in formats this run does not make go: beside a file that later changes, gzip_static would serve them.
 * @param {import('./run.js').CrawlRun} run @param {import('../store/records.js').PageRecord} record
 * @param {import('../recrawl/state.js').StoredPage | undefined} stored the last run's copy, if its file is this one
 */
export async function settleOldSiblings(run, record, stored) {
  /** @type {Set<string>} */ const wanted = new Set(run.options.precompress);
  const left = (stored?.compressed ?? []).filter((format) => !wanted.has(format));
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  for (const sibling of siblingsOf(/** @type {string} */ (record.file), left)) if (!isPageFile(run, sibling)) await target.remove(sibling);
  const kept = (record.compressed ?? []).filter((format) => wanted.has(format));
  record.compressed = kept.length > 0 ? kept : undefined;
}

/**
 * Compressible type, at least 1 KiB, no price slots.
 * @param {string | undefined} contentType @param {number} bytes @param {readonly unknown[] | undefined} placeholders
 */
export function worthTrying(contentType, bytes, placeholders) {
  return (placeholders?.length ?? 0) === 0 && bytes >= 1024 && COMPRESSIBLE.test(mimeOf(contentType));
}

/**
 * A kept file lacks a format never tried on it: its siblings are made from its bytes.
 * @param {import('./run.js').CrawlRun} run @param {import('../recrawl/state.js').StoredPage} stored the last run's copy, kept
 */
export function siblingsMissing(run, stored) {
  const tried = run.prior?.precompressed ?? [];
  const missing = run.options.precompress.filter((format) => !tried.includes(format) && !(stored.compressed ?? []).includes(format));
  return missing.length > 0 && worthTrying(stored.contentType, stored.bytes ?? 0, stored.placeholders);
}

/**
 * A page's file (`app.js.gz` may be a URL's) is never a sibling to make or remove. Known in a write pass only.
 * @param {import('./run.js').CrawlRun} run @param {string} name @param {boolean} [anyCase] before making one; exactly before removing
 */
export function isPageFile(run, name, anyCase = false) {
  const test = /** @type {{ pageFile?: (name: string, anyCase?: boolean) => boolean }} */ (/** @type {unknown} */ (run)).pageFile;
  return test ? test(name, anyCase) : false;
}

/** @type {WeakMap<object, Set<string>>} per last state: the siblings it lists */ const listed = new WeakMap();

/** Every .gz/.br the last state lists, read once, when an unlisted sibling is found on disk. @param {import('./run.js').CrawlRun} run */
function crawlSiblings(run) {
  const prior = /** @type {import('../recrawl/prior.js').Prior} */ (run.prior);
  let siblings = listed.get(prior);
  if (!siblings) {
    siblings = new Set();
    for (const page of pickEach(prior.pages, ['state', 'file', 'compressed', 'oldFiles'])) {
      if (page.state !== 'done' || !page.file) continue;
      for (const name of siblingsOf(page.file, page.compressed)) siblings.add(name);
      for (const old of page.oldFiles ?? []) if (/\.(gz|br)$/.test(old)) siblings.add(old);
    }
    listed.set(prior, siblings);
  }
  return siblings;
}

/**
 * A hand-made sibling stays, and none is made. Known only from a state no killed run came after.
 * @param {import('./run.js').CrawlRun} run @param {PageRecord} record @param {string} format @param {string} sibling
 */
async function foreign(run, record, format, sibling) {
  if (!run.prior?.ownsTree) return false;
  const last = pickStored(run.prior.pages, record.key, ['state', 'file', 'compressed']);
  if (last?.state === 'done' && last.file === record.file && (last.compressed ?? []).includes(format)) return false;
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  if ((await target.existing?.(sibling)) == null) return false;
  // Listed beside any page's file, or as an old file: the crawl's to replace.
  if (crawlSiblings(run).has(sibling)) return false;
  warn(run, record.key, 'SIBLING_TAKEN', `${sibling} is not a file a crawl made: left as it is, and no ${format} sibling is made`);
  return true;
}

/**
 * FILE.gz and FILE.br when at least 10% smaller; made again only when the file was written.
 * @param {CrawlRun} run @param {PageRecord} record @param {Buffer} output @param {ManifestPage['placeholders']} placeholders
 * @param {import('../recrawl/state.js').StoredPage | undefined} unchanged the last run's copy, if not written again
 * @param {{ filesWritten: number, bytesWritten: number }} counters
 */
export async function precompress(run, record, output, placeholders, unchanged, counters) {
  const target = /** @type {import('../output/target.js').OutputTarget} */ (run.target);
  const file = /** @type {string} */ (record.file);
  const eligible = worthTrying(record.contentType, output.length, placeholders);
  /** @type {string[]} */ const made = [];
  for (const format of run.options.precompress) {
    const sibling = file + SIBLING[/** @type {'gzip' | 'br'} */ (format)];
    if (isPageFile(run, sibling, true)) {
      if (eligible) warn(run, record.key, 'SIBLING_IS_PAGE', `${sibling} is the file of another page of this crawl: no ${format} sibling of ${file} is made`);
      // One the last crawl made under that very name goes: the page's differs in case only.
      if (!isPageFile(run, sibling) && (unchanged?.compressed ?? run.prior?.pages.get(record.key)?.compressed ?? []).includes(format)) await target.remove(sibling);
      continue;
    }
    if (unchanged && (unchanged.compressed ?? []).includes(format) && eligible) {
      made.push(format);
      continue;
    }
    const data = eligible
      ? await (format === 'gzip' ? gzip(output, { level: 9 }) : brotli(output, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: output.length } }))
      : null;
    if (data && data.length <= output.length * 0.9) {
      if (await foreign(run, record, format, sibling)) continue;
      await target.write(sibling, data, { sameTimeAs: file });
      counters.filesWritten++;
      counters.bytesWritten += data.length;
      made.push(format);
    } else if ((unchanged?.compressed ?? run.prior?.pages.get(record.key)?.compressed ?? []).includes(format)) {
      await target.remove(sibling);
    }
  }
  record.compressed = made.length > 0 ? made : undefined;
}
