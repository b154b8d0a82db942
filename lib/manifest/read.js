// @ts-check
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { MANIFEST_NAME, checkManifest } from './schema.js';

/**
 * Parse a manifest's text: JSON, then the top-level check of schema.js.
 * @param {string} text
 * @returns {import('./schema.js').Manifest}
 */
export function parseManifest(text) {
  return checkManifest(JSON.parse(text));
}

/**
 * Read OUT/prerender-manifest.json.
 * @param {string} out the tree's directory
 */
export async function readManifest(out) {
  return parseManifest(await readFile(path.join(out, MANIFEST_NAME), 'utf8'));
}
