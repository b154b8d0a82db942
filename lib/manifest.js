// @ts-check
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { rename } from 'node:fs/promises';
import path from 'node:path';

export const MANIFEST_NAME = 'prerender-manifest.json';

/**
 * @typedef {{
 *   url: string, file: string, status: number, contentType: string, bytes: number, sha256: string,
 *   etag?: string, lastModified?: string, placeholders: { sku: string, offset: number, length: number }[],
 * }} ManifestPage
 * @typedef {{ url: string, status?: number, message: string, referrers: string[] }} ManifestError
 * @typedef {{ url: string, message: string }} ManifestWarning
 */

/**
 * Streams `prerender-manifest.json`: the header first, each page as it is
 * written (one per line), errors and warnings at the end; then an atomic
 * rename. Pages are never all held in memory.
 */
export class ManifestWriter {
  /**
   * @param {string} out
   * @param {{ roots: string[], scope: object, placeholderMode: string, generatedAt?: string, sources?: Record<string, unknown> }} header
   */
  constructor(out, header) {
    this.path = path.join(out, MANIFEST_NAME);
    this.tempPath = path.join(out, `.${MANIFEST_NAME}.tmp`);
    this.stream = createWriteStream(this.tempPath);
    this.count = 0;
    const head = {
      version: 1,
      generatedAt: header.generatedAt ?? new Date().toISOString(),
      roots: header.roots,
      scope: header.scope,
      placeholderMode: header.placeholderMode,
      ...(header.sources && Object.keys(header.sources).length > 0 ? { sources: header.sources } : {}),
    };
    this.stream.write(JSON.stringify(head, null, 2).replace(/\n}$/, ',\n  "pages": ['));
  }

  /** @param {ManifestPage} page */
  async addPage(page) {
    const line = (this.count++ === 0 ? '\n    ' : ',\n    ') + JSON.stringify(page);
    if (!this.stream.write(line)) await once(this.stream, 'drain');
  }

  /**
   * @param {{ errors: ManifestError[], warnings: ManifestWarning[], redirects: { url: string, location: string, status: number }[], interrupted: boolean }} tail
   */
  async finish(tail) {
    const list = (/** @type {unknown[]} */ items) => items.length === 0 ? '[]' : '[\n    ' + items.map((item) => JSON.stringify(item)).join(',\n    ') + '\n  ]';
    this.stream.write(
      (this.count > 0 ? '\n  ],\n' : '],\n')
      + `  "errors": ${list(tail.errors)},\n`
      + `  "warnings": ${list(tail.warnings)},\n`
      + `  "redirects": ${list(tail.redirects)},\n`
      + `  "interrupted": ${tail.interrupted}\n}\n`,
    );
    this.stream.end();
    await once(this.stream, 'finish');
    await rename(this.tempPath, this.path);
  }

  async abort() {
    this.stream.destroy();
  }
}
