// @ts-check
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { FrontierError } from '../errors.js';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openNameTable } from '../naming/name-table.js';

/**
 * A shared crawl's write phase over every live process: the per-page rewrite goes into Redis buckets leased by any
 * process, and answers count only under the lease. A lapsed bucket is redone into the same temp file. Only the
 * coordinator moves temp files into place, so OUT never holds a half-written file.
 * @typedef {import('../engine/page-work.js').RenderInput} RenderInput @typedef {import('../engine/page-work.js').RenderOutput} RenderOutput
 * @typedef {import('../engine/page-work.js').RenderContext} RenderContext
 * @typedef {import('../naming/name-table.js').SharedNameTable} SharedNameTable
 * @typedef {import('../engine/threads/page-threads.js').PageThreads} PageThreads @typedef {import('./connection.js').CrawlRedis} CrawlRedis
 * @typedef {{ bodyId: string, scanId: string, url: string, file: string, type: 'html' | 'css', charset: string, unchangedSha?: string, temp: string }} BucketRequest
 *   temp: relative to OUT, under .prerender/
 * @typedef {{ result: Omit<RenderOutput, 'output'> } | { error: { message: string, code?: string, name?: string } }} BucketAnswer
 */

/** A worker's own file-system errors, whatever the path, not a page's. */
const OWN_ERRORS = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EMFILE', 'ENFILE', 'EACCES', 'EPERM', 'EIO', 'ESTALE']);

export const BUCKET = 16;
/** Its threads stay busy while answers travel. */
const IN_HAND = 2;
/** The coordinator's thread backlog past which pages go into buckets. */
const LOCAL_BACKLOG = 2 * BUCKET;

/** @param {number} ms */
const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/** The name table as one file: three u32 (data length, slots length, hops), then data and slots. @param {SharedNameTable} table */
export function nameTableBytes(table) {
  const head = Buffer.alloc(12);
  head.writeUInt32LE(table.data.byteLength, 0);
  head.writeUInt32LE(table.slots.byteLength, 4);
  head.writeUInt32LE(table.maxHops, 8);
  return Buffer.concat([head, Buffer.from(table.data), Buffer.from(table.slots)]);
}

/** @param {Buffer} bytes @returns {SharedNameTable} */
export function nameTableFrom(bytes) {
  const dataLength = bytes.readUInt32LE(0);
  const slotsLength = bytes.readUInt32LE(4);
  if (bytes.length !== 12 + dataLength + slotsLength) throw new Error('the name table file of the finishing phase is cut short');
  const data = new SharedArrayBuffer(dataLength);
  const slots = new SharedArrayBuffer(slotsLength);
  new Uint8Array(data).set(bytes.subarray(12, 12 + dataLength));
  new Uint8Array(slots).set(bytes.subarray(12 + dataLength));
  return { data, slots, maxHops: bytes.readUInt32LE(8) };
}

/** @param {string} blobsDir @param {string} token */
function namesFile(blobsDir, token) {
  if (!/^[0-9a-z]{1,40}$/.test(token)) throw new FrontierError(`not a pass of the finishing phase: ${JSON.stringify(token)}`, { code: 'FINISH_STATE' });
  return path.join(blobsDir, 'finish', `${token}.names`);
}

/** Its keys and name table go. @param {CrawlRedis} redis @param {string} prefix @param {string} blobsDir @param {string} token */
export async function dropPass(redis, prefix, blobsDir, token) {
  const keys = `${prefix}f:${token}:`;
  await redis.multi().unlink(`${keys}q`, `${keys}b`, `${keys}lease`, `${keys}r`, `${keys}d`, `${keys}deliv`).hdel(`${prefix}meta`, 'fin', 'finctx', 'finleft').exec()
    .catch((error) => { throw redis.toFrontierError(error); });
  await rm(namesFile(blobsDir, token), { force: true });
}

/** Before finishing starts again. @param {CrawlRedis} redis @param {string} prefix @param {string} blobsDir */
export async function dropLeftPass(redis, prefix, blobsDir) {
  const [left, older] = await redis.hmget(`${prefix}meta`, 'fin', 'finleft').catch((error) => { throw redis.toFrontierError(error); });
  if (older && older !== left) await dropPass(redis, prefix, blobsDir, older);
  if (left) await dropPass(redis, prefix, blobsDir, left);
}

/** Made absolute under this process's OUT; refused outside OUT's state directory. @param {string} out @param {string} relative */
function tempPath(out, relative) {
  if (!/^\.prerender\/tmp-[^/]+\/\d+\.tmp$/.test(relative)) throw new Error(`refusing a temp file outside OUT/.prerender/: ${relative}`);
  return path.join(out, ...relative.split('/'));
}

