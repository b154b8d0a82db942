// @ts-check
import { FrontierError, OutputError } from '../errors.js';
import { outputFailure } from '../output/outdir.js';
import { pickStored } from '../recrawl/prior.js';
import { warn } from '../warnings.js';
import { storedLinks } from './carry.js';
import { pageEntry } from './manifest-entries.js';
import { fail } from './outcomes.js';
import { settleOldSiblings } from './precompress.js';

/**
 * Reuse the last run's file when it is what this run would write, else rewrite and write the page.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('../store/records.js').PageRecord} PageRecord
 * @typedef {import('../output/manifest/schema.js').ManifestPage} ManifestPage @typedef {import('../recrawl/state.js').StoredPage} StoredPage
 * @typedef {import('../naming/assign.js').Naming} Naming
 * @typedef {ReturnType<typeof import('../naming/assign.js').createNameTable>} NameTable
 * @typedef {{ filesWritten: number, bytesWritten: number }} Counters
 * @typedef {CrawlRun & { names: NameTable, previous: ReturnType<typeof import('../recrawl/prior.js').priorFiles> | null, sameNames: boolean,
 *   wholeBodies: import('p-limit').LimitFunction, pageFile: (name: string, anyCase?: boolean) => boolean,
 *   counters: Counters, failed: PageRecord[], split: PageRecord[], retained: (string | undefined)[] }} PassRun
 *   previous: where links led last run, if its outputs may be reused; retained: blobs the state lists and the records do not
 * @typedef {{ page: ManifestPage, record: PageRecord }} Written
 * @typedef {{ output: Buffer | undefined, written: boolean, placeholders: ManifestPage['placeholders'] }} Made
 */

/** Null when it failed, then in `pass.failed`. @param {PassRun} pass @param {PageRecord} record @returns {Promise<Written | null>} */
export async function writePage(pass, record) {
  const target = /** @type {import('../output/target.js').OutputTarget} */ (pass.target);
  const file = /** @type {string} */ (record.file);
  const last = pass.prior?.pages.get(record.key);
  const stored = pass.previous ? last : undefined;
  const sameFile = stored?.state === 'done' && stored.file === file && stored.sha256 !== undefined
    && (await target.existing?.(file)) === stored.bytes;
  /** @type {ManifestPage['placeholders']} */ let placeholders = [];
  try {
    const ids = [/** @type {string} */ (record.body)];
    if (record.type !== 'other' && record.scan !== undefined) ids.push(record.scan);
    const unchangedInput = (record.change === 'not-modified' || record.change === 'same-bytes')
      && !(stored !== undefined && pass.hooks.mustRemake(pass, stored));
    if (sameFile && unchangedInput && (record.type === 'other' || pass.sameNames || (ids.length === 2 && await linksAsBefore(pass, ids[1])))) {
      return reuseFile(pass, record, /** @type {StoredPage} */ (stored));
    }
    const made = ids.length === 1
      ? await copyWhole(pass, record, sameFile && stored?.sha256 === record.body)
      : await rewrite(pass, record, ids, sameFile ? stored?.sha256 : undefined);
    placeholders = made.placeholders;
    // The last state's siblings are on disk even when its outputs are not reused.
    await settleOldSiblings(pass, record, last?.state === 'done' && last.file === file ? last : undefined);
    await pass.hooks.afterWrite(pass, record, made, stored);
  } catch (error) {
    const fatal = outputFailure(error, 'write', `${file} in ${target.location}`);
    if (fatal instanceof OutputError || error instanceof FrontierError) throw fatal; // the run cannot go on
    await fail(pass, record, error);
    pass.failed.push(record);
    return null;
  }
  return { page: pageEntry(pass, record, placeholders), record };
}

/** Every link leads to the file it led to last run, so an unchanged page's output is the same. @param {PassRun} pass @param {string} scanId */
async function linksAsBefore(pass, scanId) {
  const previous = /** @type {NonNullable<PassRun['previous']>} */ (pass.previous);
  const scan = await storedLinks(pass, scanId);
  return scan.links.every((link) => !link.key || pass.names.fileOf(link.key) === previous.fileOf(link.key));
}

/**
 * Neither HTML nor CSS: read whole, written unless the file there has its bytes.
 * @param {PassRun} pass @param {PageRecord} record @param {boolean} sameBytes @returns {Promise<Made>}
 */
async function copyWhole(pass, record, sameBytes) {
  const blobs = /** @type {import('../store/blobs.js').BlobStore} */ (pass.blobs);
  const target = /** @type {import('../output/target.js').OutputTarget} */ (pass.target);
  let written = false;
  // Read whole: a few at once, whatever the window of pages in flight.
  const output = await pass.wholeBodies(async () => {
    const [raw] = await blobs.get([/** @type {string} */ (record.body)]);
    written = !sameBytes;
    if (written) await writeFile(target, /** @type {string} */ (record.file), raw, pass.counters);
    return raw;
  });
  record.bytes = output.length;
  record.sha256 = record.body;
  return { output, written, placeholders: [] };
}

/**
 * By a worker thread, an early write, or another process of a shared crawl.
 * @param {PassRun} pass @param {PageRecord} record @param {string[]} ids its body and scan
 * @param {string | undefined} unchangedSha the file there's, if it is this page's last @returns {Promise<Made>}
 */
