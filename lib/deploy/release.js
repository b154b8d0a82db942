// @ts-check
import { DeployError } from '../errors.js';

/**
 * The release layout, the same on every target: DIR/releases/ID/ (a release's tree), DIR/releases/ID.json (its record, written
 * once the tree is complete and verified), DIR/releases/.tmp-ID/ (being built), DIR/releases/.trash-* (a killed ssh run's
 * release set aside), DIR/current (symbolic link to releases/ID: the web root), DIR/.prerender-lock (lock.js). A record is a
 * header line then `["path","sha256",bytes,mtimeMs]` per file, so listing releases reads first lines only.
 * @typedef {{ id: string, createdAt: string, manifestSha256: string, pages: number, files: number, bytes: number }} ReleaseHeader
 * @typedef {import('./source.js').FileInfo} FileInfo @typedef {ReleaseHeader & { current: boolean }} ReleaseInfo
 */

export const RELEASES = 'releases';
export const CURRENT = 'current';
export const TMP_PREFIX = '.tmp-';
/** Removed later: an ssh target's remote side may still write into it. */
export const TRASH_PREFIX = '.trash-';
export const LOCK_NAME = '.prerender-lock';
const ID = /^\d{8}T\d{6}Z-[0-9a-f]{8}$/;

/** @param {string} id */ export const isReleaseId = (id) => ID.test(id);

/** The UTC time, then the manifest sha256's first 8 hex digits: ids sort in time order. @param {string} manifestSha256 @param {Date} [now] */
export function releaseId(manifestSha256, now = new Date()) {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${manifestSha256.slice(0, 8)}`;
}

/** @param {ReleaseHeader} header @param {Map<string, FileInfo>} files */
export function formatRecord(header, files) {
  const lines = [JSON.stringify({ version: 1, ...header })];
  for (const file of [...files.keys()].sort()) {
    const info = /** @type {FileInfo} */ (files.get(file));
    // JSON.stringify([file, sha256, bytes, mtimeMs]), without its cost per line.
    lines.push(`[${JSON.stringify(file)},${JSON.stringify(info.sha256)},${Number(info.bytes)},${JSON.stringify(info.mtimeMs)}]`);
  }
  return lines.join('\n') + '\n';
}

/** @param {string} line a record's first @returns {ReleaseHeader} */
export function parseHeader(line) {
  const data = JSON.parse(line);
  if (!data || data.version !== 1 || typeof data.id !== 'string' || !isReleaseId(data.id)) throw new DeployError('not a release record');
  return { id: data.id, createdAt: data.createdAt, manifestSha256: data.manifestSha256, pages: data.pages, files: data.files, bytes: data.bytes };
}

/** @param {string} text a whole record @returns {{ header: ReleaseHeader, files: Map<string, FileInfo> }} */
export function parseRecord(text) {
  const lines = text.split('\n').filter((line) => line !== '');
  if (lines.length === 0) throw new DeployError('empty release record');
  const header = parseHeader(lines[0]);
  /** @type {Map<string, FileInfo>} */ const files = new Map();
  for (const line of lines.slice(1)) {
    const [file, sha256, bytes, mtimeMs] = JSON.parse(line);
    files.set(file, { sha256, bytes, mtimeMs });
  }
  return { header, files };
}

/** Null when it holds no release. @param {string | null} link */
export function idFromLink(link) {
  if (!link) return null;
  const match = /(?:^|\/)releases\/([^/]+)\/?$/.exec(link);
  return match && isReleaseId(match[1]) ? match[1] : null;
}

/** Oldest first; never the current one, nor the one just made. @param {string[]} ids complete releases @param {number} keep @param {(string | null)[]} protect */
export function toPrune(ids, keep, protect) {
  const sorted = [...ids].sort();
  const kept = new Set(sorted.slice(Math.max(0, sorted.length - keep)));
  for (const id of protect) if (id) kept.add(id);
  return sorted.filter((id) => !kept.has(id));
}

/** The one given, which must exist, else the newest older than the current. @param {string[]} ids complete releases @param {string | null} current @param {string} [wanted] */
export function rollbackTarget(ids, current, wanted) {
  const sorted = [...ids].sort();
  if (wanted !== undefined) {
    if (!sorted.includes(wanted)) throw new DeployError(`no complete release ${wanted} (releases: ${sorted.join(', ') || 'none'})`, { code: 'DEPLOY_NO_RELEASE' });
    return wanted;
  }
  const older = sorted.filter((id) => current === null || id < current);
  if (older.length === 0) throw new DeployError(`no release older than the current one (${current ?? 'none'}) to roll back to`, { code: 'DEPLOY_NO_RELEASE' });
  return older[older.length - 1];
}
