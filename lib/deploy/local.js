// @ts-check
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, link, lstat, mkdir, open, readdir, readFile, readlink, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pLimit from 'p-limit';
import { AbortError, DeployError } from '../errors.js';
import { CURRENT, RELEASES, TMP_PREFIX, formatRecord, idFromLink, isReleaseId, parseHeader, parseRecord } from './release.js';

/**
 * A local or mounted web root as a deploy target (`publish --to DIR`,
 * `deploy OUT DIR`, `file:///DIR`). Unchanged files are hard links to the
 * previous release, so time and disk grow with the changed files only; the
 * switch is a new symbolic link renamed over `current`.
 *
 * @typedef {import('./source.js').FileInfo} FileInfo
 * @typedef {import('./release.js').ReleaseInfo} ReleaseInfo
 * @typedef {import('./targets.js').DeployTarget} DeployTarget
 * @typedef {import('./targets.js').StagePlan} StagePlan
 * @typedef {import('./targets.js').StageResult} StageResult
 */

/** @param {unknown} error */
const errno = (error) => /** @type {NodeJS.ErrnoException} */ (error)?.code;

/** @param {string} file */
async function sha256Of(file) {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), async (source) => {
    for await (const chunk of source) hash.update(chunk);
  });
  return hash.digest('hex');
}

/** @implements {DeployTarget} */
export class LocalTarget {
  /**
   * @param {string} dir the web root's parent: releases/ and current live here
   * @param {{ name?: string }} [options]
   */
  constructor(dir, options = {}) {
    this.dir = path.resolve(dir);
    this.label = options.name ?? this.dir;
    this.kind = /** @type {const} */ ('local');
  }

  /** @param {string} [id] */
  releasesPath(id) {
    return id === undefined ? path.join(this.dir, RELEASES) : path.join(this.dir, RELEASES, id);
  }

  async currentId() {
    try {
      return idFromLink(await readlink(path.join(this.dir, CURRENT)));
    } catch (error) {
      if (errno(error) === 'ENOENT') return null;
      if (errno(error) === 'EINVAL') throw new DeployError(`${path.join(this.dir, CURRENT)} is not a symbolic link: move it away (prerender makes "current" a link to a release)`, { code: 'DEPLOY_CURRENT_NOT_LINK' });
      throw error;
    }
  }

  /**
   * @param {boolean} [withFiles] also the current release's file list
   * @returns {Promise<import('./targets.js').TargetState>}
   */
  async state(withFiles = false) {
    const current = await this.currentId();
    const names = await this.releaseNames();
    const dirs = new Set(names.filter(isReleaseId));
    /** @type {ReleaseInfo[]} */
    const releases = [];
    for (const name of names) {
      const id = name.replace(/\.json$/, '');
      if (!name.endsWith('.json') || !dirs.has(id)) continue;
      const handle = await open(path.join(this.releasesPath(), name));
      try {
        const { buffer, bytesRead } = await handle.read({ buffer: Buffer.alloc(4096), position: 0 });
        const line = buffer.subarray(0, bytesRead).toString('utf8').split('\n')[0];
        releases.push({ ...parseHeader(line), current: id === current });
      } catch {
        continue; // not a record of ours, or unfinished: not a release
      } finally {
        await handle.close();
      }
    }
    releases.sort((a, b) => (a.id < b.id ? -1 : 1));
    const currentFiles = withFiles && current && releases.some((release) => release.current) ? await this.previousFiles(current) : null;
    return { current, releases, currentFiles };
  }

  /** The entries of releases/ (none when it does not exist yet). */
  async releaseNames() {
    try {
      return await readdir(this.releasesPath());
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw error;
      return [];
    }
  }

  /** @param {string} id */
  async previousFiles(id) {
    return parseRecord(await readFile(path.join(this.releasesPath(), `${id}.json`), 'utf8')).files;
  }

  /** Remove what interrupted runs left: half-built trees, records without a tree. */
  async cleanup() {
    const names = await this.releaseNames();
    const dirs = new Set(names.filter(isReleaseId));
    for (const name of names) {
      const orphanRecord = name.endsWith('.json') && !dirs.has(name.slice(0, -5));
      if (name.startsWith(TMP_PREFIX) || orphanRecord) await rm(path.join(this.releasesPath(), name), { recursive: true, force: true });
    }
  }

