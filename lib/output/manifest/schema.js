// @ts-check
/**
 * The shape of prerender-manifest.json: name, version, types and the check every reader runs.
 * @typedef {{ sku: string, offset: number, length: number }} ManifestSlot
 * @typedef {{ url: string, file: string, status: number, contentType: string, bytes: number, sha256: string,
 *   etag?: string, lastModified?: string, placeholders: ManifestSlot[], stale?: boolean,
 *   rendered?: true, renderMs?: number, partial?: true, aborted?: { methods: number, resources: number, blocked: number } }} ManifestPage
 *   stale: failed this time or not reached, its file the last good copy; partial: saved at --render-timeout
 * @typedef {{ url: string, status?: number, message: string, code?: string, kind?: 'requisite', referrers: string[] }} ManifestError
 * @typedef {{ url: string, code: string, message: string }} ManifestWarning @typedef {{ url: string, location: string, status: number }} ManifestRedirect
 * @typedef {{ version: 1, generatedAt: string, roots: string[], scope: { include?: string[], exclude?: string[] },
 *   placeholderMode: import('../../document/placeholders.js').PlaceholderMode,
 *   sources?: { sitemaps?: string[], urlList?: string, listedUrls?: number } }} ManifestHeader
 * @typedef {ManifestHeader & { pages: ManifestPage[], errors: ManifestError[], warnings: ManifestWarning[], redirects: ManifestRedirect[], interrupted: boolean }} Manifest
 */
import { PrerenderError } from '../../errors.js';
import { PLACEHOLDER_MODES } from '../../document/placeholders.js';

export const MANIFEST_NAME = 'prerender-manifest.json';
export const MANIFEST_VERSION = 1;

/** The manifest is not one this version can read. */
export class ManifestFormatError extends PrerenderError {
  code = 'MANIFEST_FORMAT';
}

/** Each reader checks pages as strictly as it needs. @param {unknown} data @returns {Manifest} */
export function checkManifest(data) {
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new ManifestFormatError('the manifest is not a JSON object');
  const manifest = /** @type {Record<string, unknown>} */ (data);
  if (manifest.version !== MANIFEST_VERSION) {
    throw new ManifestFormatError(`unsupported manifest version ${JSON.stringify(manifest.version)} (this prerender reads version ${MANIFEST_VERSION})`);
  }
  if (!Array.isArray(manifest.pages)) throw new ManifestFormatError('the manifest has no "pages" array');
  const mode = manifest.placeholderMode ?? 'filter';
  if (typeof mode !== 'string' || !PLACEHOLDER_MODES.includes(/** @type {any} */ (mode))) {
    throw new ManifestFormatError(`unknown placeholderMode ${JSON.stringify(mode)}`);
  }
  for (const list of ['errors', 'warnings', 'redirects']) {
    if (manifest[list] !== undefined && !Array.isArray(manifest[list])) throw new ManifestFormatError(`the manifest's "${list}" is not an array`);
  }
  return /** @type {Manifest} */ (/** @type {unknown} */ ({ errors: [], warnings: [], redirects: [], interrupted: false, ...manifest, placeholderMode: mode }));
}
