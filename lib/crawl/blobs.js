// @ts-check
import { mkdir, open, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { outputFailure } from '../output/outdir.js';

/**
 * Staged bodies (and scans), addressed by content hash: `put` returns the
 * sha256 of each blob it stored, `get` gives them back. Identical blobs are
 * stored once. Both take several blobs at once, so a page's body and scan
 * cost one write and, read back together, one read. `LogBlobStore` appends
 * every blob to one file (one file per run, not one per page), each framed by
 * its length and hash so the log can be read back without its index; an
 * object store or a shared directory can implement the same three calls.
 *
 * @typedef {{
 *   put(blobs: Buffer[]): Promise<string[]>,
 *   get(ids: string[]): Promise<Buffer[]>,
 *   close(): Promise<void>,
 * }} BlobStore
 */

/** @param {Buffer} data */
export const sha256 = (data) => createHash('sha256').update(data).digest('hex');

/** Frame header: 6-byte length, then the 32-byte sha256. */
const HEADER = 38;

/** @implements {BlobStore} */
export class LogBlobStore {
  /** @param {string} dir where the log lives (created) */
  constructor(dir) {
    this.dir = dir;
    this.file = path.join(dir, 'blobs.log');
    /** @type {import('node:fs/promises').FileHandle | null} */
    this.log = null;
    this.size = 0;
    /** @type {Map<string, { at: number, length: number }>} */
    this.index = new Map();
  }

  async init() {
    try {
      await mkdir(this.dir, { recursive: true });
      this.log = await open(this.file, 'wx+');
    } catch (error) {
      throw outputFailure(error, 'create the staging log', this.file);
    }
  }

  /** @param {Buffer[]} blobs */
  async put(blobs) {
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    /** @type {string[]} */
    const ids = [];
    /** @type {Buffer[]} */
    let buffers = [];
    /** @type {string[]} */
    const added = [];
    // Reserve the place at once, so concurrent puts never overlap.
    const at = this.size;
    for (const data of blobs) {
      const id = sha256(data);
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
      while (position < end) {
        const { bytesWritten } = await log.writev(buffers, position);
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

  /**
   * @param {number} at
   * @param {number} length
   */
  async #read(at, length) {
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    const buffer = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await log.read(buffer, done, length - done, at + done);
      if (bytesRead === 0) throw new Error('staged blob is shorter than recorded');
      done += bytesRead;
    }
    return buffer;
  }

  async close() {
    await this.log?.close().catch(() => {});
    this.log = null;
    this.index.clear();
    await rm(this.dir, { recursive: true, force: true });
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