  /**
   * Build releases/ID: hard links for unchanged files, copies of the rest;
   * verify it; then give it its record. `current` is not touched.
   * @param {StagePlan} plan
   * @returns {Promise<StageResult>}
   */
  async stage(plan) {
    const { id, source, diff, previous, signal } = plan;
    await mkdir(this.releasesPath(), { recursive: true });
    await this.cleanup();
    const final = this.releasesPath(id);
    if (await lstat(final).then(() => true, () => false)) {
      return { sentFiles: 0, sentBytes: 0, verify: { ok: true, checked: 0, failures: [] }, reused: true };
    }
    const tmp = this.releasesPath(TMP_PREFIX + id);
    await mkdir(tmp, { recursive: true });
    const prevDir = previous ? this.releasesPath(previous.id) : null;
    /** @type {Set<string>} */
    const made = new Set(['']);
    /** @param {string} file */
    const ensureDir = async (file) => {
      const parent = path.posix.dirname(file);
      if (parent === '.' || made.has(parent)) return;
      await mkdir(path.join(tmp, parent), { recursive: true });
      for (let dir = parent; dir !== '.' && !made.has(dir); dir = path.posix.dirname(dir)) made.add(dir);
    };
    const limit = pLimit(16);
    let sentFiles = 0;
    let sentBytes = 0;
    /** @type {Set<string>} */
    const copied = new Set();
    const linkable = new Set(diff.link);
    const files = [...source.files.keys()].sort();
    for (const file of files) await ensureDir(file);
    await Promise.all(files.map((file) => limit(async () => {
      if (signal?.aborted) throw new AbortError('interrupted');
      const info = /** @type {FileInfo} */ (source.files.get(file));
      const to = path.join(tmp, file);
      if (prevDir && previous && linkable.has(file)) {
        // Link only a file that still is what the previous record says (size and time).
        const was = previous.files.get(file);
        const stat = await lstat(path.join(prevDir, file)).catch(() => null);
        if (was && stat?.isFile() && stat.size === was.bytes && Math.abs(stat.mtimeMs - was.mtimeMs) < 1) {
          try {
            await link(path.join(prevDir, file), to);
            return;
          } catch (error) {
            if (!['EXDEV', 'EMLINK', 'EPERM', 'ENOTSUP'].includes(errno(error) ?? '')) throw error;
          }
        }
      }
      await copyFile(path.join(source.out, file), to);
      const when = new Date(info.mtimeMs);
      await utimes(to, when, when);
      copied.add(file);
      sentFiles++;
      sentBytes += info.bytes;
    })));

    // Verify: every copied file re-read and hashed; every link checked by size.
    /** @type {{ file: string, reason: string }[]} */
    const failures = [];
    /** @type {Map<string, FileInfo>} the record holds the release's own times, for the next link check */
    const built = new Map();
    await Promise.all(files.map((file) => limit(async () => {
      const info = /** @type {FileInfo} */ (source.files.get(file));
      const at = path.join(tmp, file);
      const stat = await lstat(at).catch(() => null);
      if (stat) built.set(file, { ...info, mtimeMs: stat.mtimeMs });
      if (!stat?.isFile()) failures.push({ file, reason: 'missing from the release' });
      else if (stat.size !== info.bytes) failures.push({ file, reason: `${stat.size} bytes, expected ${info.bytes}` });
      else if (copied.has(file) && (await sha256Of(at)) !== info.sha256) failures.push({ file, reason: 'sha256 differs from the source after copying' });
    })));
    const verify = { ok: failures.length === 0, checked: files.length, failures };
    if (!verify.ok) {
      await rm(tmp, { recursive: true, force: true });
      return { sentFiles, sentBytes, verify, reused: false };
    }
    const recordTmp = path.join(this.releasesPath(), `${TMP_PREFIX}${id}.json`);
    await writeFile(recordTmp, formatRecord(plan.header, built));
    await rename(recordTmp, path.join(this.releasesPath(), `${id}.json`));
    await rename(tmp, final);
    return { sentFiles, sentBytes, verify, reused: false };
  }

  /**
   * Point `current` at releases/ID: a new link, renamed over the old one;
   * then remove the releases in `prune` (never the current one).
   * @param {string} id
   * @param {string[]} [prune]
   */
  async switchTo(id, prune = []) {
    const { releases } = await this.state();
    if (!releases.some((release) => release.id === id)) throw new DeployError(`no complete release ${id} in ${this.releasesPath()}`, { code: 'DEPLOY_NO_RELEASE' });
    const next = path.join(this.dir, `.${CURRENT}.${process.pid}.${id}`);
    await rm(next, { force: true });
    await symlink(`${RELEASES}/${id}`, next);
    await rename(next, path.join(this.dir, CURRENT));
    for (const old of prune) {
      if (old === id || !isReleaseId(old)) continue;
      // The record first: a tree without a record is no longer a release.
      await rm(path.join(this.releasesPath(), `${old}.json`), { force: true });
      await rm(this.releasesPath(old), { recursive: true, force: true });
    }
  }

  async close() {}
}
