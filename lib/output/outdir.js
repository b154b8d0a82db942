// @ts-check
import { constants } from 'node:fs';
import { access, lstat, mkdir, readdir, realpath, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { OutputError } from '../errors.js';

/** The tool's own directory in OUT: crawl state, lock and temp files; never a page. */
export const STATE_DIR = '.prerender';

const REASONS = /** @type {Record<string, string>} */ ({
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'an input/output error',
  ENOTDIR: 'a path component is a file, not a directory',
  ENOENT: 'the path cannot be created there',
  ENAMETOOLONG: 'the path is too long',
  ELOOP: 'too many symbolic links',
  EMFILE: 'too many open files',
});

/** Codes that end the run: no page can be written reliably after them. */
const FATAL = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'EIO', 'EMFILE', 'ENFILE']);

/**
 * Disk full, read-only, no permission... end the run (OutputError); anything else fails that one file.
 * @param {unknown} error @param {string} doing "write", "create", "rename"... @param {string} where the path
 */
export function outputFailure(error, doing, where) {
  const code = /** @type {NodeJS.ErrnoException} */ (error)?.code;
  if (error instanceof OutputError || !code || !FATAL.has(code)) return error;
  return outputError(error, doing, where);
}

/** @param {unknown} error @param {string} doing @param {string} where */
export function outputError(error, doing, where) {
  const code = /** @type {NodeJS.ErrnoException} */ (error)?.code;
  const reason = (code && REASONS[code]) ?? /** @type {Error} */ (error)?.message ?? String(error);
  return new OutputError(`cannot ${doing} ${where}: ${reason}${code ? ` (${code})` : ''}`, { cause: error });
}

/**
 * Before anything is fetched: OUT created by a bounded walk up (a recursive mkdir can loop on a pseudo file system),
 * its state directory checked real and inside it, and a probe written.
 * @param {string} out @returns {Promise<{ out: string, realOut: string, stateDir: string, created: string[] }>} created: outermost first
 */
export async function prepareOutDir(out) {
  const absolute = path.resolve(out);
  // Inside another crawl's state directory, its next run would find pages it never made.
  if (absolute.split(path.sep).includes(STATE_DIR)) {
    throw new OutputError(`refusing to use ${absolute} as the output directory: it is in a crawl's state directory (${STATE_DIR}); choose another --out`);
  }
  /** @type {string[]} */ const missing = [];
  let dir = absolute;
  for (let depth = 0; depth < 4096; depth++) {
    try {
      const found = await stat(dir);
      if (!found.isDirectory()) throw new OutputError(`cannot use ${absolute} as the output directory: ${dir} is a file, not a directory`);
      break;
    } catch (error) {
      if (error instanceof OutputError) throw error;
      if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'ENOENT') throw outputError(error, 'use', dir);
      missing.push(dir);
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  missing.reverse();
  for (const level of missing) {
    await mkdir(level).catch((error) => {
      if (error.code !== 'EEXIST') throw outputError(error, 'create the output directory', level);
    });
  }
  const realOut = await realpath(absolute).catch((error) => { throw outputError(error, 'use', absolute); });
  if (realOut.split(path.sep).includes(STATE_DIR)) {
    throw new OutputError(`refusing to use ${absolute} as the output directory: it leads into a crawl's state directory (${realOut}); choose another --out`);
  }
  const stateDir = path.join(absolute, STATE_DIR);
  const found = await lstat(stateDir).catch((error) => {
    if (error.code === 'ENOENT') return null;
    throw outputError(error, 'use', stateDir);
  });
  if (found && !found.isDirectory()) {
    throw new OutputError(`refusing to use ${stateDir}: it is ${found.isSymbolicLink() ? 'a symbolic link' : 'not a directory'} (prerender keeps its own files there; remove it)`);
  }
  if (!found) {
    await mkdir(stateDir).catch((error) => {
      if (error.code !== 'EEXIST') throw outputError(error, 'create', stateDir);
    });
  }
  const probe = path.join(stateDir, `probe-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  await writeFile(probe, 'probe', { flag: 'wx' }).catch((error) => { throw outputError(error, 'write in', stateDir); });
  await rm(probe, { force: true });
  // A read-only OUT (its state directory perhaps writable) is found now, before any fetch.
  await access(absolute, constants.W_OK | constants.X_OK).catch((error) => { throw outputError(error, 'write in', absolute); });
  return { out: absolute, realOut, stateDir, created: missing };
}

/** Only while holding the lock. @param {string} stateDir @returns {Promise<number>} entries removed */
export async function clearLeftovers(stateDir) {
  const entries = await readdir(stateDir).catch(() => /** @type {string[]} */ ([]));
  let removed = 0;
  for (const entry of entries) {
    if (!/^(tmp-|run-|probe-|lock\.stale-)/.test(entry)) continue;
    await rm(path.join(stateDir, entry), { recursive: true, force: true }).catch((error) => { throw outputError(error, 'remove the leftover', path.join(stateDir, entry)); });
    removed++;
  }
  return removed;
}
