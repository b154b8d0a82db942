// @ts-check
import { encodeFilePath } from '../url.js';

/** Past the protocol's 50,000 URLs, sitemap-N.xml parts and an index; one part at most in memory. */

export const SITEMAP_LIMIT = 50_000;

/** @param {string} name lower-case top-level file name */
export const isSitemapName = (name) => name === 'sitemap.xml' || /^sitemap-\d+\.xml$/.test(name);

/** @param {string} text */
const xmlEscape = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

const URLSET_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n';
const URLSET_TAIL = '</urlset>\n';

export class SitemapWriter {
  /** @param {import('./target.js').OutputTarget} target @param {URL} siteUrl the tree's base, ending in "/" @param {{ limit?: number }} [options] */
  constructor(target, siteUrl, options = {}) {
    this.target = target;
    this.siteUrl = siteUrl;
    this.limit = options.limit ?? SITEMAP_LIMIT;
    this.parts = 0;
    /** @type {string[]} <url> lines of the part being filled */
    this.lines = [];
  }

  /** @param {number} n */
  #partName(n) {
    return `sitemap-${n}.xml`;
  }

  /** @param {string} file page file, relative to the tree */
  async add(file) {
    if (this.lines.length >= this.limit) {
      await this.target.write(this.#partName(++this.parts), URLSET_HEAD + this.lines.join('') + URLSET_TAIL);
      this.lines = [];
    }
    const loc = new URL(encodeFilePath(file), this.siteUrl).href;
    this.lines.push(`  <url><loc>${xmlEscape(loc)}</loc></url>\n`);
  }

  /** @returns {Promise<string[]>} the files written, relative to the tree */
  async finish() {
    const text = URLSET_HEAD + this.lines.join('') + URLSET_TAIL;
    this.lines = [];
    if (this.parts === 0) {
      await this.target.write('sitemap.xml', text);
      return ['sitemap.xml'];
    }
    await this.target.write(this.#partName(++this.parts), text);
    const written = [];
    let index = '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n';
    for (let n = 1; n <= this.parts; n++) {
      const name = this.#partName(n);
      written.push(name);
      index += `  <sitemap><loc>${xmlEscape(new URL(name, this.siteUrl).href)}</loc></sitemap>\n`;
    }
    index += '</sitemapindex>\n';
    await this.target.write('sitemap.xml', index);
    return ['sitemap.xml', ...written];
  }
}
