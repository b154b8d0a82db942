// @ts-check
import http from 'node:http';
import { access, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readManifest as readManifestOf } from '../lib/output/manifest/read.js';

/**
 * Helpers shared by the tests that crawl: temp directories, manifest reading,
 * listing the written tree, attribute extraction from written pages.
 */

/** Temp directories made by one test file, removed with `cleanup()`. */
export function tempDirs() {
  /** @type {string[]} */
  const made = [];
  return {
    /** @param {string} [prefix] */
    async make(prefix = 'prerender-test-') {
      const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
      made.push(dir);
      return dir;
    },
    async cleanup() {
      await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}

/**
 * @typedef {import('../lib/output/manifest/schema.js').ManifestPage} Page
 * @typedef {import('../lib/output/manifest/schema.js').Manifest} Manifest
 */

/**
 * The manifest of a tree, read and checked by the manifest module.
 * @param {string} out
 * @returns {Promise<Manifest>}
 */
export function readManifest(out) {
  return readManifestOf(out);
}

/**
 * The manifest page of a URL, or throws (so a missing page fails the test with a clear message).
 * @param {Manifest} manifest
 * @param {string} url
 */
export function pageOf(manifest, url) {
  const page = manifest.pages.find((p) => p.url === url);
  if (!page) throw new Error(`no page for ${url} in the manifest; pages: ${manifest.pages.map((p) => p.url).join(', ')}`);
  return page;
}

/**
 * File of a URL, per the manifest.
 * @param {Manifest} manifest
 * @param {string} url
 */
export function fileOf(manifest, url) {
  return pageOf(manifest, url).file;
}

/**
 * Every file under dir, relative, forward slashes; not prerender's own
 * directory (.prerender/: the state a crawl keeps for the next one).
 * @param {string} dir
 * @returns {Promise<string[]>}
 */
export async function listFiles(dir) {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath ?? entry.path, entry.name)).split(path.sep).join('/'))
    .filter((file) => !file.startsWith('.prerender/'))
    .sort();
}

/**
 * What a run left in OUT/.prerender/ besides the state for the next run:
 * temp files, staging, locks, probes. A run that ended (or the run after a
 * killed one) leaves none.
 * @param {string} out
 */
export async function leftovers(out) {
  const entries = await readdir(path.join(out, '.prerender')).catch(() => /** @type {string[]} */ ([]));
  return entries.filter((entry) => !['state.ndjson', 'blobs.log', 'blobs.idx', 'follow.bin'].includes(entry));
}

/**
 * Every file under dir, as listFiles, or [] when dir does not exist.
 * @param {string} dir
 * @returns {Promise<string[]>}
 */
export async function listFilesIfAny(dir) {
  try {
    return await listFiles(dir);
  } catch (error) {
    if (error.code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * Whether a file (or directory) exists.
 * @param {string} file
 * @returns {Promise<boolean>}
 */
export function exists(file) {
  return access(file).then(() => true, () => false);
}

/**
 * The raw (undecoded) value of attribute `name` on the element with id="id".
 * @param {string} html
 * @param {string} id
 * @param {string} name
 * @returns {string | undefined}
 */
export function attr(html, id, name) {
  const tag = new RegExp(`<[a-z]+\\b[^>]*\\bid="${id}"[^>]*>`, 'i').exec(html)?.[0];
  if (!tag) throw new Error(`no element with id="${id}"`);
  const match = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  return match ? (match[1] ?? match[2] ?? match[3]) : undefined;
}

/**
 * Replace the value of every URL-bearing attribute with a marker, so two
 * documents can be compared byte for byte apart from their link values.
 * @param {string} text latin1 or utf-8 text
 */
export function blankUrlValues(text) {
  return text.replace(/(\s(?:href|src|action|srcset|content|poster|data)\s*=\s*)(?:"[^"]*"|'[^']*'|[^\s>]+)/gi, '$1"#"');
}

/**
 * Every file of a tree (not .prerender/) with its bytes, base64; the manifest
 * as text with its date blanked: two crawls of the same site compare equal.
 * @param {string} out
 * @returns {Promise<Record<string, string>>}
 */
export async function snapshotTree(out) {
  /** @type {Record<string, string>} */
  const files = {};
  for (const file of await listFiles(out)) {
    const bytes = await readFile(path.join(out, file));
    files[file] = file === 'prerender-manifest.json' ? bytes.toString().replace(/"generatedAt": "[^"]*"/, '"generatedAt": ""') : bytes.toString('base64');
  }
  return files;
}

/**
 * A crawl of the fixture site's edge cases (fixtures/site.js): name headers,
 * a collision, unsafe names, redirects, <base>, windows-1252, price slots,
 * CSS and other requisites, a sitemap.
 * @param {{ url: (path: string) => string }} site
 */
export function edgeCaseOptions(site) {
  return {
    roots: ['/links/index.asp', '/base/index.asp', '/names/index.asp', '/redir/index.asp', '/enc/index.asp', '/prices/index.asp', '/assets/index.asp'].map((p) => site.url(p)),
    include: ['/links/', '/base/', '/names/', '/redir/', '/enc/', '/prices/', '/assets/', '/infodir/'],
    assets: true, siteUrl: 'https://static.example/', writeSitemap: true,
  };
}

/**
 * A site of the test's own on 127.0.0.1, port 0.
 * @param {import('node:http').RequestListener} handler
 * @returns {Promise<{ base: string, close: () => Promise<unknown> }>}
 */
export async function serveSite(handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  return {
    base: `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
