// @ts-check
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { copyFile, link, lstat, mkdir, open, readdir, readFile, readlink, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pLimit from 'p-limit';
import { AbortError, DeployError } from '../errors.js';
import { diskFullError, takeLock } from './release-lock.js';
import { CURRENT, RELEASES, TMP_PREFIX, idFromLink, isReleaseId, parseHeader, parseRecord } from './release.js';
import { assertNoLink, localTreeProblem } from './sound.js';
import { checkHashes, removalList } from './verify.js';

/**
 * A local or mounted web root as a deploy target. A new release starts as a hard-linked copy of the previous one (`cp -al`, one
 * process) less the changed and vanished paths; changed and new files are copied in and hashed again, so time and disk grow with
 * the changes. The switch renames a new symbolic link over `current`. Only a release exactly its record (sound.js) is linked
 * from, and nothing is removed or written through a directory that is a link.
 * @typedef {import('./source.js').FileInfo} FileInfo @typedef {import('./release.js').ReleaseInfo} ReleaseInfo
 * @typedef {import('./targets.js').DeployTarget} DeployTarget @typedef {import('./targets.js').StagePlan} StagePlan
 * @typedef {import('./targets.js').StageResult} StageResult
 */

/** @param {unknown} error */ const errno = (error) => /** @type {NodeJS.ErrnoException} */ (error)?.code;

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
  /** @param {string} dir where releases/ and current live @param {{ name?: string, verify?: 'all' | 'sent' }} [options] all: hash every file of the new release */
  constructor(dir, options = {}) {
    this.dir = path.resolve(dir);
    this.label = options.name ?? this.dir;
    this.kind = /** @type {const} */ ('local');
    this.verifyAll = options.verify === 'all';
    /** @type {{ release(): Promise<void> } | null} */ this.held = null;
  }

  /**
   * One publish, deploy or rollback at a time: DIR/.prerender-lock (lock.js).
   * @param {{ create?: boolean }} [options] make the directory when missing; rollback has nothing to switch to there and leaves none behind
   */
  async lock(options = {}) {
    if (options.create === false && !(await lstat(this.dir).then(() => true, () => false))) {
      throw new DeployError(`${this.dir} does not exist: it has no releases`, { code: 'DEPLOY_NO_RELEASE' });
    }
    await mkdir(this.dir, { recursive: true }).catch((error) => {
      if (errno(error) === 'EEXIST' || errno(error) === 'ENOTDIR') throw this.notDirectory();
      throw error;
    });
    this.held = await takeLock(this.dir, {
      busy: (who) => `another prerender publish, deploy or rollback (${who}) holds ${this.label}; wait for it to end (a lock left by a killed run on this machine is taken over by itself)`,
      clean: () => this.cleanup(),
      leftovers: async () => (await this.releaseNames()).filter((name) => name.startsWith(TMP_PREFIX)).map((name) => this.releasesPath(name)),
    });
  }

  /** Say so, not "EEXIST" or "ENOTDIR". */
  notDirectory() {
    return new DeployError(`${this.dir} is not a directory (a file is there or on its path): give the directory of the web root`, { code: 'DEPLOY_TARGET_NOT_DIR' });
  }

  async unlock() {
    const held = this.held;
    this.held = null;
    await held?.release();
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
      if (errno(error) === 'ENOTDIR') throw this.notDirectory();
      if (errno(error) === 'EINVAL') throw new DeployError(`${path.join(this.dir, CURRENT)} is not a symbolic link: move it away (prerender makes "current" a link to a release)`, { code: 'DEPLOY_CURRENT_NOT_LINK' });
      throw error;
    }
  }

  /** @param {boolean} [withFiles] also the current release's file list @returns {Promise<import('./targets.js').TargetState>} */
  async state(withFiles = false) {
    const current = await this.currentId();
    const names = await this.releaseNames();
    const dirs = new Set(names.filter(isReleaseId));
    /** @type {ReleaseInfo[]} */ const releases = [];
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
    const unsound = currentFiles && current ? await localTreeProblem(this.releasesPath(current), currentFiles) : null;
    return { current, releases, currentFiles, unsound: unsound && `${RELEASES}/${current}: ${unsound}` };
  }

  /** None when it does not exist yet. */
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

  /**
   * What interrupted runs left: half-built trees, records without a tree, and trees without a record (a prune killed between
   * the two: the record goes first). Never the tree `current` points to.
   */
  async cleanup() {
    const names = await this.releaseNames();
    const dirs = new Set(names.filter(isReleaseId));
    const records = new Set(names.filter((name) => name.endsWith('.json')).map((name) => name.slice(0, -5)));
    const current = await this.currentId();
    for (const name of names) {
      const orphanRecord = name.endsWith('.json') && !dirs.has(name.slice(0, -5));
      const orphanTree = dirs.has(name) && !records.has(name) && name !== current;
      if (name.startsWith(TMP_PREFIX) || orphanRecord || orphanTree) await rm(path.join(this.releasesPath(), name), { recursive: true, force: true });
    }
  }

  /** A hard-linked copy of the previous release less the changed paths, the copies checked, then the record; `current` untouched. @param {StagePlan} plan @returns {Promise<StageResult>} */
  async stage(plan) {
    const { id } = plan;
    await mkdir(this.releasesPath(), { recursive: true });
    await this.cleanup();
    const final = this.releasesPath(id);
    if (await lstat(final).then(() => true, () => false)) {
      return { sentFiles: 0, sentBytes: 0, verify: { ok: true, checked: 0, failures: [] }, reused: true };
    }
    const tmp = this.releasesPath(TMP_PREFIX + id);
    try {
      return await this.build(plan, tmp);
    } catch (error) {
      // Whatever failed, a full disk above all, nothing of this release stays behind.
      await rm(tmp, { recursive: true, force: true }).catch(() => {});
      await rm(`${tmp}.json`, { force: true }).catch(() => {});
      if (!(await lstat(final).then(() => true, () => false))) await rm(`${final}.json`, { force: true }).catch(() => {});
      const code = /** @type {NodeJS.ErrnoException} */ (error)?.code;
      if (code === 'ENOSPC' || code === 'EDQUOT') throw diskFullError(` while building ${RELEASES}/${id}, which was removed (current is untouched)`, []);
      throw error;
    }
  }

  /** releases/.tmp-ID built, checked and renamed to releases/ID. @param {StagePlan} plan @param {string} tmp @returns {Promise<StageResult>} */
  async build(plan, tmp) {
    const { id, source, diff, previous, signal } = plan;
    const final = this.releasesPath(id);
    const prevDir = previous ? this.releasesPath(previous.id) : null;
    /** @type {Set<string>} directories of tmp found not to be links */
    const checked = new Set();
    if (previous && prevDir && (await lstat(prevDir).then((stat) => stat.isDirectory(), () => false))) {
      await linkCopy(prevDir, tmp, previous.files, signal);
      const limit = pLimit(16);
      await Promise.all(removalList(diff, previous.files, source.files).map((file) => limit(async () => {
        await assertNoLink(tmp, path.posix.dirname(file), checked);
        await rm(path.join(tmp, file), { recursive: true, force: true });
      })));
    } else {
      await mkdir(tmp, { recursive: true });
    }
    const send = diff.send;
    await copyFiles(source, send, tmp, checked, signal);
    const sentBytes = send.reduce((sum, file) => sum + (source.files.get(file)?.bytes ?? 0), 0);

    // Every copied file read back and hashed; the others are links to inodes checked when copied (verify all hashes them again).
    const entries = this.verifyAll ? await listEntries(tmp) : { files: send, links: [], others: [] };
    const list = entries.files;
    const limit = pLimit(8);
    /** @type {Map<string, string>} */ const hashed = new Map();
    await Promise.all(list.map((file) => limit(async () => {
      if (signal?.aborted) throw new AbortError('interrupted');
      const hash = await sha256Of(path.join(tmp, file)).catch(() => null);
      if (hash !== null) hashed.set(file, hash);
    })));
    const failures = checkHashes(this.verifyAll ? [...source.files.keys()] : send, source.files, hashed, this.verifyAll, entries);
    const verify = { ok: failures.length === 0, checked: this.verifyAll ? source.files.size : send.length, failures };
    if (!verify.ok) {
      await rm(tmp, { recursive: true, force: true });
      return { sentFiles: send.length, sentBytes, verify, reused: false };
    }
    const recordTmp = `${tmp}.json`;
    await writeFile(recordTmp, plan.record);
    await rename(recordTmp, path.join(this.releasesPath(), `${id}.json`));
    await rename(tmp, final);
    return { sentFiles: send.length, sentBytes, verify, reused: false };
  }

  /** A new link renamed over the old one, then the releases in `prune` removed, never the current one. @param {string} id @param {string[]} [prune] */
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

