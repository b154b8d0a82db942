// @ts-check
import { readSync, writevSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hash } from 'node:crypto';
import path from 'node:path';
import { outputFailure } from '../output/outdir.js';
import { BlobIndex } from './blob-index.js';

/**
 * Staged bodies and scans by sha256, identical blobs stored once. `put`/`get` take several blobs, so a page's body and
 * scan cost one write and one read. `LogBlobStore` appends to one log whose frames carry length and hash, so it reads
 * back without its index.
 * @typedef {{
 *   put(blobs: Buffer[], ids?: string[]): Promise<string[]>, get(ids: string[]): Promise<Buffer[]>, has(id: string): boolean,
 *   close(): Promise<void>, locate?(id: string): { path: string, at: number, length: number },
 *   peek?<T>(id: string, use: (bytes: Buffer) => T): Promise<T>, forget?(id: string): void, readonly stageDir?: string,
 * }} BlobStore
 *   locate: for a worker thread to read, length -1 for a whole file; stageDir: DIR/ab/<sha256> files a worker writes;
 *   peek: `use` sees a reused buffer, valid only while it runs; forget: drop a damaged blob, so a later `put` stores it.
 */

/** @param {Buffer} data */
export const sha256 = (data) => hash('sha256', data, 'hex');

/** A larger blob is read into a buffer of its own. */
const MAX_SCRATCH = 1024 * 1024;

/** Frame header: 6-byte length, then the 32-byte sha256. */
const HEADER = 38;

/** Index entry on disk: 32-byte hash, 6-byte position, 6-byte length. */
const INDEX_ENTRY = 44;

/** The log and its index, in the directory given. */
export const LOG_FILE = 'blobs.log';
export const INDEX_FILE = 'blobs.idx';

/** @implements {BlobStore} */
export class LogBlobStore {
  /** @param {string} dir where the log lives (created) */
  constructor(dir) {
    this.dir = dir;
    this.file = path.join(dir, LOG_FILE);
    this.indexFile = path.join(dir, INDEX_FILE);
    /** @type {import('node:fs/promises').FileHandle | null} */
    this.log = null;
    this.size = 0;
    /** packed: ids are the bulk of the store's memory */
    this.index = new BlobIndex();
  }

  /** keep: the last run's log, its index rebuilt from the frames if stale; a torn last frame is cut off. @param {{ keep?: boolean }} [options] */
  async init({ keep = false } = {}) {
    try {
      await mkdir(this.dir, { recursive: true });
      if (keep) {
        this.log = await open(this.file, 'r+').catch((error) => {
          if (error.code === 'ENOENT') return open(this.file, 'wx+');
          throw error;
        });
        this.size = (await this.log.stat()).size;
        if (this.size > 0 && !(await this.#readIndex())) await this.#rebuildIndex();
      } else {
        this.log = await open(this.file, 'w+');
      }
      await rm(this.indexFile, { force: true }); // stale from now on, until close()
    } catch (error) {
      throw outputFailure(error, 'open the staging log', this.file);
    }
  }

  /** @returns {Promise<boolean>} whether a usable index was read */
  async #readIndex() {
    const data = await readFile(this.indexFile).catch(() => null);
    if (!data || data.length < 6 || (data.length - 6) % INDEX_ENTRY !== 0) return false;
    if (data.readUIntBE(data.length - 6, 6) !== this.size) return false;
    this.index.reserve((data.length - 6) / INDEX_ENTRY);
    for (let at = 0; at < data.length - 6; at += INDEX_ENTRY) {
      this.index.setBytes(data, at, { at: data.readUIntBE(at + 32, 6), length: data.readUIntBE(at + 38, 6) });
    }
    return true;
  }

  async #rebuildIndex() {
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    const header = Buffer.allocUnsafe(HEADER);
    let at = 0;
    while (at + HEADER <= this.size) {
      const { bytesRead } = await log.read(header, 0, HEADER, at);
      if (bytesRead < HEADER) break;
      const length = header.readUIntBE(0, 6);
      if (at + HEADER + length > this.size) break;
      this.index.setBytes(header, 6, { at: at + HEADER, length });
      at += HEADER + length;
    }
    if (at < this.size) {
      await log.truncate(at);
      this.size = at;
    }
  }

  /** @param {Buffer[]} blobs @param {string[]} [known] their sha256, when already computed */
  async put(blobs, known) {
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    /** @type {string[]} */ const ids = [];
    /** @type {Buffer[]} */ let buffers = [];
    /** @type {string[]} */ const added = [];
    // Reserve the place at once, so concurrent puts never overlap.
    const at = this.size;
    for (const [i, data] of blobs.entries()) {
      const id = known?.[i] ?? sha256(data);
      ids.push(id);
      if (this.index.has(id)) continue;
      const header = Buffer.allocUnsafe(HEADER);
      header.writeUIntBE(data.length, 0, 6);
      header.write(id, 6, 'hex');
      this.index.set(id, { at: this.size + HEADER, length: data.length });
      this.size += HEADER + data.length;
      buffers.push(header, data);
      added.push(id);
    }
    const end = this.size;
    let position = at;
    try {
      // Synchronous: an append to the page cache is cheaper than a thread-pool round trip.
      while (position < end) {
        const bytesWritten = writevSync(log.fd, buffers, position);
        if (bytesWritten === 0) throw new Error('could not write the staging log');
        position += bytesWritten;
        if (position < end) buffers = remainingAfter(buffers, bytesWritten);
      }
    } catch (error) {
      for (const id of added) this.index.delete(id);
      throw outputFailure(error, 'write the staging log', this.file);
    }
    return ids;
  }