async function rewrite(pass, record, ids, unchangedSha) {
  const blobs = /** @type {import('../store/blobs.js').BlobStore} */ (pass.blobs);
  const target = /** @type {import('../output/target.js').OutputTarget} */ (pass.target);
  const file = /** @type {string} */ (record.file);
  const places = blobs.locate ? [blobs.locate(ids[0]), blobs.locate(ids[1])] : null;
  const source = async () => (places
    ? { places: /** @type {[import('./page-work.js').BlobPlace, import('./page-work.js').BlobPlace]} */ (places), read: () => blobs.get(ids) }
    : blobs.get(ids).then(([raw, scan]) => ({ raw, scan })));
  const early = pass.early?.has(record.key) ? await pass.early.take(record.key, file) : null;
  const reserved = early ? { path: undefined, adopt: early.adopt, drop: async () => {} } : target.reserve ? await target.reserve(file) : null;
  try {
    /** @type {Omit<import('./page-work.js').RenderInput, 'raw' | 'scan'>} */ const request = {
      bodyId: /** @type {string} */ (record.body), scanId: ids[1], url: record.key, file,
      type: record.type === 'css' ? 'css' : 'html', charset: record.charset ?? 'utf-8',
      unchangedSha, temp: reserved?.path, wantOutput: pass.hooks.has('afterWrite'),
    };
    // Another shared-crawl process may render it into the same temp file, unless the output is wanted here.
    if (!early) warmThreads(pass);
    const result = early
      ? early.result
      : pass.finishPool && reserved && !request.wantOutput
      ? await pass.finishPool.render(request)
      : await pass.threads.render({ ...(await source()), ...request });
    for (const warning of result.warnings) warn(pass, record.key, warning.code, warning.message);
    record.bytes = result.bytes;
    record.sha256 = result.sha256;
    if (result.written && reserved) {
      await reserved.adopt();
      pass.counters.filesWritten++;
      pass.counters.bytesWritten += result.bytes;
    } else if (result.written) {
      await writeFile(target, file, /** @type {Buffer} */ (result.output), pass.counters);
    } else {
      await reserved?.drop();
    }
    return { output: result.output, written: result.written, placeholders: result.placeholders };
  } catch (error) {
    await reserved?.drop();
    throw error;
  }
}

/** @param {CrawlRun} run @returns {import('./page-work.js').RenderContext} */
export function renderContext(run) {
  const o = run.options;
  return {
    placeholders: o.placeholders,
    pricePath: o.pricePath,
    staticRoot: run.staticRoot.href,
    dynamicBase: o.dynamicBase?.href ?? null,
    origins: [...run.origins],
    relativeLinks: o.relativeLinks,
    siteUrl: o.siteUrl?.href ?? null,
  };
}

/** Same pages, files and redirects as the last run. @param {CrawlRun} run @param {Naming} naming @param {NameTable} names @param {Set<string>} dropped */
export function namesAsBefore(run, naming, names, dropped) {
  const prior = /** @type {import('../recrawl/prior.js').Prior} */ (run.prior);
  let count = 0;
  for (const key of naming.keys) {
    if (dropped.has(key)) return false;
    const stored = pickStored(prior.pages, key, ['state', 'file', 'location']);
    // location: a page carried while it redirected, whose links led to the target.
    if (!stored || stored.state !== 'done' || stored.location !== undefined || stored.file !== names.fileOf(key)) return false;
    count++;
  }
  for (const redirect of run.redirects) {
    const stored = pickStored(prior.pages, redirect.url, ['state', 'location']);
    if (!stored || stored.state !== 'redirect' || stored.location !== redirect.location) return false;
    count++;
  }
  // A page gone changes where links lead.
  return count === prior.pages.size;
}

/** @param {import('../output/target.js').OutputTarget} target @param {string} file @param {Buffer} data @param {Counters} counters */
async function writeFile(target, file, data, counters) {
  await target.write(file, data);
  counters.filesWritten++;
  counters.bytesWritten += data.length;
}

/** A re-crawl reusing every file starts no thread. @param {CrawlRun} run */
function warmThreads(run) {
  if (run.threads.requests >= run.options.threadsFrom) run.threads.warm();
}

/** File and siblings stay, but for formats this run does not make. @param {PassRun} pass @param {PageRecord} record @param {StoredPage} stored */
async function reuseFile(pass, record, stored) {
  const reused = reuseEntry(pass, record, stored);
  await settleOldSiblings(pass, record, stored);
  return reused;
}

/** @param {PassRun} pass @param {PageRecord} record @param {StoredPage} stored */
function reuseEntry(pass, record, stored) {
  record.bytes = stored.bytes;
  record.sha256 = stored.sha256;
  record.compressed = stored.compressed;
  // --ignore: the state lists the bytes the file was made from, so a changed pattern sees the page changed.
  if (stored.body !== undefined && record.body !== stored.body) {
    record.body = stored.body;
    record.scan = stored.scan;
    record.charset = stored.charset;
    pass.retained.push(stored.body, stored.scan);
  }
  return { page: pageEntry(pass, record, stored.placeholders ?? []), record };
}
