// @ts-check
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { mkdir, readdir, readFile, realpath, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import pLimit from 'p-limit';
import { MANIFEST_NAME, ManifestFormatError, parseManifest } from '../output/manifest/index.js';
import { isSitemapName } from '../output/sitemap.js';
import { DeployError } from '../errors.js';
import { FRONT_FILES } from '../front/front-files.js';

/**
 * The tree to publish, read once: every file the manifest lists, their siblings, the manifest and the sitemaps, each hashed and
 * checked against the manifest; nothing under OUT/.prerender/. `verify`, `publish` and `deploy` start here; targets copy what it found.
 * @typedef {{ sha256: string, bytes: number, mtimeMs: number }} FileInfo @typedef {{ file: string, reason: string }} Problem
 * @typedef {{ out: string, manifestSha256: string, pages: number, files: Map<string, FileInfo>, missing: Problem[], changed: Problem[],
 *   unlisted: Problem[], unsafe: Problem[], checked: number, hashed: number, bytes: number, durationMs: number }} SourceTree
 *   files: by path relative to OUT; hashed: of those checked, the files read (the others unchanged, by the hash cache)
 * @typedef {[key: string, sha256: string, bytes: number, matched: string]} CacheEntry
 *   key: size, mtime, ctime and inode when hashed; matched: for a .gz/.br sibling, the page sha256 it decompresses to
 */

export const STATE_DIR = '.prerender';
const SIBLINGS = /** @type {const} */ ({ '.gz': 'gzip', '.br': 'br' });

/** Relative, "/" separated, no ".", ".." or empty segment, not in the state directory. @param {unknown} file @returns {string | null} what is wrong */
export function unsafeReason(file) {
  if (typeof file !== 'string' || file === '') return 'not a file name';
  if (file.includes('\\') || file.includes('\0')) return 'has a backslash or NUL';
  if (file.startsWith('/') || /^[A-Za-z]:/.test(file)) return 'is absolute';
  const segments = file.split('/');
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..')) return 'has an empty, "." or ".." segment (escapes OUT)';
  if (segments[0] === STATE_DIR) return `is in ${STATE_DIR}/, which is never published`;
  return null;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * A manifest that fails is unreadable (exit 2), never a crash; an unsafe or missing "file" is left to unsafeReason (exit 1).
 * @param {string} text @param {string} where the manifest's path, for messages
 */
function readManifestText(text, where) {
  let manifest;
  try {
    manifest = parseManifest(text);
  } catch (error) {
    if (error instanceof ManifestFormatError) throw new ManifestFormatError(`${where}: ${error.message}`, { cause: error });
    throw new ManifestFormatError(`${where} is not valid JSON: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
  manifest.pages.forEach((/** @type {unknown} */ page, index) => {
    const entry = /** @type {Record<string, unknown> | null} */ (page && typeof page === 'object' && !Array.isArray(page) ? page : null);
    const problem = !entry ? 'is not an object'
      : typeof entry.sha256 !== 'string' || !SHA256_HEX.test(entry.sha256) ? 'has no "sha256" (64 hex digits)'
        : !Number.isSafeInteger(entry.bytes) || /** @type {number} */ (entry.bytes) < 0 ? 'has no "bytes" (a whole number)'
          : null;
    if (problem) throw new ManifestFormatError(`${where}: pages[${index}]${entry && typeof entry.url === 'string' ? ` (${entry.url})` : ''} ${problem}`);
  });
  return manifest;
}

/** Read whole up to this size, in one synchronous read from the page cache; larger ones streamed. */
const WHOLE_FILE_MAX = 4 * 1024 * 1024;

/**
 * With `decode`, of the decompressed bytes, no more than `maxOutput` (a bomb stops there).
 * @param {string} file @param {number} size from its stat @param {'gzip' | 'br'} [decode] @param {number} [maxOutput]
 */
async function hashFile(file, size, decode, maxOutput = WHOLE_FILE_MAX) {
  if (size <= WHOLE_FILE_MAX) {
    // Synchronous on purpose: for small files the promise round trips cost several times the read.
    let data = readFileSync(file);
    if (decode) data = decode === 'gzip' ? zlib.gunzipSync(data, { maxOutputLength: maxOutput }) : zlib.brotliDecompressSync(data, { maxOutputLength: maxOutput });
    return { sha256: createHash('sha256').update(data).digest('hex'), bytes: data.length };
  }
  const hash = createHash('sha256');
  let bytes = 0;
  const sink = async (/** @type {AsyncIterable<Buffer>} */ source) => {
    for await (const chunk of source) {
      hash.update(chunk);
      bytes += chunk.length;
    }
  };
  const input = createReadStream(file, { highWaterMark: 256 * 1024 });
  if (decode) await pipeline(input, decode === 'gzip' ? zlib.createGunzip() : zlib.createBrotliDecompress(), sink);
  else await pipeline(input, sink);
  return { sha256: hash.digest('hex'), bytes };
}

/** Not following links; the state directory left out. @param {string} out */
async function walk(out) {
  /** @type {Set<string>} */ const regular = new Set();
  /** @type {string[]} */ const links = [];
  /** @type {string[]} */ const other = [];
  /** @param {string} rel */
  async function visit(rel) {
    const entries = await readdir(path.join(out, rel), { withFileTypes: true });
    for (const entry of entries) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (rel === '' && entry.name === STATE_DIR) continue;
      if (entry.isDirectory()) await visit(child);
      else if (entry.isFile()) regular.add(child);
      else if (entry.isSymbolicLink()) links.push(child);
      else other.push(child);
    }
  }
  await visit('');
  return { regular, links, other };
}

/** @param {string} base realpath of OUT @param {string} target */
const inside = (base, target) => target === base || target.startsWith(base + path.sep);

/**
 * @param {string} out @param {{ concurrency?: number, cache?: boolean, trustBefore?: number }} [options] cache: the hash cache
 *   (deploy, publish; verify hashes every file); trustBefore: only files whose ctime is older go into it, a second ago by default
 * @returns {Promise<SourceTree>}
 */
export async function readSource(out, options = {}) {
  const started = Date.now();
  const root = path.resolve(out);
  let manifestText;
  try {
    manifestText = await readFile(path.join(root, MANIFEST_NAME));
  } catch (error) {
    throw new DeployError(`cannot read ${path.join(root, MANIFEST_NAME)}: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
  const manifest = readManifestText(manifestText.toString('utf8'), path.join(root, MANIFEST_NAME));
  const manifestSha256 = createHash('sha256').update(manifestText).digest('hex');
  const base = await realpath(root);
  const { regular, links, other } = await walk(root);
  const cache = options.cache ? await readCache(root) : new Map();
  /** @type {Map<string, CacheEntry>} */ const seen = new Map();
  let dirty = false;
  const trustBefore = options.trustBefore ?? started - RACY_MS;

  /** @type {SourceTree} */ const tree = {
    out: root, manifestSha256, pages: manifest.pages.length, files: new Map(),
    missing: [], changed: [], unlisted: [], unsafe: [], checked: 0, hashed: 0, bytes: 0, durationMs: 0,
  };
  const viaLink = await linksInside(tree, base, links, other);

  const limit = pLimit(options.concurrency ?? 8);
  /** @type {Set<string>} */ const listed = new Set([MANIFEST_NAME]);
  /** @type {Promise<void>[]} */ const jobs = [];
  /** @param {string} file @param {{ sha256: string, bytes: number } | null} expected @param {'gzip' | 'br'} [decode] a sibling, whose decompressed bytes must be `expected` */
  const check = (file, expected, decode) => {
    const full = path.join(root, file);
    let info;
    try {
      info = statSync(full); // follows a link inside OUT (checked above)
    } catch {
      tree.missing.push({ file, reason: 'listed in the manifest but not in OUT' });
      return;
    }
    // A directory where the manifest lists a file: a mismatch to report, not a read that fails with EISDIR.
    if (!info.isFile()) {
      tree.missing.push({ file, reason: 'listed in the manifest as a file, but is a directory or not a regular file in OUT' });
      return;
    }
    const key = cacheKey(info);
    const cached = cache.get(file);
    const unchanged = Array.isArray(cached) && cached[0] === key;
    const want = expected ? `${expected.sha256}:${expected.bytes}` : '';
    const run = async () => {
      const own = unchanged ? { sha256: cached[1], bytes: cached[2] } : await hashFile(full, info.size).catch((/** @type {NodeJS.ErrnoException} */ error) => {
        // Unreadable: this file cannot be vouched for; the rest of the report stands.
        tree.changed.push({ file, reason: `cannot be read (${error.code ?? error.message})` });
        return null;
      });
      if (own === null) return;
      if (!unchanged) tree.hashed++;
      let matched = '';
      if (expected) {
        const decoded = !decode ? own : unchanged && cached[3] === want ? expected : await hashFile(full, Math.min(expected.bytes, WHOLE_FILE_MAX), decode, expected.bytes + 1).catch(() => null);
        if (decoded === null) {
          tree.changed.push({ file, reason: `does not decompress (${decode})` });
        } else if (decoded.sha256 !== expected.sha256 || decoded.bytes !== expected.bytes) {
          tree.changed.push({ file, reason: decode ? 'does not decompress to the page it sits beside' : `sha256 ${decoded.sha256.slice(0, 12)}… (${decoded.bytes} bytes), manifest says ${expected.sha256.slice(0, 12)}… (${expected.bytes} bytes)` });
        } else if (decode) {
          matched = want;
        }
      }
      // A file changed in the last second may change again within the same timestamp tick: not trusted from the cache.
      if (info.ctimeMs < trustBefore) seen.set(file, [key, own.sha256, own.bytes, matched]);
      else dirty = true;
      if (!unchanged || cached[3] !== matched) dirty = true;
      tree.files.set(file, { sha256: own.sha256, bytes: own.bytes, mtimeMs: info.mtimeMs });
      tree.checked++;
      tree.bytes += own.bytes;
    };
    // Known from the cache: no read, no queue.
    jobs.push(unchanged && (!decode || cached[3] === want) ? run() : limit(run));
  };

  checkPages(manifest, tree, { regular, viaLink, listed, check });
  // The manifest: read and hashed above.
  tree.files.set(MANIFEST_NAME, { sha256: manifestSha256, bytes: manifestText.length, mtimeMs: statSync(path.join(root, MANIFEST_NAME)).mtimeMs });
  tree.checked++;
  tree.hashed++;
  tree.bytes += manifestText.length;
  for (const file of [...regular, ...viaLink]) {
    if (listed.has(file)) continue;
    // The front's generated configurations ship with the release (prerender front, docs/front.md).
    if (!file.includes('/') && (isSitemapName(file) || FRONT_FILES.includes(file))) {
      listed.add(file);
      check(file, null);
      continue;
    }
    tree.unlisted.push({ file, reason: 'in OUT but not in the manifest' });
  }
  await Promise.all(jobs);
  if (options.cache && (dirty || seen.size !== cache.size)) await writeCache(root, seen);
  for (const list of [tree.missing, tree.changed, tree.unlisted, tree.unsafe]) list.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  tree.durationMs = Date.now() - started;
  return tree;
}

/**
 * Each entry's file, with its siblings, queued with `check`, or said unsafe, missing or listed twice.
 * @param {import('../output/manifest/schema.js').Manifest} manifest @param {SourceTree} tree
 * @param {{ regular: Set<string>, viaLink: Set<string>, listed: Set<string>, check: (file: string, expected: { sha256: string, bytes: number } | null, decode?: 'gzip' | 'br') => void }} found
 */
function checkPages(manifest, tree, { regular, viaLink, listed, check }) {
  /** @type {Map<string, import('../output/manifest/schema.js').ManifestPage>} the first entry of each file */
  const seenFiles = new Map();
  // A page's own file is never another page's sibling (a site with URLs for both app.js and app.js.gz).
  const pageFiles = new Set(manifest.pages.map((page) => page.file));
  for (const page of manifest.pages) {
    const reason = unsafeReason(page.file);
    if (reason) {
      tree.unsafe.push({ file: String(page.file), reason: `manifest entry for ${page.url} ${reason}` });
      continue;
    }
    const first = seenFiles.get(page.file);
    if (first) {
      // Two entries for one file must agree: the file cannot match both, and the one checked would hide the other.
      if (first.sha256 !== page.sha256 || first.bytes !== page.bytes) tree.changed.push({ file: page.file, reason: `listed twice in the manifest with different sha256 or size (${first.url} and ${page.url})` });
      continue;
    }
    seenFiles.set(page.file, page);
    listed.add(page.file);
    if (!regular.has(page.file) && ![...viaLink].some((link) => page.file === link || page.file.startsWith(link + '/'))) {
      // Maybe under a linked directory that escapes: already refused above; else missing.
      const escapes = tree.unsafe.some((problem) => page.file === problem.file || page.file.startsWith(problem.file + '/'));
      if (!escapes) tree.missing.push({ file: page.file, reason: `listed in the manifest (${page.url}) but not in OUT` });
      continue;
    }
    check(page.file, { sha256: page.sha256, bytes: page.bytes });
    for (const [suffix, format] of Object.entries(SIBLINGS)) {
      const sibling = page.file + suffix;
      if (pageFiles.has(sibling)) continue;
      if (regular.has(sibling) || viaLink.has(sibling)) {
        listed.add(sibling);
        check(sibling, { sha256: page.sha256, bytes: page.bytes }, format);
      }
    }
  }
}

/**
 * A link inside OUT is published as its file when that is inside OUT; other links and irregular files are unsafe.
 * @param {SourceTree} tree @param {string} base OUT's real path @param {string[]} links @param {string[]} other @returns {Promise<Set<string>>} links leading inside
 */
async function linksInside(tree, base, links, other) {
  /** @type {Set<string>} */ const viaLink = new Set();
  for (const link of links) {
    const target = await realpath(path.join(tree.out, link)).catch(() => null);
    if (target === null) tree.unsafe.push({ file: link, reason: 'is a symbolic link that leads nowhere' });
    else if (!inside(base, target)) tree.unsafe.push({ file: link, reason: `is a symbolic link to ${target}, outside OUT` });
    else viaLink.add(link);
  }
  for (const file of other) tree.unsafe.push({ file, reason: 'is not a regular file (socket, fifo, device)' });
  return viaLink;
}

/**
 * The hash cache (OUT/.prerender/deploy-hashes.json), keyed by size, mtime, ctime and inode: any write, rename or utimes() moves
 * the ctime, which user space cannot set back, so a file whose four are the same is not read again. Only a speed-up: `verify`
 * never uses it, and one that cannot be read or written is ignored.
 */
export const HASH_CACHE = 'deploy-hashes.json';

/** Coarse kernel timestamps, as git's "racily clean" entries. */
const RACY_MS = 1000;

/** @param {import('node:fs').Stats} info */ const cacheKey = (info) => `${info.size}:${info.mtimeMs}:${info.ctimeMs}:${info.ino}`;

/** @param {string} root OUT @returns {Promise<Map<string, CacheEntry>>} */
async function readCache(root) {
  try {
    const data = JSON.parse(await readFile(path.join(root, STATE_DIR, HASH_CACHE), 'utf8'));
    if (data?.version !== 1 || !data.files || typeof data.files !== 'object') return new Map();
    return new Map(Object.entries(data.files));
  } catch {
    return new Map();
  }
}

/** @param {string} root OUT @param {Map<string, CacheEntry>} entries */
async function writeCache(root, entries) {
  const dir = path.join(root, STATE_DIR);
  // tmp-*: a crawl holding OUT removes one a killed run left.
  const tmp = path.join(dir, `tmp-deploy-hashes-${process.pid}`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(tmp, JSON.stringify({ version: 1, files: Object.fromEntries(entries) }));
    await rename(tmp, path.join(dir, HASH_CACHE));
  } catch {
    // Read-only OUT: the next run hashes again.
  }
}

/** @param {SourceTree} tree */
export const isClean = (tree) => tree.missing.length + tree.changed.length + tree.unlisted.length + tree.unsafe.length === 0;

/** Before anything is sent. @param {SourceTree} tree */
export function assertClean(tree) {
  if (isClean(tree)) return;
  const first = [...tree.unsafe, ...tree.missing, ...tree.changed, ...tree.unlisted][0];
  throw new DeployError(
    `${tree.out} does not match its manifest (${tree.unsafe.length} unsafe, ${tree.missing.length} missing, ${tree.changed.length} changed, ${tree.unlisted.length} unlisted; first: ${first.file} ${first.reason}): nothing was sent. Run "prerender verify ${tree.out}" for the list`,
    { code: tree.unsafe.length > 0 ? 'DEPLOY_UNSAFE_PATH' : 'DEPLOY_SOURCE_MISMATCH' },
  );
}
