// @ts-check
import { existsSync, rmSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { outputFailure } from '../output/outdir.js';
import { sha256 } from '../store/blobs.js';

/**
 * A blob store several processes and machines use at once: one file per blob, `DIR/ab/<sha256>`, written by rename,
 * so a blob is whole or absent and a double write is harmless.
 * @typedef {import('../store/blobs.js').BlobStore} BlobStore
 */

/** @implements {BlobStore} */
export class DirBlobStore {
  /** @type {Set<string>} blobs known to be there */ #known = new Set();
  /** @type {Set<string>} sub-directories made (or found) by this process: one mkdir each, not one per blob */ #dirs = new Set();

  /** @param {string} dir */
  constructor(dir) {
    this.dir = path.resolve(dir);
    /** Worker threads store blobs here themselves, in the same layout. */
    this.stageDir = this.dir;
  }

  async init() {
    try {
      await mkdir(this.dir, { recursive: true });
    } catch (error) {
      throw outputFailure(error, 'create the blob directory', this.dir);
    }
  }

  /** @param {string} id */
  #file(id) {
    return path.join(this.dir, id.slice(0, 2), id);
  }

  /** @param {Buffer[]} blobs @param {string[]} [known] their sha256, when already computed */
  async put(blobs, known) {
    const ids = [];
    for (const [i, data] of blobs.entries()) {
      const id = known?.[i] ?? sha256(data);
      ids.push(id);
      if (this.has(id)) continue;
      const file = this.#file(id);
      const temp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        const dir = path.dirname(file);
        if (!this.#dirs.has(dir)) {
          await mkdir(dir, { recursive: true });
          this.#dirs.add(dir);
        }
        await writeFile(temp, data).catch(async (/** @type {NodeJS.ErrnoException} */ error) => {
          if (error.code !== 'ENOENT') throw error;
          await mkdir(dir, { recursive: true }); // removed meanwhile
          await writeFile(temp, data);
        });
        await rename(temp, file);
      } catch (error) {
        await rm(temp, { force: true }).catch(() => {});
        throw outputFailure(error, 'write the blob', file);
      }
      this.#known.add(id);
    }
    return ids;
  }

  /** A file of its own, read whole by the thread that renders it. @param {string} id */
  locate(id) {
    return { path: this.#file(id), at: 0, length: -1 };
  }

  /** @param {string[]} ids */
  async get(ids) {
    return Promise.all(ids.map(async (id) => {
      try {
        return await readFile(this.#file(id));
      } catch (error) {
        if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') throw new Error(`no staged blob ${id} in ${this.dir}`);
        throw error;
      }
    }));
  }

  /** @param {string} id */
  has(id) {
    if (this.#known.has(id)) return true;
    if (!existsSync(this.#file(id))) return false;
    this.#known.add(id);
    return true;
  }

  /** A blob found damaged goes: a later put of its bytes stores them again. @param {string} id */
  forget(id) {
    this.#known.delete(id);
    rmSync(this.#file(id), { force: true });
  }

  /** After a complete crawl. @param {Iterable<string> | AsyncIterable<string>} ids the blobs still referred to */
  async compact(ids) {
    /** @type {Set<string>} */ const live = new Set();
    for await (const id of ids) live.add(id);
    for (const sub of await readdir(this.dir).catch(() => /** @type {string[]} */ ([]))) {
      if (!/^[0-9a-f]{2}$/.test(sub)) continue;
      for (const name of await readdir(path.join(this.dir, sub)).catch(() => /** @type {string[]} */ ([]))) {
        if (live.has(name)) continue;
        await rm(path.join(this.dir, sub, name), { force: true });
        this.#known.delete(name);
      }
    }
  }

  /** Blobs stay for the next run and the other processes. */
  async close() {}

  /** Never removes shared blobs: the other processes and the next run need them. */
  async destroy() {}
}
