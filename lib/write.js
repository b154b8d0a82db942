// @ts-check
import { mkdir, open, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UnsafeFileNameError } from './errors.js';

export const STAGING_DIR = '.prerender-tmp';

/** @param {string} dir */
const isDirectory = (dir) => stat(dir).then((stats) => stats.isDirectory(), () => false);

/**
 * Writes the output tree: every file atomically (temp file + rename), never
 * outside the output directory, directories created once.
 */
export class TreeWriter {
  /** @param {string} out */
  constructor(out) {
    this.out = path.resolve(out);
    this.staging = path.join(this.out, STAGING_DIR);
    /** @type {Map<string, Promise<void>>} */
    this.dirs = new Map();
    this.counter = 0;
    this.realOut = this.out;
    /** @type {import('node:fs/promises').FileHandle | null} staged bodies, one after another */
    this.log = null;
    this.logSize = 0;
  }

  async init() {
    await mkdir(this.staging, { recursive: true });
    this.realOut = await realpath(this.out);
    this.log = await open(path.join(this.staging, 'staged.log'), 'w+');
  }

  /**
   * The absolute path of a tree file, refused if it would leave the tree.
   * @param {string} file relative, forward slashes
   */
  resolve(file) {
    const absolute = path.resolve(this.out, ...file.split('/'));
    if (!absolute.startsWith(this.out + path.sep)) {
      throw new UnsafeFileNameError(`refusing to write outside the output directory: ${file}`);
    }
    return absolute;
  }

  /** @param {string} dir absolute */
  #ensureDir(dir) {
    let pending = this.dirs.get(dir);
    if (!pending) {
      pending = (async () => {
        // Check the deepest directory that exists before creating anything
        // below it, so nothing is created through a link leaving the tree.
        let existing = dir;
        while (existing !== this.out && !(await isDirectory(existing))) existing = path.dirname(existing);
        const real = await realpath(existing);
        if (real !== this.realOut && !real.startsWith(this.realOut + path.sep)) {
          throw new UnsafeFileNameError(`refusing to write through a link that leaves the output directory: ${existing}`);
        }
        await mkdir(dir, { recursive: true });
      })();
      this.dirs.set(dir, pending);
      pending.catch(() => this.dirs.delete(dir));
    }
    return pending;
  }

  /**
   * Write a tree file atomically.
   * @param {string} file
   * @param {Buffer | Uint8Array | string} data
   */
  async write(file, data) {
    const target = this.resolve(file);
    await this.#ensureDir(path.dirname(target));
    const temp = path.join(this.staging, `w${++this.counter}.tmp`);
    try {
      await writeFile(temp, data);
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  /**
   * Keep buffers on disk until phase two: appended to one log file (one file
   * for the whole run, not one per page), at a position reserved at once so
   * concurrent calls never overlap.
   * @param {Buffer[]} buffers
   * @returns {Promise<number>} where they start in the log
   */
  async stage(buffers) {
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    const at = this.logSize;
    let end = at;
    for (const buffer of buffers) end += buffer.length;
    this.logSize = end;
    let position = at;
    while (position < end) {
      const { bytesWritten } = await log.writev(buffers, position);
      if (bytesWritten === 0) throw new Error('could not write the staging log');
      position += bytesWritten;
      if (position < end) buffers = remainingAfter(buffers, bytesWritten);
    }
    return at;
  }

  /**
   * @param {number} at
   * @param {number} length
   */
  async readStaged(at, length) {
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    const buffer = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await log.read(buffer, done, length - done, at + done);
      if (bytesRead === 0) throw new Error('staged body is shorter than recorded');
      done += bytesRead;
    }
    return buffer;
  }

  async cleanup() {
    await this.log?.close().catch(() => {});
    this.log = null;
    await rm(this.staging, { recursive: true, force: true });
  }
}

/**
 * The part of `buffers` after the first `written` bytes (a short writev).
 * @param {Buffer[]} buffers
 * @param {number} written
 */
function remainingAfter(buffers, written) {
  const rest = [];
  for (const buffer of buffers) {
    if (written >= buffer.length) {
      written -= buffer.length;
    } else {
      rest.push(written > 0 ? buffer.subarray(written) : buffer);
      written = 0;
    }
  }
  return rest;
}
