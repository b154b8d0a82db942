// @ts-check
import { mkdir, open, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';

/**
 * Staged bodies (and scans), addressed by content hash: `put` returns the
 * sha256 of what it stored, `get` gives it back. Identical bodies are stored
 * once. `LogBlobStore` appends every blob to one file (one file per run, not
 * one per page), each framed by its length and hash so the log can be read
 * back without its index; an object store or a shared directory can
 * implement the same three calls.
 *
 * @typedef {{
 *   put(data: Buffer): Promise<string>,
 *   get(id: string): Promise<Buffer>,
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
    await mkdir(this.dir, { recursive: true });
    this.log = await open(this.file, 'w+');
  }

  /** @param {Buffer} data */
  async put(data) {
    const id = sha256(data);
    if (this.index.has(id)) return id;
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    const header = Buffer.allocUnsafe(HEADER);
    header.writeUIntBE(data.length, 0, 6);
    header.write(id, 6, 'hex');
    // Reserve the place at once, so concurrent puts never overlap.
    const at = this.size;
    this.size += HEADER + data.length;
    this.index.set(id, { at: at + HEADER, length: data.length });
    let buffers = [header, data];
    let position = at;
    const end = at + HEADER + data.length;
    try {
      while (position < end) {
        const { bytesWritten } = await log.writev(buffers, position);
        if (bytesWritten === 0) throw new Error('could not write the staging log');
        position += bytesWritten;
        if (position < end) buffers = remainingAfter(buffers, bytesWritten);
      }
    } catch (error) {
      this.index.delete(id);
      throw error;
    }
    return id;
  }

  /** @param {string} id */
  async get(id) {
    const where = this.index.get(id);
    if (!where) throw new Error(`no staged blob ${id}`);
    const log = /** @type {import('node:fs/promises').FileHandle} */ (this.log);
    const buffer = Buffer.allocUnsafe(where.length);
    let done = 0;
    while (done < where.length) {
      const { bytesRead } = await log.read(buffer, done, where.length - done, where.at + done);
      if (bytesRead === 0) throw new Error('staged blob is shorter than recorded');
      done += bytesRead;
    }
    return buffer;
  }

  async close() {
    await this.log?.close().catch(() => {});
    this.log = null;
    this.index.clear();
    await rm(this.file, { force: true });
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
