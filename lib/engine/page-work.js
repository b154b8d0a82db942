// @ts-check
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { detectCharset } from '../document/charset.js';
import { encodeScan, linkLines, renderDocument, resolveLinks, scanDocument, decodeScan } from '../document/rewrite.js';
import { CREATE } from '../output/local-tree.js';
import { sha256 } from '../store/blobs.js';
import { openNameTable } from '../naming/name-table.js';

/**
 * The per-page CPU work, pure functions of a page's bytes, the render context and the name table, so worker threads
 * and the main thread give the same results.
 * @typedef {{ body: Buffer, type: 'html' | 'css', contentType: string, url: string, stageDir?: string }} ScanInput
 * @typedef {{ charset: string, scanBytes: Buffer, bodyId: string, scanId: string, links: string, nofollow: boolean, stored: boolean }} ScanOutput
 *   links: one line per link, kind code then canonical URL; stored: body and scan are in stageDir
 * @typedef {{ placeholders: import('../document/placeholders.js').PlaceholderMode, pricePath: string, staticRoot: string,
 *   dynamicBase: string | null, origins: string[], relativeLinks: boolean, siteUrl: string | null }} RenderContext
 * @typedef {{ path: string, at: number, length: number }} BlobPlace length -1: the whole file
 * @typedef {import('../naming/name-table.js').SharedNameTable} NameTableData in shared memory: one copy for every worker
 * @typedef {{
 *   raw: Buffer, scan: Buffer, bodyId: string, url: string, file: string, type: 'html' | 'css', charset: string,
 *   unchangedSha?: string, temp?: string, wantOutput?: boolean, scanId?: string, replace?: boolean, names?: Map<string, string>,
 * }} RenderInput
 *   temp: where to write, else the output is returned; names: an early render's link files, a link not in it leads to no file
 * @typedef {{ bytes: number, sha256: string, written: boolean, output?: Buffer, placeholders: { sku: string, offset: number, length: number }[],
 *   warnings: { code: import('../warnings.js').WarningCode, message: string }[] }} RenderOutput
 */

/** @param {ScanInput} input @returns {ScanOutput} */
export function scanPage({ body, type, contentType, url, stageDir }) {
  const charset = detectCharset(contentType, body);
  const scan = scanDocument(body, type, charset);
  resolveLinks(scan, new URL(url));
  const links = linkLines(scan.links);
  const scanBytes = encodeScan(scan, links);
  const bodyId = sha256(body);
  const scanId = sha256(scanBytes);
  let stored = false;
  if (stageDir !== undefined) {
    try {
      storeBlob(stageDir, bodyId, body);
      storeBlob(stageDir, scanId, scanBytes);
      stored = true;
    } catch {
      // The caller stores them again and says what failed.
    }
  }
  return { charset, scanBytes, bodyId, scanId, links, nofollow: scan.nofollow === true, stored };
}

/** Unique among every process on every machine. */
const TEMP_TAG = `${hostname()}-${process.pid}-${threadId}-${randomBytes(3).toString('hex')}`;
let temps = 0;

/** Via temp file and rename, so it is whole or absent; synchronous, on a thread's own time. @param {string} dir @param {string} id @param {Buffer} data */
export function storeBlob(dir, id, data) {
  const sub = join(dir, id.slice(0, 2));
  const file = join(sub, id);
  if (existsSync(file)) return;
  try {
    writeNew(file, data, true);
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'ENOENT') throw error;
    mkdirSync(sub, { recursive: true });
    writeNew(file, data, true);
  }
}

/** @param {RenderContext} context */
export function createRenderer(context) {
  const staticRoot = new URL(context.staticRoot);
  const dynamicBase = context.dynamicBase === null ? null : new URL(context.dynamicBase);
  const siteUrl = context.siteUrl === null ? null : new URL(context.siteUrl);
  const crawlOrigins = new Set(context.origins);
  /** @type {{ fileOf(key: string): string | null } | null} */ let names = null;
  return {
    /** @param {NameTableData} data */
    setNames(data) {
      names = openNameTable(data);
    },
    /** On the main thread, the table itself. @param {{ fileOf(key: string): string | null }} table */
    setTable(table) {
      names = table;
    },
    /** @param {RenderInput} input @returns {RenderOutput} */
    render(input) {
      const own = input.names;
      const table = own ? { fileOf: (/** @type {string} */ key) => own.get(key) ?? null } : names;
      if (!table) throw new Error('render before the name table was set');
      const result = renderDocument({
        body: input.raw,
        scan: decodeScan(input.scan),
        type: input.type,
        charset: input.charset,
        placeholderMode: context.placeholders,
        pricePath: context.pricePath,
        pageUrl: new URL(input.url),
        file: input.file,
        targetFile: (key) => table.fileOf(key),
        staticRoot,
        dynamicBase,
        crawlOrigins,
        relativeLinks: context.relativeLinks,
        siteUrl,
      });
      const output = result.body;
      const hash = output === input.raw ? input.bodyId : sha256(output);
      const written = hash !== input.unchangedSha;
      if (written && input.temp !== undefined) writeNew(input.temp, output, input.replace === true);
      /** @type {RenderOutput} */
      const out = { bytes: output.length, sha256: hash, written, placeholders: result.placeholders, warnings: result.warnings };
      if (input.temp === undefined || input.wantOutput) out.output = output;
      return out;
    },
  };
}

/** Created, never through an existing file or link; replaced atomically. @param {string} path @param {Buffer} data @param {boolean} [replace] */
export function writeNew(path, data, replace = false) {
  if (replace) {
    // Own file first, then renamed over: another process writing the same path never meets a half-written file.
    const own = `${path}.tmp-${TEMP_TAG}-${++temps}`;
    writeNew(own, data);
    try {
      renameSync(own, path);
    } catch (error) {
      rmSync(own, { force: true });
      throw error;
    }
    return;
  }
  const fd = openSync(path, CREATE, 0o644);
  try {
    let done = 0;
    while (done < data.length) done += writeSync(fd, data, done, data.length - done);
  } finally {
    closeSync(fd);
  }
}

/** The descriptors stay open until the thread ends. */
export function createPlaceReader() {
  /** @type {Map<string, number>} */ const fds = new Map();
  /** @param {BlobPlace} place @returns {Buffer} */
  return (place) => {
    if (place.length < 0) return readFileSync(place.path); // a blob of its own: read once, nothing kept open
    let fd = fds.get(place.path);
    if (fd === undefined) {
      fd = openSync(place.path, 'r');
      fds.set(place.path, fd);
    }
    const buffer = Buffer.allocUnsafeSlow(place.length);
    let done = 0;
    while (done < place.length) {
      const read = readSync(fd, buffer, done, place.length - done, place.at + done);
      if (read === 0) throw new Error(`staged blob in ${place.path} is shorter than recorded`);
      done += read;
    }
    return buffer;
  };
}
