// @ts-check
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { MANIFEST_NAME, ManifestFormatError, checkManifest } from './schema.js';

/** Any unreadable manifest is a ManifestFormatError, never a bare SyntaxError. @param {string} text @returns {import('./schema.js').Manifest} */
export function parseManifest(text) {
  // A Buffer is decoded as JSON.parse would.
  const decoded = /** @type {unknown} */ (text) instanceof Uint8Array ? Buffer.from(/** @type {Uint8Array} */ (/** @type {unknown} */ (text))).toString('utf8') : text;
  if (typeof decoded !== 'string') throw new ManifestFormatError(`the manifest must be given as text, got ${decoded === null ? 'null' : typeof decoded}`);
  let data;
  try {
    data = JSON.parse(decoded);
  } catch (error) {
    throw new ManifestFormatError(`not valid JSON: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
  return checkManifest(data);
}

/** @param {string} out the tree's directory */
export async function readManifest(out) {
  const file = path.join(out, MANIFEST_NAME);
  const text = await readFile(file, 'utf8'); // a missing manifest is the file system's ENOENT
  try {
    return parseManifest(text);
  } catch (error) {
    // Names the manifest, for a caller that reads several trees.
    throw new ManifestFormatError(`${file}: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
}
