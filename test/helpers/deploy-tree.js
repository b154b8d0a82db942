// @ts-check
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { formatManifest } from '../../lib/output/manifest/index.js';

/**
 * A prerendered tree for publish/deploy tests, written the way crawl writes
 * one: pages, their manifest entries (sha256 of the written file) and, with
 * `gzip`, FILE.gz siblings. Page i links to page i+1 (the last to the first),
 * and every page carries its generation, so a test can tell releases apart.
 * @param {string} out
 * @param {{ pages?: number, generation?: number | ((index: number) => number), gzip?: boolean, size?: number, state?: boolean }} [options]
 */
export async function writeTree(out, options = {}) {
  const count = options.pages ?? 5;
  const generationOf = typeof options.generation === 'function' ? options.generation : () => /** @type {number} */ (options.generation ?? 1);
  await mkdir(path.join(out, 'p'), { recursive: true });
  const pages = [];
  for (let i = 0; i < count; i++) {
    const file = `p/page${i}.html`;
    const next = `page${(i + 1) % count}.html`;
    const filler = 'x'.repeat(Math.max(0, (options.size ?? 200) - 120));
    const body = Buffer.from(`<!doctype html><title>${i}</title><meta name="generation" content="${generationOf(i)}"><a href="${next}">next</a><!--${filler}-->\n`);
    await writeFile(path.join(out, file), body);
    if (options.gzip) await writeFile(path.join(out, file + '.gz'), zlib.gzipSync(body));
    pages.push({
      url: `http://shop.test/p/page${i}.html`, file, status: 200, contentType: 'text/html', bytes: body.length,
      sha256: createHash('sha256').update(body).digest('hex'), placeholders: [],
    });
  }
  if (options.state !== false) {
    await mkdir(path.join(out, '.prerender'), { recursive: true });
    await writeFile(path.join(out, '.prerender', 'state.ndjson'), 'state of the crawl, never published\n');
  }
  await writeFile(path.join(out, 'prerender-manifest.json'), formatManifest({ roots: ['http://shop.test/p/'], scope: {}, placeholderMode: 'filter', pages }));
  return pages;
}

/** @param {string} html */
export const generationIn = (html) => Number(/name="generation" content="(\d+)"/.exec(html)?.[1]);
