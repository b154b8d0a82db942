// @ts-check
/**
 * Which paths to take out of a copy of the previous release, and `sha256sum` output read back into a check.
 * @typedef {import('./source.js').FileInfo} FileInfo @typedef {{ file: string, reason: string }} Failure
 */

/**
 * The changed files (sent again, never written through a link into the previous release) and the vanished ones; a directory the
 * new release lacks goes whole, so it can become a file and none is left empty.
 * @param {import('./diff.js').Diff} diff @param {Map<string, FileInfo>} previous @param {Map<string, FileInfo>} next @returns {string[]} relative
 */
export function removalList(diff, previous, next) {
  const list = diff.send.filter((file) => previous.has(file));
  if (diff.remove.length === 0) return list;
  /** @type {Set<string>} */ const nextDirs = new Set();
  for (const file of next.keys()) {
    for (let cut = file.lastIndexOf('/'); cut > 0; cut = file.lastIndexOf('/', cut - 1)) {
      const dir = file.slice(0, cut);
      if (nextDirs.has(dir)) break;
      nextDirs.add(dir);
    }
  }
  /** @type {Set<string>} */ const dirs = new Set();
  for (const file of diff.remove) {
    let top = null;
    for (let cut = file.indexOf('/'); cut > 0; cut = file.indexOf('/', cut + 1)) {
      const dir = file.slice(0, cut);
      if (!nextDirs.has(dir)) {
        top = dir;
        break;
      }
    }
    if (top === null) list.push(file);
    else dirs.add(top);
  }
  return [...list, ...dirs];
}

/**
 * `HASH  NAME` per line; an escaped name's line starts with "\". @param {string} text
 * @param {boolean} [dotSlash] names start with "./", from find @returns {Map<string, string>} name -> sha256
 */
export function parseHashes(text, dotSlash = false) {
  /** @type {Map<string, string>} */ const hashes = new Map();
  for (const line of text.split('\n')) {
    const match = /^(\\?)([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!match) continue;
    let name = match[3];
    if (match[1]) name = name.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c === 'r' ? '\r' : c));
    if (dotSlash && name.startsWith('./')) name = name.slice(2);
    hashes.set(name, match[2]);
  }
  return hashes;
}

/**
 * @param {string[]} list the files checked @param {Map<string, FileInfo>} files the release's @param {Map<string, string>} hashed the target's sums
 * @param {boolean} [whole] every file of the release: one the manifest lacks fails too
 * @param {{ links: string[], others: string[] }} [odd] with whole: entries neither files nor directories, each a failure @returns {Failure[]}
 */
export function checkHashes(list, files, hashed, whole = false, odd = { links: [], others: [] }) {
  /** @type {Failure[]} */ const failures = [];
  for (const file of odd.links) failures.push({ file, reason: 'a symbolic link on the target, never part of a release' });
  for (const file of odd.others) failures.push({ file, reason: 'not a regular file on the target (fifo, socket, device)' });
  const odds = new Set([...odd.links, ...odd.others]);
  for (const file of list) {
    if (odds.has(file)) continue;
    const got = hashed.get(file);
    if (got === undefined) failures.push({ file, reason: 'missing on the target after transfer' });
    else if (got !== files.get(file)?.sha256) failures.push({ file, reason: 'sha256 differs on the target after transfer' });
  }
  if (whole) {
    for (const file of hashed.keys()) if (!files.has(file)) failures.push({ file, reason: 'on the target but not in the release' });
  }
  return failures.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}