/** @param {unknown} error */
const linkUnsupported = (error) => ['EXDEV', 'EMLINK', 'EPERM', 'ENOTSUP', 'ENOSYS'].includes(errno(error) ?? '');

/**
 * `cp -al`, one process (GNU coreutils); where there is none, one link() per file of the record.
 * @param {string} from the previous release @param {string} to must not exist @param {Map<string, FileInfo>} files its record @param {AbortSignal} [signal]
 */
async function linkCopy(from, to, files, signal) {
  const copied = await new Promise((resolve) => {
    execFile('cp', ['-al', '--', from, to], { signal }, (error) => resolve(!error));
  });
  if (signal?.aborted) throw new AbortError('interrupted');
  if (copied) return;
  await rm(to, { recursive: true, force: true });
  await mkdir(to, { recursive: true });
  const limit = pLimit(16);
  await Promise.all([...files.keys()].map((file) => limit(async () => {
    if (signal?.aborted) throw new AbortError('interrupted');
    await mkdir(path.dirname(path.join(to, file)), { recursive: true });
    try {
      await link(path.join(from, file), path.join(to, file));
    } catch (error) {
      if (errno(error) === 'ENOENT') return; // gone from the previous release: not linked, and the check with verify all says so
      if (!linkUnsupported(error)) throw error;
      await copyFile(path.join(from, file), path.join(to, file));
    }
  })));
}

