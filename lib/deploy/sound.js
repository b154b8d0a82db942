// @ts-check
import { createHash } from 'node:crypto';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { DeployError } from '../errors.js';

/**
 * Whether a release holds exactly its record: regular files and their directories, no link, no other entry. Only then is a new
 * release linked from it: a planted link would be copied, and the removals and writes after would go through it, outside the
 * target. Otherwise the new one is built from OUT alone (DEPLOY_REBUILT). @typedef {import('./source.js').FileInfo} FileInfo
 */

/** "a/b/c.html" -> "a", "a/b". @param {Iterable<string>} files */
export function impliedDirs(files) {
  /** @type {Set<string>} */ const dirs = new Set();
  for (const file of files) {
    for (let cut = file.lastIndexOf('/'); cut > 0; cut = file.lastIndexOf('/', cut - 1)) {
      const dir = file.slice(0, cut);
      if (dirs.has(dir)) break;
      dirs.add(dir);
    }
  }
  return dirs;
}

/**
 * What a local release holds that its record does not say; null when exactly its files. Stops at the first difference.
 * @param {string} root the release's directory @param {Map<string, FileInfo>} files its record's @returns {Promise<string | null>}
 */
export async function localTreeProblem(root, files) {
  const top = await lstat(root).catch(() => null);
  if (!top?.isDirectory()) return 'it is not a directory (a symbolic link?)';
  const dirs = impliedDirs(files.keys());
  let seen = 0;
  /** @param {string} rel @returns {Promise<string | null>} */ const visit = async (rel) => {
    for (const entry of await readdir(path.join(root, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isSymbolicLink()) return `${child} is a symbolic link`;
      if (entry.isDirectory()) {
        if (!dirs.has(child)) return `${child}/ is a directory its record does not list`;
        const problem = await visit(child);
        if (problem) return problem;
      } else if (!entry.isFile()) {
        return `${child} is not a regular file`;
      } else if (!files.has(child)) {
        return `${child} is not in its record`;
      } else {
        seen++;
      }
    }
    return null;
  };
  const problem = await visit('');
  if (problem) return problem;
  return seen === files.size ? null : `${files.size - seen} file(s) of its record are missing`;
}

/** As `find . -print0 | LC_ALL=C sort -z` gives them: "./NAME\0" each, in byte order. @param {Iterable<string>} names */
function listingDigest(names) {
  const sorted = [...names].map((name) => Buffer.from(`./${name}\0`)).sort(Buffer.compare);
  const hash = createHash('sha256');
  for (const name of sorted) hash.update(name);
  return hash.digest('hex');
}

/**
 * From releases/ with $id a release, prints `TREE DIRS FILES` (sha256 of its sorted directory and file names), `TREE link`
 * when it is no directory, and `ODD NAME` for its first entry neither file nor directory. Needs GNU find, sort -z, sha256sum.
 */
export const TREE_CHECK = `
if [ -L "$id" ] || [ ! -d "$id" ]; then echo "TREE link"
else
  odd=$(cd -- "$id" && find . ! -type f ! -type d -print | head -n 1)
  dirs=$(cd -- "$id" && find . -mindepth 1 -type d -print0 | LC_ALL=C sort -z | sha256sum)
  files=$(cd -- "$id" && find . -type f -print0 | LC_ALL=C sort -z | sha256sum)
  printf 'TREE %.64s %.64s\\n' "$dirs" "$files"
  if [ -n "$odd" ]; then printf 'ODD %s\\n' "\${odd#./}"; fi
fi`;

/** Null when it holds exactly the record's files. @param {string} answer TREE_CHECK's lines @param {Map<string, FileInfo>} files the record's @returns {string | null} */
export function remoteTreeProblem(answer, files) {
  const odd = /^ODD (.*)$/m.exec(answer)?.[1];
  if (odd !== undefined) return `${odd} is a symbolic link or not a regular file`;
  const tree = /^TREE (\S+)(?: (\S+))?$/m.exec(answer);
  if (!tree) throw new DeployError('the server did not describe the current release (TREE)', { code: 'DEPLOY_REMOTE' });
  if (tree[1] === 'link') return 'it is not a directory (a symbolic link?)';
  if (tree[1] !== listingDigest(impliedDirs(files.keys()))) return 'it holds directories its record does not list';
  if (tree[2] !== listingDigest(files.keys())) return 'its files are not those of its record (one added or missing)';
  return null;
}

/**
 * Throws DEPLOY_UNSAFE_TARGET when a directory between `root` and `root/rel` is a link; a part not made yet ends the check.
 * @param {string} root a release being built @param {string} rel a directory under it, "." for root @param {Set<string>} checked a cache per build
 */
export async function assertNoLink(root, rel, checked) {
  if (rel === '.' || rel === '' || checked.has(rel)) return;
  await assertNoLink(root, path.posix.dirname(rel), checked);
  const info = await lstat(path.join(root, rel)).catch((error) => {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') return null;
    throw error;
  });
  if (info === null) return;
  if (info.isSymbolicLink()) throw new DeployError(`${path.join(root, rel)} is a symbolic link: a release is never written through one; run again (the next run builds from OUT)`, { code: 'DEPLOY_UNSAFE_TARGET' });
  checked.add(rel);
}