/** The coordinator's side. `render` has `PageThreads.render`'s signature, so the write pass does not know who did the work. */
export class FinishPool {
  /** @type {string | null} */ #token = null;
  /** @type {{ requests: BucketRequest[], waiting: { resolve(value: RenderOutput): void, reject(error: Error): void }[] } | null} */ #filling = null;
  /** @type {ReturnType<typeof setImmediate> | null} */ #flushTimer = null;
  /** @type {Map<string, { resolve(value: RenderOutput): void, reject(error: Error): void }[]>} bucket -> its pages' waiters */ #sent = new Map();
  #buckets = 0;
  #collecting = false;
  /** @type {Promise<void> | null} */ #helping = null;
  /** @type {Error | null} */ #failure = null;

  /** @param {{ redis: CrawlRedis, prefix: string, worker: string, leaseMs: number, out: string, blobsDir: string, threads: PageThreads, readBlobs(ids: string[]): Promise<Buffer[]>, locate(id: string): import('../engine/page-work.js').BlobPlace, maxDeliveries: number }} options */
  constructor(options) {
    this.options = options;
    /** Enough for every process to hold buckets. */
    this.window = BUCKET * 16;
    this.counts = { buckets: 0, byOthers: 0 };
  }

  /** The name table goes beside the blobs, context and token into the crawl's meta. @param {RenderContext} context @param {SharedNameTable} table */
  async begin(context, table) {
    await this.end();
    const { redis, prefix, blobsDir } = this.options;
    await dropLeftPass(redis, prefix, blobsDir);
    const token = `${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;
    await mkdir(path.join(blobsDir, 'finish'), { recursive: true });
    await writeFile(namesFile(blobsDir, token), nameTableBytes(table));
    await redis.hset(`${prefix}meta`, 'fin', token, 'finctx', JSON.stringify(context));
    this.#token = token;
    this.#failure = null;
    this.#helping = helpFinish({ ...this.options, signal: null, loaded: token, stopWhen: () => this.#token !== token, onBucket: () => { this.counts.buckets++; } })
      .then(() => {}, (error) => { this.#fail(error); });
  }

  /** @param {Omit<RenderInput, 'raw' | 'scan'> & { scanId?: string, wantOutput?: boolean }} input @returns {Promise<RenderOutput>} */
  render(input) {
    if (this.#failure) return Promise.reject(this.#failure);
    // This process's threads first: a page goes into a bucket only when they have a backlog.
    const { threads } = this.options;
    if (threads.backlog < LOCAL_BACKLOG) return threads.render({ ...input, places: [this.options.locate(input.bodyId), this.options.locate(/** @type {string} */ (input.scanId))], read: () => this.options.readBlobs([input.bodyId, /** @type {string} */ (input.scanId)]) });
    if (!this.#token || input.temp === undefined || input.scanId === undefined) throw new Error('a shared render needs a pass, a temp file and the scan id');
    const request = {
      bodyId: input.bodyId, scanId: input.scanId, url: input.url, file: input.file, type: input.type, charset: input.charset,
      unchangedSha: input.unchangedSha, temp: path.relative(this.options.out, input.temp).split(path.sep).join('/'),
    };
    return new Promise((resolve, reject) => {
      this.#filling ??= { requests: [], waiting: [] };
      this.#filling.requests.push(request);
      this.#filling.waiting.push({ resolve, reject });
      if (this.#filling.requests.length >= BUCKET) this.#flush();
      else this.#flushTimer ??= setImmediate(() => this.#flush());
    });
  }

  #flush() {
    if (this.#flushTimer) clearImmediate(this.#flushTimer);
    this.#flushTimer = null;
    const bucket = this.#filling;
    this.#filling = null;
    if (!bucket || !this.#token) return;
    if (this.#failure) {
      for (const page of bucket.waiting) page.reject(this.#failure);
      return;
    }
    const name = String(++this.#buckets);
    this.#sent.set(name, bucket.waiting);
    const { redis, prefix } = this.options;
    const keys = `${prefix}f:${this.#token}:`;
    redis.multi().hset(`${keys}b`, name, JSON.stringify(bucket.requests)).rpush(`${keys}q`, name).exec()
      .then(() => this.#collect(), (error) => this.#fail(redis.toFrontierError(error)));
  }

  async #collect() {
    if (this.#collecting) return;
    this.#collecting = true;
    const { redis, prefix } = this.options;
    try {
      for (let wait = 1; this.#sent.size > 0 && this.#token && !this.#failure;) {
        const token = this.#token;
        const reply = await redis.prFinCollect(prefix, token, 64);
        if (reply[0] === 'LOST') throw new Error('LOST'); // the crawl's state in Redis is gone
        for (let i = 0; i < reply.length; i += 2) {
          const waiting = this.#sent.get(reply[i]);
          if (!waiting) continue;
          this.#sent.delete(reply[i]);
          /** @type {BucketAnswer[]} */ const answers = JSON.parse(reply[i + 1]);
          waiting.forEach((page, j) => {
            const answer = answers[j];
            if (answer && 'result' in answer) page.resolve({ ...answer.result });
            else page.reject(Object.assign(new Error(answer?.error.message ?? 'no answer for a page of the bucket'), answer?.error ?? {}));
          });
        }
        wait = reply.length > 0 ? 1 : Math.min(wait * 2, 4);
        if (reply.length === 0) await pause(wait);
      }
    } catch (error) {
      this.#fail(redis.toFrontierError(error));
    } finally {
      this.#collecting = false;
    }
  }

  /** @param {Error} error */
  #fail(error) {
    this.#failure ??= error;
    for (const waiting of this.#sent.values()) for (const page of waiting) page.reject(error);
    this.#sent.clear();
    for (const page of this.#filling?.waiting ?? []) page.reject(error);
    this.#filling = null;
  }

  async end() {
    const token = this.#token;
    if (!token) return;
    this.#flush();
    this.#token = null;
    await this.#helping;
    this.#helping = null;
    // What cannot be removed now is removed when the finishing starts again (dropLeftPass).
    await dropPass(this.options.redis, this.options.prefix, this.options.blobsDir, token).catch(() => {});
  }
}

/**
 * Until `stopWhen()`, the crawl finishes, or a worker's coordinator is gone. The coordinator runs it during its write
 * passes, `prerender worker` once fetching is over.
 * @param {{
 *   redis: CrawlRedis, prefix: string, worker: string, leaseMs: number, maxDeliveries: number, out: string, blobsDir: string,
 *   threads: PageThreads, readBlobs(ids: string[]): Promise<Buffer[]>, locate(id: string): import('../engine/page-work.js').BlobPlace,
 *   signal: AbortSignal | null, stopWhen?: () => boolean, onBucket?: (pages: number) => void, onLate?: () => void, loaded?: string,
 * }} options loaded: the pass the threads already have
 * @returns {Promise<'finished' | 'coordinator-gone' | 'stopped'>}
 */
export async function helpFinish(options) {
  const { redis, prefix, worker, leaseMs } = options;
  /** @type {string | null} the pass whose context and names the threads have */ let loaded = options.loaded ?? null;
  /** @type {Set<Promise<void>>} */ const inHand = new Set();
  /** @type {unknown} a bucket that could not be done here */ let failure = null;
  let idle = 5;
  try {
    for (;;) {
      if (failure) throw failure;
      if (options.stopWhen?.() || options.signal?.aborted) return 'stopped';
      if (inHand.size >= IN_HAND) {
        await Promise.race(inHand);
        continue;
      }
      const reply = await redis.prFinTake(prefix, worker, leaseMs, options.maxDeliveries).catch((error) => { throw redis.toFrontierError(error); });
      const [phase, token, alive] = [String(reply[0]), String(reply[1]), Number(reply[2])];
      if (phase === 'finished') return 'finished';
      if (reply.length > 3 && token) {
        if (loaded !== token) {
          try {
            await load(options, token);
          } catch (error) {
            // A process that stalled past the pass finds its name table gone: the bucket is only late.
            if (await isCurrent(options, token)) throw error;
            options.onLate?.();
            continue;
          }
          loaded = token;
        }
        const job = doBucket(options, token, String(reply[3]), String(reply[4]), JSON.parse(String(reply[5])));
        inHand.add(job);
        job.then(() => inHand.delete(job), (error) => {
          inHand.delete(job);
          failure ??= error;
        });
        idle = 5;
        continue;
      }
      if (!alive && !options.stopWhen) return 'coordinator-gone';
      if (inHand.size > 0) await Promise.race([...inHand, pause(idle)]);
      else await pause(idle);
      // Buckets come while a pass is under way: look often then, seldom before.
      idle = Math.min(idle * 2, token ? 8 : 100);
    }
  } finally {
    await Promise.allSettled(inHand);
  }
}

/** The crawl's pass, its coordinator alive. @param {{ redis: CrawlRedis, prefix: string, leaseMs: number }} options @param {string} token */
async function isCurrent({ redis, prefix, leaseMs }, token) {
  const current = await redis.prFinCurrent(prefix, token, leaseMs).catch((error) => { throw redis.toFrontierError(error); });
  return current === 1;
}

/** Into this process's threads. @param {{ redis: CrawlRedis, prefix: string, blobsDir: string, threads: PageThreads }} options @param {string} token */
async function load({ redis, prefix, blobsDir, threads }, token) {
  const context = await redis.hget(`${prefix}meta`, 'finctx').catch((error) => { throw redis.toFrontierError(error); });
  if (!context) throw new FrontierError('the finishing phase has no render context in Redis', { code: 'FINISH_STATE' });
  const file = namesFile(blobsDir, token);
  const bytes = await readFile(file).catch((/** @type {NodeJS.ErrnoException} */ error) => {
    if (error.code !== 'ENOENT') throw error;
    throw new FrontierError(`the blob directory ${blobsDir} is not the coordinator's (no ${path.basename(file)} in it): mount the shared blob directory here and give it with --blobs`, { code: 'NOT_SHARED' });
  });
  const table = nameTableFrom(bytes);
  threads.setContext(JSON.parse(context));
  threads.setNames(openNameTable(table), () => table);
  threads.warm();
}

/**
 * Each page written to its temp file, again if a previous holder wrote part; the answers recorded under the lease.
 * @param {Parameters<typeof helpFinish>[0]} options @param {string} token @param {string} bucket @param {string} lease @param {BucketRequest[]} requests
 */
async function doBucket(options, token, bucket, lease, requests) {
  const { redis, prefix, threads, out } = options;
  // OUT not shared with the coordinator: every page would fail here, so this process stops helping instead.
  const dir = requests.length > 0 ? path.dirname(tempPath(out, requests[0].temp)) : out;
  if (!existsSync(dir)) {
    // Unless this process stalled past the pass: then the bucket is only late.
    if (!(await isCurrent(options, token))) {
      options.onLate?.();
      return;
    }
    throw new FrontierError(`${out} is not the coordinator's output directory (no ${path.relative(out, dir)} in it): every machine needs OUT on the same shared mount, at the same path`, { code: 'NOT_SHARED' });
  }
  // Renewed while working, but a render that never ends loses its bucket after --max-deliveries lease times.
  const renewUntil = Date.now() + options.maxDeliveries * options.leaseMs;
  const renew = setInterval(() => {
    if (Date.now() > renewUntil) clearInterval(renew);
    else redis.prFinRenew(prefix, token, bucket, lease, options.leaseMs).catch(() => {});
  }, Math.max(50, Math.floor(options.leaseMs / 3)));
  const tempDir = path.dirname(tempPath(out, requests[0]?.temp ?? '.prerender/tmp-x/0.tmp'));
  /** @type {unknown} a failure of this process (its file system, its threads), not of a page */ let local = null;
  /** @type {BucketAnswer[]} */ const answers = await Promise.all(requests.map(async (request) => {
    try {
      const ids = [request.bodyId, request.scanId];
      if (!ids.every((id) => /^[0-9a-f]{64}$/.test(id))) throw new Error(`not a blob id: ${JSON.stringify(ids)}`);
      const { output: _output, ...result } = await threads.render({
        places: [options.locate(request.bodyId), options.locate(request.scanId)], read: () => options.readBlobs(ids),
        bodyId: request.bodyId, url: request.url, file: request.file, type: request.type,
        charset: request.charset, unchangedSha: request.unchangedSha, temp: tempPath(out, request.temp), replace: true,
      });
      return { result };
    } catch (error) {
      const err = /** @type {NodeJS.ErrnoException} */ (error);
      // A worker's own trouble (writing into OUT, a dead thread) is not the page's, but an unreadable blob is.
      if (!options.stopWhen && (err.code === 'THREAD_EXIT' || (err.syscall !== undefined && (OWN_ERRORS.has(String(err.code)) || String(err.path ?? '').startsWith(tempDir))))) local ??= error;
      return { error: { message: err.message, code: err.code, name: err.name } };
    }
  })).finally(() => clearInterval(renew));
  if (local) {
    // Late: nothing to say. Otherwise this process stops helping, and the bucket goes to another.
    if (!existsSync(tempDir) || !(await isCurrent(options, token))) {
      options.onLate?.();
      return;
    }
    throw local;
  }
  const accepted = await redis.prFinDone(prefix, token, bucket, lease, JSON.stringify(answers)).catch((error) => { throw redis.toFrontierError(error); });
  if (accepted === 1) options.onBucket?.(requests.length);
  else options.onLate?.();
}
