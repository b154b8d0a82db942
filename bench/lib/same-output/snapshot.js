// @ts-check
/**
 * What bench/same-output.js compares of one OUT: the tree (every file but
 * the manifest and .prerender/), the manifest, .prerender/state.ndjson, the
 * names of the other .prerender/ files and the crawl's --json summary. Each
 * is text or a file list after `normalise`, which blanks only the fields
 * listed in NORMALISED; everything else is kept byte for byte.
 */
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';

/** What normalise() blanks, printed by the script: each differs run to run with the same code. */
export const NORMALISED = [
  'prerender-manifest.json "generatedAt" (the time the manifest was written)',
  'prerender-manifest.json pages[].renderMs (the time Chromium took)',
  'state.ndjson header "finishedAt" (the time the crawl ended)',
  'state.ndjson pages "renderMs" (the time Chromium took)',
  'state.ndjson pages "fetched" (the second the run that fetched the page started)',
  '--json "durationMs" (wall time)',
  '--json "threads" (which thread did the per-page work, and how much was written early: timing)',
  'the OUT path, anywhere (each side crawls into its own directory) -> <OUT>',
];

/** Said with NORMALISED: why the version is not among them. */
export const NOT_NORMALISED = 'the version string appears in no output compared: not normalised';

/** @param {string} text */
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Blanks the fields of NORMALISED in `text`, in place: the bytes around them are untouched.
 * @param {string} text
 * @param {string} out
 */
export function normalise(text, out) {
  const outJson = JSON.stringify(out).slice(1, -1);
  return text
    .replace(/("generatedAt": ?)"[^"]*"/g, '$1"<time>"')
    .replace(/("finishedAt": ?)"[^"]*"/g, '$1"<time>"')
    .replace(/("renderMs": ?)\d+(\.\d+)?/g, '$1"<ms>"')
    .replace(/("fetched": ?)\d+/g, '$1"<time>"')
    .replace(/("durationMs": ?)\d+(\.\d+)?/g, '$1"<ms>"')
    .replace(/("threads": ?)\{[^{}]*\}/g, '$1"<threads>"')
    .replace(new RegExp(escapeRegExp(outJson), 'g'), '<OUT>')
    .replace(new RegExp(escapeRegExp(out), 'g'), '<OUT>');
}

/**
 * Every file under `root`, as paths relative to it with "/", sorted.
 * @param {string} root
 * @param {string} [sub]
 * @returns {Promise<string[]>}
 */
async function listFiles(root, sub = '') {
  /** @type {string[]} */
  const files = [];
  const entries = await readdir(path.join(root, sub), { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const rel = sub ? `${sub}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...await listFiles(root, rel));
    else files.push(rel);
  }
  return files.sort();
}

/** @param {string} file */
const readIfAny = (file) => readFile(file, 'utf8').catch(() => null);

/**
 * @typedef {{
 *   tree: string[], manifest: string | null, state: string | null, private: string[], json: string | null,
 * }} Snapshot
 *   tree: "sha256  path" per file outside .prerender/ but the manifest, sorted by path;
 *   private: the names of the files under .prerender/ but state.ndjson (their bytes depend on fetch order);
 *   manifest, state, json: normalised text, null when missing
 */

/**
 * @param {string} out
 * @param {string | null} [json] the crawl's --json stdout
 * @returns {Promise<Snapshot>}
 */
export async function snapshot(out, json = null) {
  const files = await listFiles(out);
  /** @type {string[]} */
  const tree = [];
  /** @type {string[]} */
  const hidden = [];
  for (const file of files) {
    if (file === 'prerender-manifest.json' || file === '.prerender/state.ndjson') continue;
    if (file.startsWith('.prerender/')) hidden.push(file);
    else tree.push(`${createHash('sha256').update(await readFile(path.join(out, file))).digest('hex')}  ${file}`);
  }
  const text = async (/** @type {string} */ file) => {
    const raw = await readIfAny(path.join(out, file));
    return raw === null ? null : normalise(raw, out);
  };
  return {
    tree,
    manifest: await text('prerender-manifest.json'),
    state: await text('.prerender/state.ndjson'),
    private: hidden,
    json: json === null ? null : normalise(json.trim(), out),
  };
}

/** The items of a snapshot the table shows, in order. */
export const ITEMS = /** @type {const} */ (['tree', 'manifest', 'state', 'private', 'json']);

/**
 * The sha256 of an item: of its lines for a list, of its text otherwise; "-" when missing.
 * @param {string[] | string | null} value
 */
export function digestOf(value) {
  if (value === null) return '-';
  const text = Array.isArray(value) ? value.map((line) => `${line}\n`).join('') : value;
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Where two values of an item first differ: the file (for a list) or the
 * line (for text), with both sides' versions shortened.
 * @param {string[] | string | null} a
 * @param {string[] | string | null} b
 * @returns {string | null} null when the same
 */
export function firstDifference(a, b) {
  if (digestOf(a) === digestOf(b)) return null;
  if (a === null || b === null) return `present on side ${a === null ? 'B' : 'A'} only`;
  if (Array.isArray(a) && Array.isArray(b)) return firstFileDifference(a, b);
  const linesA = /** @type {string} */ (a).split('\n');
  const linesB = /** @type {string} */ (b).split('\n');
  for (let i = 0; i < Math.max(linesA.length, linesB.length); i++) {
    if (linesA[i] === linesB[i]) continue;
    return `line ${i + 1}${fieldOf(linesA[i], linesB[i])}:\n    A: ${clip(linesA[i], linesB[i])}\n    B: ${clip(linesB[i], linesA[i])}`;
  }
  return 'same lines, different bytes';
}

/**
 * @param {string[]} a "sha256  path" lines, or plain names
 * @param {string[]} b
 */
function firstFileDifference(a, b) {
  const byName = (/** @type {string[]} */ list) => new Map(list.map((line) => {
    const cut = line.indexOf('  ');
    return cut === 64 ? [line.slice(66), line.slice(0, 64)] : [line, ''];
  }));
  const mapA = byName(a);
  const mapB = byName(b);
  const names = [...new Set([...mapA.keys(), ...mapB.keys()])].sort();
  for (const name of names) {
    if (!mapB.has(name)) return `${name}: on side A only`;
    if (!mapA.has(name)) return `${name}: on side B only`;
    if (mapA.get(name) !== mapB.get(name)) return `${name}: different bytes`;
  }
  return 'same files, different order';
}

/**
 * The JSON field where two lines first differ, when both are JSON objects.
 * @param {string | undefined} a
 * @param {string | undefined} b
 */
function fieldOf(a, b) {
  try {
    const objectA = JSON.parse((a ?? '').replace(/,$/, ''));
    const objectB = JSON.parse((b ?? '').replace(/,$/, ''));
    const keys = [...new Set([...Object.keys(objectA), ...Object.keys(objectB)])];
    const key = keys.find((name) => JSON.stringify(objectA[name]) !== JSON.stringify(objectB[name]));
    return key === undefined ? '' : `, field "${key}"`;
  } catch {
    return '';
  }
}

/**
 * A line shortened around where it starts to differ from `other`.
 * @param {string | undefined} line
 * @param {string | undefined} other
 */
function clip(line, other) {
  if (line === undefined) return '(no such line)';
  let at = 0;
  while (at < line.length && line[at] === other?.[at]) at++;
  const start = Math.max(0, at - 60);
  return `${start > 0 ? '…' : ''}${line.slice(start, start + 200)}${start + 200 < line.length ? '…' : ''}`;
}