  /** @param {string} id */
  locate(id) {
    const where = this.index.get(id);
    if (!where) throw new Error(`no staged blob ${id}`);
    return { path: this.file, at: where.at, length: where.length };
  }

  /** @param {string} id */
  has(id) {
    return this.index.has(id);
  }

  /** @param {string} id */
  forget(id) {
    this.index.delete(id);
  }

  /** @param {string[]} ids */
  async get(ids) {
    const places = ids.map((id) => {
      const where = this.index.get(id);
      if (!where) throw new Error(`no staged blob ${id}`);
      return where;
    });
    // Blobs stored together lie one after the other: one read for the run.
    const first = places[0];
    const last = places[places.length - 1];
    const adjacent = places.every((where, i) => i === 0 || where.at === places[i - 1].at + places[i - 1].length + HEADER);
    if (adjacent && places.length > 1) {
      const span = await this.#read(first.at, last.at + last.length - first.at);
      return places.map((where) => span.subarray(where.at - first.at, where.at - first.at + where.length));
    }
    return Promise.all(places.map((where) => this.#read(where.at, where.length)));
  }

  /** @type {Buffer} reused by peek() */ #scratch = Buffer.allocUnsafeSlow(16 * 1024);

  /** @template T @param {string} id @param {(bytes: Buffer) => T} use @returns {Promise<T>} */
  async peek(id, use) {
    const where = this.index.get(id);
    if (!where) throw new Error(`no staged blob ${id}`);
    if (where.length > this.#scratch.length) {
      if (where.length > MAX_SCRATCH) return use(await this.#read(where.at, where.length));
      this.#scratch = Buffer.allocUnsafeSlow(Math.min(MAX_SCRATCH, Math.max(where.length, this.#scratch.length * 2)));
    }
    return use(this.#readInto(where.at, where.length, this.#scratch.subarray(0, where.length)));
  }

  /** @param {number} at @param {number} length */
  async #read(at, length) {
    return this.#readInto(at, length, Buffer.allocUnsafe(length));
  }

  /** @param {number} at @param {number} length @param {Buffer} buffer at least `length` bytes */
  #readInto(at, length, buffer) {
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    let done = 0;
    // Synchronous pread: what was just written is in the page cache, cheaper than a thread-pool round trip.
    while (done < length) {
      const bytesRead = readSync(log.fd, buffer, done, length - done, at + done);
      if (bytesRead === 0) throw new Error('staged blob is shorter than recorded');
      done += bytesRead;
    }
    return buffer;
  }

  /** When dead blobs exceed half the log, the live ones go to a new log. @param {Iterable<string> | AsyncIterable<string>} live repeats allowed */
  async compact(live) {
    let liveBytes = 0;
    this.index.clearMarks();
    for await (const id of live) if (this.index.mark(id)) liveBytes += (this.index.get(id)?.length ?? 0) + HEADER;
    if (this.size <= 2 * liveBytes + 1024 * 1024) return;
    const next = new LogBlobStore(path.join(this.dir, `tmp-compacting-${process.pid}`));
    await next.init();
    for (const [id] of this.index.marked()) {
      await next.put(await this.get([id]));
    }
    await next.log?.close();
    await this.log?.close();
    await rename(next.file, this.file);
    await rm(next.dir, { recursive: true, force: true });
    this.index = next.index;
    this.size = next.size;
    this.log = await open(this.file, 'r+');
  }

  /** For the next run, with its index. */
  async close() {
    if (!this.log) return;
    const entries = Buffer.allocUnsafe(this.index.size * INDEX_ENTRY + 6);
    let at = 0;
    for (const [entry, where] of this.index.entries()) {
      this.index.copyId(entry, entries, at);
      entries.writeUIntBE(where.at, at + 32, 6);
      entries.writeUIntBE(where.length, at + 38, 6);
      at += INDEX_ENTRY;
    }
    entries.writeUIntBE(this.size, at, 6);
    await this.log.close().catch(() => {});
    this.log = null;
    const temp = path.join(this.dir, `tmp-blobs-${process.pid}.idx`);
    await writeFile(temp, entries);
    await rename(temp, this.indexFile);
  }

  /** Close and remove the log and its index. */
  async destroy() {
    await this.log?.close().catch(() => {});
    this.log = null;
    this.index.clear();
    await rm(this.file, { force: true });
    await rm(this.indexFile, { force: true });
  }
}

/** After a short writev. @param {Buffer[]} buffers @param {number} written */
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
