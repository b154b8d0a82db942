// @ts-check
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { encodeFilePath } from './url.js';

/**
 * Streams sitemap.xml for the static tree. Past 50,000 URLs (the protocol's
 * limit) it writes sitemap-1.xml, sitemap-2.xml... and makes sitemap.xml
 * their index. Every file is written to a temp name and renamed.
 */

export const SITEMAP_LIMIT = 50_000;

/** @param {string} name lower-case top-level file name */
export const isSitemapName = (name) => name === 'sitemap.xml' || /^sitemap-\d+\.xml$/.test(name);

/** @param {string} text */
const xmlEscape = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

export class SitemapWriter {
  /**
   * @param {string} out
   * @param {URL} siteUrl base URL of the tree, ending in "/"
   * @param {{ limit?: number }} [options]
   */
  constructor(out, siteUrl, options = {}) {
    this.out = out;
    this.siteUrl = siteUrl;
    this.limit = options.limit ?? SITEMAP_LIMIT;
    this.parts = 0;
    this.inPart = 0;
    /** @type {import('node:fs').WriteStream | null} */
    this.stream = null;
    /** @type {Promise<void>[]} */
    this.closing = [];
  }

  /** @param {number} n */
  #partName(n) {
    return `sitemap-${n}.xml`;
  }

  /** @param {string} file page file, relative to the tree */
  async add(file) {
    if (!this.stream || this.inPart >= this.limit) {
      this.#closePart();
      this.parts++;
      this.inPart = 0;
      this.stream = createWriteStream(path.join(this.out, `.${this.#partName(this.parts)}.tmp`));
      this.stream.write('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n');
    }
    this.inPart++;
    const loc = new URL(encodeFilePath(file), this.siteUrl).href;
    if (!this.stream.write(`  <url><loc>${xmlEscape(loc)}</loc></url>\n`)) await once(this.stream, 'drain');
  }

  #closePart() {
    const stream = this.stream;
    if (!stream) return;
    stream.end('</urlset>\n');
    this.closing.push(once(stream, 'finish').then(() => undefined));
    this.stream = null;
  }

  /** @returns {Promise<string[]>} the files written, relative to the tree */
  async finish() {
    if (this.parts === 0) {
      this.parts = 1;
      this.stream = createWriteStream(path.join(this.out, `.${this.#partName(1)}.tmp`));
      this.stream.write('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n');
    }
    this.#closePart();
    await Promise.all(this.closing);
    if (this.parts === 1) {
      await rename(path.join(this.out, `.${this.#partName(1)}.tmp`), path.join(this.out, 'sitemap.xml'));
      return ['sitemap.xml'];
    }
    const written = [];
    let index = '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n';
    for (let n = 1; n <= this.parts; n++) {
      const name = this.#partName(n);
      await rename(path.join(this.out, `.${name}.tmp`), path.join(this.out, name));
      written.push(name);
      index += `  <sitemap><loc>${xmlEscape(new URL(name, this.siteUrl).href)}</loc></sitemap>\n`;
    }
    index += '</sitemapindex>\n';
    await writeFile(path.join(this.out, '.sitemap.xml.tmp'), index);
    await rename(path.join(this.out, '.sitemap.xml.tmp'), path.join(this.out, 'sitemap.xml'));
    return ['sitemap.xml', ...written];
  }
}
