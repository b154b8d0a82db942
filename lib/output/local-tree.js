// @ts-check
import { constants, lstatSync, renameSync } from 'node:fs';
import { lstat, mkdir, realpath, rm, rmdir, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
/** @typedef {import('./target.js').OutputTarget} OutputTarget */
import { UnsafeFileNameError } from '../errors.js';
import { MANIFEST_NAME } from './manifest/schema.js';
import { STATE_DIR, outputFailure, prepareOutDir } from './outdir.js';

export { STATE_DIR };

/** A segment that is empty, "." or "..", or a NUL. */
const UNUSUAL_NAME = /(?:^|\/)\.{0,2}(?:\/|$)|\0/;

/** New temp files: created, never opened through an existing file or link. */
export const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/** @template T @param {Iterable<T>} items @param {number} limit at a time @param {(item: T) => Promise<unknown>} task */
async function eachLimited(items, limit, task) {
  const iterator = items[Symbol.iterator]();
  const worker = async () => {
    for (let next = iterator.next(); !next.done; next = iterator.next()) await task(next.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

/**
 * Writes go to this run's temp files under OUT/.prerender/; `commit()` renames them into place, manifest last.
 * Security: nothing is written outside OUT (names checked, no directory made through a link out). @implements {OutputTarget}
 */
export class LocalTree {
  /** @param {string} out */
  constructor(out) {
    this.out = path.resolve(out);
    this.location = this.out;
    this.realOut = this.out;
    this.temp = path.join(this.out, STATE_DIR, `tmp-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`);
    /** @type {Map<string, number>} file -> its pending temp file's number */
    this.pending = new Map();
    /** @type {Set<string>} */ this.removals = new Set();
    /** @type {Map<string, string>} file -> the file whose modification time it takes at commit */
    this.sameTime = new Map();
    /** @type {Map<string, Promise<void>>} */ this.dirs = new Map();
    this.counter = 0;
  }

  async init() {
    this.realOut = (await prepareOutDir(this.out)).realOut;
    await mkdir(this.temp).catch((error) => { throw outputFailure(error, 'create', this.temp); });
  }

  /** The absolute path of a tree file, refused if it would leave the tree. @param {string} file relative, forward slashes */
  resolve(file) {
    // A name with no empty, "." or ".." segment and no NUL resolves to itself under OUT: path.resolve is for the others.
    const absolute = path.sep === '/' && this.out !== '/' && !UNUSUAL_NAME.test(file) ? `${this.out}/${file}` : path.resolve(this.out, ...file.split('/'));
    if (!absolute.startsWith(this.out + path.sep)) {
      throw new UnsafeFileNameError(`refusing to write outside the output directory: ${file}`);
    }
    return absolute;
  }

  /**
   * Parents first, each level checked once: ours is real, an existing one is lstat'ed and a link followed only to check it stays in OUT.
   * @param {string} dir absolute @returns {Promise<void>}
   */
  #ensureDir(dir) {
    if (dir === this.out) return Promise.resolve();
    let pending = this.dirs.get(dir);
    if (!pending) {
      pending = (async () => {
        await this.#ensureDir(path.dirname(dir));
        try {
          await mkdir(dir);
          return;
        } catch (error) {
          if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'EEXIST') throw outputFailure(error, 'create', dir);
        }
        const found = await lstat(dir);
        if (found.isDirectory()) return;
        if (!found.isSymbolicLink()) throw Object.assign(new Error(`a file is in the way of the directory ${dir}`), { code: 'EEXIST' });
        const real = await realpath(dir).catch(() => '');
        if (!real.startsWith(this.realOut + path.sep) || !(await stat(real)).isDirectory()) {
          throw new UnsafeFileNameError(`refusing to write through a link that leaves the output directory: ${dir}`);
        }
      })();
      this.dirs.set(dir, pending);
      pending.catch(() => this.dirs.delete(dir));
    }
    return pending;
  }

  /** @param {number} n */
  #tempPath(n) {
    return path.join(this.temp, `${n}.tmp`);
  }

  /** @param {string} file @param {import('./target.js').OutputData} data @param {{ sameTimeAs?: string }} [options] */
  async write(file, data, options = {}) {
    const target = this.resolve(file);
    await this.#ensureDir(path.dirname(target));
    const n = ++this.counter;
    const temp = this.#tempPath(n);
    try {
      await writeFile(temp, data, { flag: CREATE });
    } catch (error) {
      await rm(temp, { force: true });
      throw outputFailure(error, 'write', temp);
    }
    if (options.sameTimeAs !== undefined) this.sameTime.set(file, options.sameTimeAs);
    await this.#adopt(file, n);
  }

  /** Temp file `n` becomes `file` at the commit (replacing any it had). @param {string} file @param {number} n */
  async #adopt(file, n) {
    const previous = this.pending.get(file);
    this.pending.set(file, n);
    this.removals.delete(file);
    if (previous !== undefined) await rm(this.#tempPath(previous), { force: true });
  }

  /** Its directory is made now. @param {string} file */
  async reserve(file) {
    const target = this.resolve(file);
    await this.#ensureDir(path.dirname(target));
    const n = ++this.counter;
    const temp = this.#tempPath(n);
    return {
      path: temp,
      adopt: () => this.#adopt(file, n),
      drop: () => rm(temp, { force: true }),
    };
  }

  /** A temp file written before its tree file is known, given one by `adoptScratch` or removed at commit or abort. */
  scratch() {
    const n = ++this.counter;
    return { path: this.#tempPath(n), n };
  }

  /** @param {number} n a temp file of `scratch()` @param {string} file the tree file it becomes at the commit */
  async adoptScratch(n, file) {
    const target = this.resolve(file);
    await this.#ensureDir(path.dirname(target));
    await this.#adopt(file, n);
  }

  /** The size of a committed tree file, or null. @param {string} file */
  async existing(file) {
    try {
      // A synchronous lstat is cheaper than the thread-pool round trip.
      const found = lstatSync(this.resolve(file));
      return found.isFile() ? found.size : null;
    } catch {
      return null;
    }
  }

  /** @param {string} file */
  async remove(file) {
    this.resolve(file);
    const previous = this.pending.get(file);
    if (previous !== undefined) {
      this.pending.delete(file);
      await rm(this.#tempPath(previous), { force: true });
    }
    this.removals.add(file);
  }

  async commit() {
    const manifest = this.pending.get(MANIFEST_NAME);
    this.pending.delete(MANIFEST_NAME);
    // Synchronous renames are cheaper than thread-pool round trips; a pause now and then lets signals in.
    const move = (/** @type {number} */ n, /** @type {string} */ file) => {
      try {
        renameSync(this.#tempPath(n), this.resolve(file));
      } catch (error) {
        throw outputFailure(error, 'rename a file into', this.resolve(file));
      }
    };
    let moved = 0;
    for (const [file, n] of this.pending) {
      move(n, file);
      if (++moved % 1000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await eachLimited(this.removals, 16, (file) => rm(this.resolve(file), { force: true }));
    await this.#dropEmptyDirs(this.removals);
    /** @type {Map<string, string[]>} source -> the files that take its time */
    const bySource = new Map();
    for (const [file, source] of this.sameTime) bySource.set(source, [...(bySource.get(source) ?? []), file]);
    await eachLimited(bySource, 16, async ([source, files]) => {
      // libuv keeps whole microseconds and times pass through a double: a source and its siblings get one microsecond, set once
      // (.gz and .br raced); beside a source left as it is, a sibling gets the first microsecond not before the source's.
      const times = await stat(this.resolve(source), { bigint: true });
      const atime = Number(times.atimeNs) / 1e9;
      if (this.pending.has(source)) {
        const mtime = wholeMicrosecond(times.mtimeNs);
        for (const file of files) await utimes(this.resolve(file), atime, mtime);
        await utimes(this.resolve(source), atime, mtime);
      } else {
        for (const file of files) await utimes(this.resolve(file), atime, notBefore(times.mtimeNs));
      }
    });
    if (manifest !== undefined) await move(manifest, MANIFEST_NAME);
    this.pending.clear();
    this.removals.clear();
    this.sameTime.clear();
    await this.#dropTemp();
  }

  /** Up to OUT; any with something left stays. @param {Iterable<string>} removed files of the tree */
  async #dropEmptyDirs(removed) {
    /** @type {Set<string>} */ const dirs = new Set();
    for (const file of removed) {
      for (let dir = path.posix.dirname(file); dir !== '.' && dir !== '/'; dir = path.posix.dirname(dir)) dirs.add(dir);
    }
    // Deepest first, so that a parent is tried once its children are gone.
    for (const dir of [...dirs].sort((a, b) => b.split('/').length - a.split('/').length)) {
      if (dir === STATE_DIR || dir.startsWith(`${STATE_DIR}/`)) continue;
      const absolute = this.resolve(dir);
      // Security: only a directory of the tree itself, never one a link leads to.
      const real = await realpath(absolute).catch(() => null);
      if (real === null || !real.startsWith(this.realOut + path.sep)) continue;
      await rmdir(absolute).catch(() => {}); // not empty, gone already, or a file: left as it is
    }
  }

  async abort() {
    this.pending.clear();
    this.removals.clear();
    await this.#dropTemp();
  }

  async #dropTemp() {
    await rm(this.temp, { recursive: true, force: true });
    await rmdir(path.dirname(this.temp)).catch(() => {});
  }
}

/** libuv truncates to whole microseconds: half a microsecond above `ns`'s, so the double's error cannot take it below. @param {bigint} ns */
export function wholeMicrosecond(ns) {
  return (Number(ns / 1000n) + 0.5) / 1e6;
}

/** Like wholeMicrosecond, but the first microsecond not before `ns`. @param {bigint} ns */
export function notBefore(ns) {
  return (Number((ns + 999n) / 1000n) + 0.5) / 1e6;
}
