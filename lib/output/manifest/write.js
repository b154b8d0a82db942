// @ts-check
import { PassThrough } from 'node:stream';
import { once } from 'node:events';
import { MANIFEST_NAME, MANIFEST_VERSION } from './schema.js';

/**
 * prerender-manifest.json: header, a page per line, then the tail; streamed, so pages are never all in memory.
 * @typedef {import('./schema.js').ManifestHeader} ManifestHeader @typedef {import('./schema.js').ManifestPage} ManifestPage
 * @typedef {{ errors: import('./schema.js').ManifestError[], warnings: import('./schema.js').ManifestWarning[],
 *   redirects: import('./schema.js').ManifestRedirect[], interrupted: boolean }} ManifestTail
 */

/** @param {Omit<ManifestHeader, 'version'> & { version?: number }} header */
function headText(header) {
  const head = {
    version: MANIFEST_VERSION,
    generatedAt: header.generatedAt,
    roots: header.roots,
    scope: uniqueScope(header.scope),
    placeholderMode: header.placeholderMode,
    ...(header.sources && Object.keys(header.sources).length > 0 ? { sources: header.sources } : {}),
  };
  return JSON.stringify(head, null, 2).replace(/\n}$/, ',\n  "pages": [');
}

/** Roots `/s/` and `/s/a.asp` bring the same directory. @param {ManifestHeader['scope']} scope @returns {ManifestHeader['scope']} */
function uniqueScope(scope) {
  if (!scope) return scope;
  const unique = (/** @type {string[] | undefined} */ list) => (list ? [...new Set(list)] : list);
  return { ...scope, include: unique(scope.include), exclude: unique(scope.exclude) };
}

/** @param {ManifestPage} page @param {number} index */
const pageText = (page, index) => (index === 0 ? '\n    ' : ',\n    ') + JSON.stringify(page);

/** @param {number} pageCount @param {ManifestTail} tail */
function tailText(pageCount, tail) {
  tail = canonicalTail(tail);
  const list = (/** @type {unknown[]} */ items) => (items.length === 0 ? '[]' : '[\n    ' + items.map((item) => JSON.stringify(item)).join(',\n    ') + '\n  ]');
  return (pageCount > 0 ? '\n  ],\n' : '],\n')
    + `  "errors": ${list(tail.errors)},\n`
    + `  "warnings": ${list(tail.warnings)},\n`
    + `  "redirects": ${list(tail.redirects)},\n`
    + `  "interrupted": ${tail.interrupted}\n}\n`;
}

/** The tail in an order independent of fetch timing. @param {ManifestTail} tail @returns {ManifestTail} */
function canonicalTail(tail) {
  const text = (/** @type {string | undefined} */ a, /** @type {string | undefined} */ b) => ((a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0);
  return {
    ...tail,
    errors: tail.errors.map((error) => (error.referrers && error.referrers.length > 1 ? { ...error, referrers: [...error.referrers].sort() } : error)),
    warnings: [...tail.warnings].sort((a, b) => text(a.url, b.url) || text(a.code, b.code) || text(a.message, b.message)),
  };
}

/** @param {Omit<ManifestHeader, 'generatedAt' | 'version'> & { generatedAt?: string, pages: ManifestPage[] } & Partial<ManifestTail>} manifest */
export function formatManifest(manifest) {
  let text = headText({ ...manifest, generatedAt: manifest.generatedAt ?? new Date().toISOString() });
  manifest.pages.forEach((page, index) => { text += pageText(page, index); });
  return text + tailText(manifest.pages.length, {
    errors: manifest.errors ?? [], warnings: manifest.warnings ?? [], redirects: manifest.redirects ?? [], interrupted: manifest.interrupted ?? false,
  });
}

/**
 * Pages as added, in URL order; the tail at `finish()`.
 * @param {import('../target.js').OutputTarget} target @param {Omit<ManifestHeader, 'generatedAt' | 'version'> & { generatedAt?: string }} header
 */
export function createManifestWriter(target, header) {
  const stream = new PassThrough();
  // Failures reach the caller through `written`; abort()'s error has no other listener.
  stream.on('error', () => {});
  const written = target.write(MANIFEST_NAME, stream);
  written.catch(() => {}); // awaited in finish(); an early failure must not go unhandled
  let count = 0;
  // Lines go out in chunks of about 64 KiB: one write per chunk, not per page.
  let pendingText = headText({ ...header, generatedAt: header.generatedAt ?? new Date().toISOString() });
  return {
    /** @param {ManifestPage} page */
    async addPage(page) {
      pendingText += pageText(page, count++);
      if (pendingText.length < 65_536) return;
      const chunk = pendingText;
      pendingText = '';
      if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), written]);
    },
    /** @param {ManifestTail} tail */
    async finish(tail) {
      stream.end(pendingText + tailText(count, tail));
      pendingText = '';
      await written;
    },
    /** @param {Error} [reason] */
    abort(reason = new Error('manifest aborted')) {
      stream.destroy(reason);
      return written.then(() => {}, () => {});
    },
  };
}

export { MANIFEST_NAME };
