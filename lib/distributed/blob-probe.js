// @ts-check
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AbortError, BlobsNotSharedError, FrontierError } from '../errors.js';
import { outputError } from '../output/outdir.js';

/**
 * A worker proves it sees its crawl's blob directory before it takes a page: the coordinator keeps a token in Redis
 * and in DIR/probe-<crawl id>, and the worker reads the file back. A worker staging its bodies anywhere else leaves
 * them where the coordinator never finds them.
 * @typedef {import('./connection.js').CrawlRedis} CrawlRedis
 */

/** Crawl ids are file-name safe (crawl-options.js). @param {string} dir @param {string} crawlId */
export const probeFile = (dir, crawlId) => path.join(dir, `probe-${crawlId}`);

/** @param {string} prefix */
export const probeKey = (prefix) => `${prefix}probe`;

/**
 * The coordinator, once it holds the crawl: the token (the same across its restarts, a new one after --fresh-start)
 * written in the blob directory first, then in Redis, so a worker never finds a token the file lacks.
 * @param {CrawlRedis} redis @param {string} prefix @param {string} dir @param {string} crawlId
 */
export async function writeProbe(redis, prefix, dir, crawlId) {
  const token = (await redis.get(probeKey(prefix))) ?? randomBytes(16).toString('hex');
  await mkdir(dir, { recursive: true }).catch((error) => { throw outputError(error, 'create the blob directory', dir); });
  const file = probeFile(dir, crawlId);
  const temp = `${file}.tmp-${process.pid}`;
  try {
    await writeFile(temp, `${token}\n`);
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => {});
    throw outputError(error, 'write the probe', file);
  }
  await redis.set(probeKey(prefix), token);
}

/**
 * A worker, before it takes a page: refused (BlobsNotSharedError) unless `dir` holds the crawl's probe. A token not
 * in Redis yet is waited for until `deadline`: the coordinator may be starting.
 * @param {CrawlRedis} redis @param {string} prefix
 * @param {{ dir: string, shared: string, crawlId: string, deadline: number, signal?: AbortSignal }} options
 *   dir: this worker's blob directory; shared: the coordinator's, as the crawl's configuration names it
 */
export async function checkProbe(redis, prefix, { dir, shared, crawlId, deadline, signal }) {
  let token = null;
  for (let delay = 25; ; delay = Math.min(delay * 2, 1000)) {
    token = await redis.get(probeKey(prefix)).catch((error) => { throw redis.toFrontierError(error); });
    if (token) break;
    if (signal?.aborted) throw new AbortError('interrupted while waiting for the crawl');
    if (Date.now() >= deadline) {
      throw new FrontierError(`crawl id "${crawlId}" has no blob directory probe in Redis: its coordinator did not finish starting; start it again`, { code: 'NO_PROBE' });
    }
    await new Promise((resolve) => { setTimeout(resolve, Math.max(1, Math.min(delay, deadline - Date.now()))); });
  }
  const file = probeFile(dir, crawlId);
  /** @type {unknown} */ let cause;
  const text = await readFile(file, 'utf8').catch((error) => { cause = error; return null; });
  if (text?.trim() === token) return;
  const why = text === null ? `${/** @type {NodeJS.ErrnoException} */ (cause)?.code ?? 'unreadable'}` : 'another crawl\'s probe';
  throw new BlobsNotSharedError(`${dir} is not the blob directory of crawl "${crawlId}" (${file}: ${why}); share ${shared} with this machine and give it with --blobs`, { dir, shared, crawlId, cause });
}
