// @ts-check
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { PrerenderError } from '../errors.js';
import { StoredPages } from '../store/stored-pages.js';

/**
 * The state a crawl leaves for the next one: a header line, a JSON line per page, then `{"end":N}`; written to a temp file
 * and renamed. Invariant: a state without its end line is refused, never read as a smaller crawl whose missing files would
 * count as no crawl's. `body`/`scan` name blobs, so an unchanged page is re-rendered and followed without a fetch.
 * @typedef {{ url: string, state: 'done' | 'redirect', status: number, contentType?: string, type?: 'html' | 'css' | 'other',
 *   charset?: string, etag?: string, lastModified?: string, location?: string, file?: string,
 *   body?: string, scan?: string, bytes?: number, sha256?: string, compare?: string, compressed?: string[],
 *   placeholders?: import('../output/manifest/schema.js').ManifestSlot[], render?: import('../render/step.js').RenderInfo,
 *   oldFiles?: string[], fetched?: number, maxAge?: number, immutable?: boolean }} StoredPage
 *   oldFiles: earlier files an incomplete run left, for the next complete crawl to remove;
 *   fetched: its run's start, in seconds, when fetched or last revalidated; maxAge, immutable: from its Cache-Control
 * @typedef {{ format: 'prerender-state', version: number, complete: boolean, roots: string[], output: string, ignore?: string[], naming?: string, precompressed?: string[], sealed?: boolean, finishedAt: string }} StateHeader
 *   complete: only then may the next run remove files of pages gone; sealed: it has an end line (older versions wrote none)
 */

export const STATE_FILE = 'state.ndjson';
export const STATE_VERSION = 1;

/** The state directory holds a state this version cannot read. */
export class StateVersionError extends PrerenderError {
  code = 'STATE_VERSION';
}

/**
 * Null when there is none. @param {string} stateDir @param {StoredPages<StoredPage>} [pages] where to keep the pages
 * @returns {Promise<{ header: StateHeader, pages: StoredPages<StoredPage>, urls: string[] } | null>} urls: each line's, in order
 */
export async function readState(stateDir, pages = /** @type {StoredPages<StoredPage>} */ (new StoredPages())) {
  const file = path.join(stateDir, STATE_FILE);
  /** @type {StateHeader | null} */ let header = null;
  let lines = 0;
  /** @type {string[]} */ const urls = [];
  /** @type {number | null} */ let end = null;
  /** @param {string} line */
  const onLine = (line) => {
    if (line === '') return;
    const value = JSON.parse(line);
    if (!header) {
      if (value?.format !== 'prerender-state') throw new StateVersionError(`${file} is not a prerender state file; remove it, or crawl with --full`);
      if (value.version !== STATE_VERSION) {
        throw new StateVersionError(`${file} is state version ${JSON.stringify(value.version)}; this prerender reads version ${STATE_VERSION}: crawl with --full to start over`);
      }
      header = value;
      return;
    }
    if (end !== null) throw new Error('lines after its end line');
    if (typeof value?.end === 'number') {
      end = value.end;
      return;
    }
    lines++;
    if (!isStoredPage(value)) throw new Error(`line ${lines + 1} is not a page of a state`);
    pages.set(value.url, value);
    urls.push(value.url);
  };
  try {
    await eachLine(file, onLine);
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') return null;
    if (error instanceof StateVersionError) throw error;
    throw new StateVersionError(`${file} cannot be read (${/** @type {Error} */ (error).message}); crawl with --full to start over`, { cause: error });
  }
  // Set in onLine: what the compiler cannot follow into a callback.
  const read = /** @type {StateHeader | null} */ (header);
  const ended = /** @type {number | null} */ (end);
  if (!read) throw new StateVersionError(`${file} is empty; crawl with --full to start over`);
  if (read.sealed && ended !== lines) {
    throw new StateVersionError(`${file} is cut short (${lines} of ${ended ?? 'its'} lines, ${ended === null ? 'no end line' : 'end line counts more'}); crawl with --full to start over`);
  }
  return { header: read, pages, urls };
}

const CHUNK = 1 << 20;

/**
 * Each line of a file, without its end (LF or CRLF), read in 1 MiB chunks: a line at a time through readline cost
 * more than parsing it. @param {string} file @param {(line: string) => void} onLine
 */
async function eachLine(file, onLine) {
  const handle = await open(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(CHUNK);
    const decoder = new StringDecoder('utf8');
    let rest = '';
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, CHUNK, null);
      const text = bytesRead === 0 ? rest + decoder.end() : rest + decoder.write(chunk.subarray(0, bytesRead));
      let at = 0;
      for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', at)) {
        onLine(text.charCodeAt(newline - 1) === 13 ? text.slice(at, newline - 1) : text.slice(at, newline));
        at = newline + 1;
      }
      rest = text.slice(at);
      if (bytesRead === 0) break;
    }
    if (rest !== '') onLine(rest.endsWith('\r') ? rest.slice(0, -1) : rest);
  } finally {
    await handle.close();
  }
}

/** A page line lacking these fields is damage: the state is refused. @param {any} value @returns {value is StoredPage} */
function isStoredPage(value) {
  if (typeof value?.url !== 'string' || !/^https?:\/\//.test(value.url) || typeof value.status !== 'number') return false;
  if (value.state === 'redirect') return typeof value.location === 'string';
  return value.state === 'done' && (value.file === undefined || typeof value.file === 'string');
}

/** Streamed to a temp file, renamed over the old one by `finish()`. @param {string} stateDir @param {Omit<StateHeader, 'format' | 'version' | 'finishedAt'>} header */
export function createStateWriter(stateDir, header) {
  const file = path.join(stateDir, STATE_FILE);
  const temp = path.join(stateDir, `tmp-state-${process.pid}.ndjson`);
  const stream = createWriteStream(temp, { flags: 'w' });
  /** @type {Error | null} */ let failed = null;
  stream.on('error', (error) => { failed = error; });
  let pending = '';
  /** @param {string} text */ const push = async (text) => {
    pending += text;
    if (pending.length < 65_536) return;
    const chunk = pending;
    pending = '';
    if (!stream.write(chunk)) await once(stream, 'drain');
  };
  let lines = 0;
  const finishedAt = new Date().toISOString();
  /** @type {Promise<void>} */
  let started = push(JSON.stringify({ format: 'prerender-state', version: STATE_VERSION, ...header, sealed: true, finishedAt }) + '\n');
  return {
    /** With the line count, what tells this state from another (follow-lists.js). */
    finishedAt,
    /** @param {StoredPage} page */
    async add(page) {
      await started;
      lines++;
      started = push(JSON.stringify(page) + '\n');
      await started;
    },
    async finish() {
      await started;
      stream.end(pending + JSON.stringify({ end: lines }) + '\n');
      await once(stream, 'close');
      if (failed) throw failed;
      try {
        // On disk before it replaces the last state: a power loss leaves one or the other, whole.
        const handle = await open(temp, 'r');
        await handle.sync().finally(() => handle.close());
        await rename(temp, file);
      } catch (error) {
        throw new PrerenderError(`cannot write the crawl's state ${file}: ${/** @type {Error} */ (error).message}`, { cause: error });
      }
      // The rename on disk too, where the directory can be synced.
      const dir = await open(stateDir, 'r').catch(() => null);
      await dir?.sync().catch(() => {}).finally(() => dir.close());
    },
    async abort() {
      stream.destroy();
      await rm(temp, { force: true });
    },
  };
}
