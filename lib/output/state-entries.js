// @ts-check
import { lstat, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { StateEntryError } from '../errors.js';
import { outputError } from './outdir.js';

/**
 * The entries prerender keeps in OUT/.prerender are regular files it writes (or, for `directory` ones, directories).
 * Anything else there, a directory, a link or a pipe that would block an open, is refused by name before it is
 * opened; `--full`, which starts over, removes it instead.
 * @typedef {{ name: string, directory?: boolean }} StateEntry directory: a directory is expected (a link to one is fine)
 */

/** @param {import('node:fs').Stats} info */
function kindOf(info) {
  if (info.isFile()) return 'a regular file';
  if (info.isDirectory()) return 'a directory';
  if (info.isSymbolicLink()) return 'a symbolic link';
  if (info.isFIFO()) return 'a named pipe';
  if (info.isSocket()) return 'a socket';
  return 'a device';
}

/** What is at `file` when it is not what `entry` expects, or null (absent or right). @param {string} file @param {StateEntry} entry */
async function unusable(file, entry) {
  const info = await (entry.directory ? stat(file) : lstat(file)).catch((/** @type {NodeJS.ErrnoException} */ error) => {
    if (error.code === 'ENOENT') return null;
    throw outputError(error, 'use', file);
  });
  if (!info || (entry.directory ? info.isDirectory() : info.isFile())) return null;
  return kindOf(info);
}

/**
 * Check `entries` of `stateDir`. One that is not what prerender keeps there is refused (StateEntryError), or with
 * `replace` moved aside under a tmp- name (clearLeftovers removes it if this run cannot) and removed.
 * @param {string} stateDir @param {StateEntry[]} entries @param {{ replace: boolean }} options
 * @returns {Promise<{ path: string, found: string }[]>} what was removed
 */
export async function checkStateEntries(stateDir, entries, { replace }) {
  /** @type {{ path: string, found: string }[]} */
  const removed = [];
  for (const entry of entries) {
    const file = path.join(stateDir, entry.name);
    const found = await unusable(file, entry);
    if (!found) continue;
    if (!replace) {
      throw new StateEntryError(`${file} is ${found}, not the ${entry.directory ? 'directory' : 'file'} prerender keeps there`, { path: file, entry: entry.name, found });
    }
    const aside = path.join(stateDir, `tmp-unusable-${entry.name}-${process.pid}`);
    try {
      await rename(file, aside);
    } catch (error) {
      if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') continue; // another --full run took it
      throw outputError(error, 'move aside', file);
    }
    // rm never follows a link: a planted one goes, not what it points to.
    await rm(aside, { recursive: true, force: true }).catch((error) => { throw outputError(error, 'remove', aside); });
    removed.push({ path: file, found });
  }
  return removed;
}
