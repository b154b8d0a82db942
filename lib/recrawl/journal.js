// @ts-check
import { closeSync, createReadStream, openSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { StateVersionError } from './state.js';
import { StoredPages } from '../store/stored-pages.js';

/**
 * The journal of a run in progress: a line per URL done, handed to the OS each event-loop turn, so a SIGKILL loses only
 * pages being staged. A run with the same roots and scope resumes from it; a complete run removes it.
 * @typedef {import('./state.js').StoredPage & { wanted?: string, change?: import('../store/records.js').Change, stale?: boolean }} JournalEntry
 */

export const JOURNAL_FILE = 'journal.ndjson';
const JOURNAL_VERSION = 1;

/**
 * `{ other: true }` for another key (roots and scope); null if none.
 * @param {string} stateDir @param {string} key @param {StoredPages<JournalEntry>} [entries] where to keep the entries
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

/** @param {string} stateDir @param {string} key roots and scope @param {{ append: boolean }} options append: go on with the journal being resumed */
export function createJournal(stateDir, key, { append }) {
  const file = path.join(stateDir, JOURNAL_FILE);
  // Synchronous appends to the page cache: cheaper than a write stream's thread-pool round trip.
  /** @type {number | null} */ let fd = null;
  /** @type {Error | null} */ let failed = null;
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
    /** The journal stays. */
    async close() {
      flush();
      closeFd();
    },
    async remove() {
      closeFd();
      await rm(file, { force: true });
    },
  };
}