/**
 * With their times. @param {import('./source.js').SourceTree} source @param {string[]} files @param {string} to
 * @param {Set<string>} checked directories of `to` found not to be links @param {AbortSignal} [signal]
 */
async function copyFiles(source, files, to, checked, signal) {
  /** @type {Set<string>} */ const made = new Set();
  for (const file of files) {
    const parent = path.posix.dirname(file);
    if (parent === '.' || made.has(parent)) continue;
    await assertNoLink(to, parent, checked);
    await mkdir(path.join(to, parent), { recursive: true });
    for (let dir = parent; dir !== '.' && !made.has(dir); dir = path.posix.dirname(dir)) made.add(dir);
  }
  const limit = pLimit(16);
  await Promise.all(files.map((file) => limit(async () => {
    if (signal?.aborted) throw new AbortError('interrupted');
    const info = /** @type {FileInfo} */ (source.files.get(file));
    const at = path.join(to, file);
    // EXCL: never write through a link into another release; a path already there is replaced.
    await copyFile(path.join(source.out, file), at, constants.COPYFILE_EXCL).catch(async (error) => {
      if (errno(error) !== 'EEXIST') throw error;
      await rm(at, { recursive: true, force: true });
      await copyFile(path.join(source.out, file), at, constants.COPYFILE_EXCL);
    });
    const when = new Date(info.mtimeMs);
    await utimes(at, when, when);
  })));
}

/** Relative and "/" separated: regular files, symbolic links (never followed), and the others. @param {string} root */
export async function listEntries(root) {
  /** @type {{ files: string[], links: string[], others: string[] }} */ const entries = { files: [], links: [], others: [] };
  /** @param {string} rel */ const visit = async (rel) => {
    for (const entry of await readdir(path.join(root, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) await visit(child);
      else (entry.isFile() ? entries.files : entry.isSymbolicLink() ? entries.links : entries.others).push(child);
    }
  };
  await visit('');
  return entries;
}
