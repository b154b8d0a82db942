// @ts-check
import { mkdir, realpath, rename, rm, stat, writeFile, readFile, unlink } from 'node:fs/promises';
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
  }

  async init() {
    await mkdir(this.staging, { recursive: true });
    this.realOut = await realpath(this.out);
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

  /** @param {number} id @param {Buffer} data */
  stage(id, data) {
    return writeFile(path.join(this.staging, `s${id}.body`), data);
  }

  /** @param {number} id */
  readStaged(id) {
    return readFile(path.join(this.staging, `s${id}.body`));
  }

  /**
   * Move a staged body to its place in the tree, unchanged.
   * @param {number} id
   * @param {string} file
   */
  async promoteStaged(id, file) {
    const target = this.resolve(file);
    await this.#ensureDir(path.dirname(target));
    await rename(path.join(this.staging, `s${id}.body`), target);
  }

  /** @param {number} id */
  dropStaged(id) {
    return unlink(path.join(this.staging, `s${id}.body`)).catch(() => {});
  }

  async cleanup() {
    await rm(this.staging, { recursive: true, force: true });
  }
}
