// @ts-check
import { closeSync, createReadStream, openSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { StateVersionError } from './state.js';
import { StoredPages } from '../store/stored-pages.js';

/**
 * The journal of a run in progress, OUT/.prerender/journal.ndjson: one line
 * per URL done (a page fetched and staged, or a redirect), appended while
 * crawling: the lines of one turn of the event loop go to the OS together,
 * right after it (a SIGKILL loses at most the pages that were being staged).
 * A run that was killed
 * (or interrupted) leaves it; the next run with the same roots and scope
 * resumes from it: the pages it lists are not fetched again (their bodies
 * and links are in blobs.log), and the crawl goes on from their links. A
 * complete run removes it.
 *
 *   {"format":"prerender-journal","version":1,"key":"<roots and scope>","startedAt":"..."}
 *   {"url":"...","state":"done","status":200,"contentType":"text/html","type":"html","wanted":"a.html","body":"<sha256>","scan":"<sha256>","change":"new"}
 *   {"url":"...","state":"redirect","status":301,"location":"..."}
 *
 * @typedef {import('./state.js').StoredPage & {
 *   wanted?: string, change?: import('../store/records.js').Change, stale?: boolean,
 * }} JournalEntry
 */

export const JOURNAL_FILE = 'journal.ndjson';
const JOURNAL_VERSION = 1;

/**
 * The entries of the journal a killed run left, if it was written for the
 * same key (roots and scope); `{ other: true }` if for another; null if
 * there is none. A journal this version cannot read is refused, as a state is.
 * @param {string} stateDir
 * @param {string} key
 * @param {StoredPages<JournalEntry>} [entries] where to keep the entries (packed: never 200,000 objects)
 * @returns {Promise<{ startedAt: string, entries: StoredPages<JournalEntry> } | { other: true } | null>}
 */
export async function readJournal(stateDir, key, entries = /** @type {StoredPages<JournalEntry>} */ (new StoredPages())) {
  const file = path.join(stateDir, JOURNAL_FILE);
  const input = createReadStream(file);
  let startedAt = '';
  let first = true;
  try {
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      if (line === '') continue;
      let value;
      try {
        value = JSON.parse(line);
      } catch {
        if (first) return null; // killed as it began: nothing to resume
        continue; // a line torn by the kill
      }
      if (first) {
        first = false;
        if (value?.format !== 'prerender-journal') throw new StateVersionError(`${file} is not a prerender journal; remove it, or crawl with --no-resume`);
        if (value.version !== JOURNAL_VERSION) {
          throw new StateVersionError(`${file} is journal version ${JSON.stringify(value.version)}; this prerender reads version ${JOURNAL_VERSION}: crawl with --no-resume to start over`);
        }
        if (value.key !== key) return { other: true };
        startedAt = value.startedAt;
        continue;
      }
      if (typeof value?.url === 'string') entries.set(value.url, value);
    }
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') return null;
    throw error;
  } finally {
    input.destroy();
  }
  return first ? null : { startedAt, entries };
}

/**
 * @param {string} stateDir
 * @param {string} key roots and scope: a journal is resumed only by a run with the same
 * @param {{ append: boolean }} options append: go on with the journal being resumed
 */
export function createJournal(stateDir, key, { append }) {
  const file = path.join(stateDir, JOURNAL_FILE);
  // Synchronous appends: a line or a few per event-loop turn, to a file in
  // the page cache, cost a few microseconds each, a fraction of a write
  // stream's round trip through the thread pool.
  /** @type {number | null} */
  let fd = null;
  /** @type {Error | null} */
  let failed = null;
  try {
    fd = openSync(file, append ? 'a' : 'w');
  } catch (error) {
    failed = /** @type {Error} */ (error);
  }
  // Appending after a kill: the last line may be torn, so start on a new one.
  let pending = append ? '\n' : JSON.stringify({ format: 'prerender-journal', version: JOURNAL_VERSION, key, startedAt: new Date().toISOString() }) + '\n';
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending === '' || failed || fd === null) return;
    try {
      writeSync(fd, pending);
    } catch (error) {
      failed = /** @type {Error} */ (error);
    }
    pending = '';
  };
  flush();
  const closeFd = () => {
    if (fd === null) return;
    try {
      closeSync(fd);
    } catch {
      // nothing to do: the journal is only a help to resume
    }
    fd = null;
  };
  return {
    /** @param {JournalEntry} entry */
    add(entry) {
      pending += JSON.stringify(entry) + '\n';
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    /** Hand what is pending to the OS and close (the journal stays). */
    async close() {
      flush();
      closeFd();
    },
    /** The run is complete: no journal to resume from. */
    async remove() {
      closeFd();
      await rm(file, { force: true });
    },
  };
}
