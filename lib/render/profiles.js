// @ts-check
import { readFileSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTicks } from '../runtime/processes.js';
import { killAndWait } from './browser.js';

/**
 * Chromium profiles (--user-data-dir) in the temporary directory, each with
 * the record of the process that made it. A crawl killed with SIGKILL cannot
 * remove its profile: the next render crawl removes the profiles whose owner
 * is gone. An owner is gone when its pid no longer runs, or runs a process
 * started at another time (the pid was reused), or the machine was rebooted.
 * A profile without a record, of another host or of another user is left.
 *
 * @typedef {{ pid: number, start: string | null, boot: string | null, host: string }} ProfileOwner
 *   start: the process's start time in clock ticks since boot (/proc/PID/stat); boot: the kernel's boot id
 */

export const PROFILE_PREFIX = 'prerender-chromium-';
export const OWNER_FILE = 'prerender-owner.json';

/** @returns {string | null} */
function bootId() {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() || null;
  } catch {
    return null;
  }
}

/** @param {number} [pid] @returns {ProfileOwner} */
export function ownerRecord(pid = process.pid) {
  return { pid, start: startTicks(pid), boot: bootId(), host: os.hostname() };
}

/**
 * Whether the process that wrote `owner` is certainly gone. Unsure is alive.
 * @param {ProfileOwner} owner
 */
export function ownerGone(owner) {
  if (owner.host !== os.hostname()) return false;
  const boot = bootId();
  if (owner.boot && boot && owner.boot !== boot) return true;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === 'ESRCH';
  }
  const start = startTicks(owner.pid);
  return owner.start !== null && start !== null && start !== owner.start;
}

/**
 * A new profile in `tmpDir`, recorded as this process's.
 * @param {string} tmpDir
 */
export async function makeProfile(tmpDir) {
  const profile = await mkdtemp(path.join(tmpDir, PROFILE_PREFIX));
  try {
    await writeFile(path.join(profile, OWNER_FILE), JSON.stringify(ownerRecord()));
  } catch (error) {
    await rm(profile, { recursive: true, force: true }).catch(() => {});
    throw error;
  }
  return profile;
}

/**
 * Remove the profiles in `tmpDir` whose owner is gone (see above), after
 * killing any process still using one. Errors are passed over: this is tidying.
 * @param {string} tmpDir
 * @returns {Promise<string[]>} the profiles removed
 */
export async function removeStaleProfiles(tmpDir) {
  /** @type {string[]} */
  const removed = [];
  let names;
  try {
    names = await readdir(tmpDir);
  } catch {
    return removed;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    if (!name.startsWith(PROFILE_PREFIX)) continue;
    const profile = path.join(tmpDir, name);
    try {
      const info = await lstat(profile);
      if (!info.isDirectory() || (uid !== undefined && info.uid !== uid)) continue;
      const owner = JSON.parse(await readFile(path.join(profile, OWNER_FILE), 'utf8'));
      if (!Number.isSafeInteger(owner?.pid) || typeof owner.host !== 'string' || !ownerGone(owner)) continue;
      await killAndWait(profile);
      await rm(profile, { recursive: true, force: true });
      removed.push(profile);
    } catch {
      // no record, unreadable, or removed meanwhile: left as it is
    }
  }
  return removed;
}
