// @ts-check
import { lstat, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DeployError, LockedError } from '../errors.js';
import { isAlive } from '../output/lock.js';
import { LOCK_NAME } from './release.js';

/**
 * A deploy target's lock, one format on every kind of target: DIR/.prerender-lock, a directory made with mkdir (atomic here
 * and on an ssh server), holding `owner`, a JSON line; a local publish and an ssh deploy exclude each other. A lock whose owner
 * ran on this host and is gone is taken over; one without a readable owner is held, and the message says to remove it.
 * @typedef {import('../output/lock.js').LockOwner} LockOwner @typedef {{ text: string, owner: LockOwner | null }} HeldLock
 */

/** @param {unknown} error */ const errno = (error) => /** @type {NodeJS.ErrnoException} */ (error)?.code;

export const ownerText = () => JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString() });

/** @param {string} text an owner line @returns {LockOwner | null} */
export function parseOwner(text) {
  try {
    const parsed = JSON.parse(text);
    return Number.isSafeInteger(parsed?.pid) && typeof parsed.host === 'string' ? parsed : null;
  } catch {
    return null;
  }
}

/** Its owner ran on this host and is gone. @param {LockOwner | null} owner */
export const isStale = (owner) => owner !== null && !isAlive(owner);

/** For messages. @param {LockOwner | null} owner */
export const holderText = (owner) => (owner ? `pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}` : 'a run that is starting, or one killed before it wrote its owner');

/** @param {LockOwner | null} owner */ export const onlyAPersonCanTell = (owner) => owner === null || owner.host !== os.hostname();

/** Null when there is none. @param {string} lock @returns {Promise<HeldLock | null>} */
async function readHeld(lock) {
  const info = await lstat(lock).catch((error) => {
    if (errno(error) === 'ENOENT') return null;
    throw error;
  });
  if (!info) return null;
  const file = info.isDirectory() ? path.join(lock, 'owner') : lock;
  const text = (await readFile(file, 'utf8').catch((error) => {
    if (errno(error) === 'ENOENT') return '';
    throw error;
  })).trim();
  return { text, owner: parseOwner(text) };
}

/** @param {unknown} error */ const diskFull = (error) => errno(error) === 'ENOSPC' || errno(error) === 'EDQUOT';

/**
 * @param {string} dir the target's directory, which exists
 * @param {{ busy: (who: string) => string, clean: () => Promise<void>, leftovers: () => Promise<string[]> }} how busy: the message
 *   when a live run holds it; clean: remove failed runs' leftovers, holding the lock, when the disk is full
 * @returns {Promise<{ release(): Promise<void> }>}
 */
export async function takeLock(dir, how) {
  const lock = path.join(dir, LOCK_NAME);
  const text = ownerText();
  const release = async () => {
    if ((await readHeld(lock).catch(() => null))?.text === text) await rm(lock, { recursive: true, force: true });
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await mkdir(lock);
    } catch (error) {
      if (diskFull(error)) throw fullError(`, so the lock ${lock} cannot be made`, await how.leftovers().catch(() => []));
      if (errno(error) !== 'EEXIST') throw error;
      const held = await readHeld(lock);
      if (!held) continue; // released meanwhile
      if (!isStale(held.owner)) {
        throw new LockedError(`${how.busy(holderText(held.owner))}${onlyAPersonCanTell(held.owner) ? ` (if it is gone, remove ${lock})` : ''}`);
      }
      await takeOver(lock, held.text);
      continue;
    }
    try {
      await writeOwner(lock, text, how.clean);
    } catch (error) {
      await rm(lock, { recursive: true, force: true });
      throw error;
    }
    return { release };
  }
  throw new LockedError(`could not take the lock ${lock}: it keeps changing hands`);
}

/** On a full disk, failed runs' leftovers go first: we hold the lock, none of it is live. @param {string} lock @param {string} text @param {() => Promise<void>} clean */
async function writeOwner(lock, text, clean) {
  const file = path.join(lock, 'owner');
  try {
    await writeFile(file, text + '\n');
    return;
  } catch (error) {
    if (!diskFull(error)) throw error;
  }
  await clean();
  await writeFile(file, text + '\n').catch((error) => {
    if (!diskFull(error)) throw error;
    throw fullError(', even with what failed runs left removed', []);
  });
}

/** Only one taker can move it; one that changed hands meanwhile is put back. @param {string} lock @param {string} text the owner line read */
async function takeOver(lock, text) {
  const aside = `${lock}.stale.${process.pid}`;
  try {
    await rename(lock, aside);
  } catch (error) {
    if (errno(error) === 'ENOENT') return;
    throw error;
  }
  const moved = await readHeld(aside);
  if (moved && moved.text !== text) {
    await rename(aside, lock).catch(() => rm(aside, { recursive: true, force: true }));
    return;
  }
  await rm(aside, { recursive: true, force: true });
}

/** Callers prefix the target. @param {string} clause from ", so" or " while" @param {string[]} leftovers directories to delete */
function fullError(clause, leftovers) {
  const advice = leftovers.length > 0 ? `delete ${leftovers.join(', ')} (left by a failed run), or free space on it` : 'free space on it';
  return new DeployError(`the disk is full (ENOSPC)${clause}: ${advice}, then run again`, { code: 'DEPLOY_DISK_FULL' });
}

export { fullError as diskFullError };
