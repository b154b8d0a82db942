// @ts-check
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LockedError } from '../errors.js';
import { outputError } from './outdir.js';

/**
 * One crawl at a time on an output directory: a lock file made with O_EXCL, holding its owner's pid and host; one whose owner
 * is gone (same host, no such pid) is taken over. @typedef {{ pid: number, host: string, startedAt: string }} LockOwner
 */

const LOCK_NAME = 'lock';
/** An unreadable lock file younger than this is being written. */
const UNREADABLE_GRACE_MS = 10_000;

/** Whether a lock's owner may still run: always for another host. @param {LockOwner} owner */
export function isAlive(owner) {
  if (owner.host !== os.hostname()) return true; // cannot tell: keep off
  if (owner.pid === process.pid) return true;
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === 'EPERM';
  }
}

/** @param {string} file @returns {Promise<{ owner: LockOwner | null, text: string, ageMs: number } | null>} null: no lock file */
async function readLock(file) {
  try {
    const [text, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    /** @type {LockOwner | null} */ let owner = null;
    try {
      const parsed = JSON.parse(text);
      if (Number.isSafeInteger(parsed?.pid) && typeof parsed.host === 'string') owner = parsed;
    } catch {
      owner = null;
    }
    return { owner, text, ageMs: Date.now() - info.mtimeMs };
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * @param {string} stateDir OUT/.prerender @param {string} out for messages
 * @param {{ name?: string, busy?: (who: string) => string }} [options] busy: the message when a live process holds it
 * @returns {Promise<{ release(): Promise<void> }>}
 */
export async function acquireLock(stateDir, out, options = {}) {
  const file = path.join(stateDir, options.name ?? LOCK_NAME);
  const busy = options.busy ?? ((/** @type {string} */ who) => `another prerender crawl (${who}) is writing to ${out}; wait for it to end or choose another --out`);
  const text = JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString() });
  const release = async () => {
    const current = await readLock(file).catch(() => null);
    if (current?.text === text) await rm(file, { force: true });
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await writeFile(file, text, { flag: 'wx' });
      return { release };
    } catch (error) {
      if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'EEXIST') throw outputError(error, 'create the lock', file);
    }
    const held = await readLock(file);
    if (!held) continue; // released meanwhile
    if (held.owner ? isAlive(held.owner) : held.ageMs < UNREADABLE_GRACE_MS) {
      const who = held.owner ? `pid ${held.owner.pid} on ${held.owner.host}, since ${held.owner.startedAt}` : 'a process that is starting';
      throw new LockedError(`${busy(who)}${held.owner && held.owner.host !== os.hostname() ? ` (if it is gone, remove ${file})` : ''}`);
    }
    // The owner is gone: move its lock aside (only one taker can), then check we moved that one.
    const aside = `${file}.stale-${process.pid}`;
    try {
      await rename(file, aside);
    } catch (error) {
      if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') continue;
      throw outputError(error, 'take over the lock', file);
    }
    const moved = await readLock(aside);
    await rm(aside, { force: true });
    if (moved && moved.text !== held.text) {
      // A live crawl took the lock between our read and our move: give it back.
      await writeFile(file, moved.text, { flag: 'wx' }).catch(() => {});
      throw new LockedError(busy('started at the same moment'));
    }
  }
  throw new LockedError(`could not take the lock ${file}: it keeps changing hands`);
}
