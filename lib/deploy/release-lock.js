// @ts-check
import { lstat, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DeployError, LockedError } from '../errors.js';
import { isAlive } from '../output/lock.js';
import { LOCK_NAME } from './release.js';

/**
 * The lock of a deploy target, one format on every kind of target:
 * DIR/.prerender-lock, a directory made with mkdir (atomic, here and on an
 * ssh server), holding `owner`, one line of JSON: pid, host, start time.
 * A local publish and an ssh deploy to the same web root exclude each other.
 *
 * Stale, and taken over (moved aside, then checked to be the one read):
 * a lock whose owner ran on this host and is gone. A lock without a
 * readable owner is held (its maker is starting, or died between the two
 * steps): the message says to remove it. A lock file of older versions (the
 * owner's JSON in a plain file) is read the same way.
 *
 * @typedef {import('../output/lock.js').LockOwner} LockOwner
 * @typedef {{ text: string, owner: LockOwner | null }} HeldLock
 */

/** @param {unknown} error */
const errno = (error) => /** @type {NodeJS.ErrnoException} */ (error)?.code;

/** Our owner line. */
export const ownerText = () => JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString() });

/**
 * @param {string} text an owner line
 * @returns {LockOwner | null}
 */
export function parseOwner(text) {
  try {
    const parsed = JSON.parse(text);
    return Number.isSafeInteger(parsed?.pid) && typeof parsed.host === 'string' ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * Whether a held lock may be taken over: its owner ran on this host and is gone.
 * @param {LockOwner | null} owner
 */
export const isStale = (owner) => owner !== null && !isAlive(owner);

/**
 * Who holds a lock, for messages; and whether only a person can tell it is
 * gone (another host, or no owner written).
 * @param {LockOwner | null} owner
 */
export const holderText = (owner) => (owner ? `pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}` : 'a run that is starting, or one killed before it wrote its owner');

/** @param {LockOwner | null} owner */
export const onlyAPersonCanTell = (owner) => owner === null || owner.host !== os.hostname();

/**
 * The lock at `lock` as it is now, or null when there is none.
 * @param {string} lock
 * @returns {Promise<HeldLock | null>}
 */
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

/** @param {unknown} error */
const diskFull = (error) => errno(error) === 'ENOSPC' || errno(error) === 'EDQUOT';

/**
 * Take the lock of a local target.
 * @param {string} dir the target's directory (it exists)
 * @param {{
 *   busy: (who: string) => string,
 *   clean: () => Promise<void>,
 *   leftovers: () => Promise<string[]>,
 * }} how busy: the message when a live run holds it; clean: remove what
 *   failed runs left (called holding the lock, when the disk is full);
 *   leftovers: what failed runs left, to name when the lock cannot be made
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

/**
 * Write our owner line into the lock we made. On a full disk, what failed
 * runs left is removed first (we hold the lock: none of it is live).
 * @param {string} lock
 * @param {string} text
 * @param {() => Promise<void>} clean
 */
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

/**
 * Move a stale lock aside (only one taker can), check it was the one read,
 * and remove it; one that changed hands meanwhile is put back.
 * @param {string} lock
 * @param {string} text the owner line read
 */
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

/**
 * The message names the target's directory only where it must (callers prefix the target).
 * @param {string} clause what could not be done, from ", so" or " while"
 * @param {string[]} leftovers directories to delete
 */
function fullError(clause, leftovers) {
  const advice = leftovers.length > 0 ? `delete ${leftovers.join(', ')} (left by a failed run), or free space on it` : 'free space on it';
  return new DeployError(`the disk is full (ENOSPC)${clause}: ${advice}, then run again`, { code: 'DEPLOY_DISK_FULL' });
}

export { fullError as diskFullError };
