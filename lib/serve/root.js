// @ts-check
/** `/` on a tree whose crawl root was not `/`: where to send the visitor, and a log line saying what `/` does. */
import fs from 'node:fs';
import path from 'node:path';
import { encodeFilePath } from '../url.js';

/**
 * @param {string} realRoot @param {import('./manifest.js').Manifest | null} manifest @param {{ warn(message: string): void, info?(message: string): void }} logger
 * @returns {string | null} the Location for `/`; null: index.html, or nothing to offer
 */
export function rootRedirect(realRoot, manifest, logger) {
  try {
    if (fs.statSync(path.join(realRoot, 'index.html')).isFile()) return null;
  } catch {
    // no index.html: see below
  }
  if (manifest?.rootFile) {
    // Spelled as the tree's own links spell it (gitweb.cgi@p=repo.git;a=summary.html).
    const location = `/${encodeFilePath(manifest.rootFile.key)}`;
    logger.info?.(`the tree has no index.html: / redirects to ${location}, the page of the crawl root ${manifest.rootFile.url}`);
    return location;
  }
  if (manifest && manifest.roots.length > 0) {
    logger.warn(`the tree has no index.html and the page of the crawl root ${manifest.roots[0]} was not written: / answers 404`);
  }
  return null;
}
