// @ts-check
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { crawl } from '../../lib/index.js';
import { startHostile } from '../../fixtures/hostile.js';
import { readManifest, tempDirs } from '../crawl-helpers.js';

/**
 * Hostile origins: what the origin does, and what the user gets (the page's
 * state in the manifest, what is in OUT, what is not).
 */

/** @type {Awaited<ReturnType<typeof startHostile>>} */
let origin;
const dirs = tempDirs();
beforeAll(async () => { origin = await startHostile(); });
afterAll(async () => {
  await origin.close();
  await dirs.cleanup();
});
beforeEach(() => origin.reset());

describe('bodies compressed although identity was asked for', () => {
  it('gzip, deflate (zlib and raw), br and two codings are decoded: written as text, their links followed', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [origin.url('/gzip/index.html')], out, retries: 0, maxPageBytes: 1024 * 1024 });
    const manifest = await readManifest(out);
    for (const name of ['gzip', 'deflate', 'deflate-raw', 'br', 'multi']) {
      const page = manifest.pages.find((p) => p.url === origin.url(`/gzip/${name}.html`));
      expect(page, name).toBeDefined();
      const text = await readFile(path.join(out, /** @type {{ file: string }} */ (page).file), 'utf8');
      expect(text).toContain(`<p>${name}</p>`);
      expect(origin.count(`/gzip/found-${name}.html`), name).toBe(1);
    }
    expect(result.failed).toBe(3);
  });

  it('a compression bomb is refused at --max-page-bytes; corrupt and unknown codings are clear failures; none is written', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl({ roots: [origin.url('/gzip/index.html')], out, retries: 0, maxPageBytes: 1024 * 1024 });
    const manifest = await readManifest(out);
    const errors = Object.fromEntries(manifest.errors.map((error) => [error.url.replace(origin.origin, ''), error]));
    expect(errors['/gzip/bomb.html']).toMatchObject({ code: 'PAGE_TOO_LARGE' });
    expect(errors['/gzip/bomb.html'].message).toMatch(/gzip-decoded body is over --max-page-bytes 1048576/);
    expect(errors['/gzip/corrupt.html']).toMatchObject({ code: 'CONTENT_ENCODING' });
    expect(errors['/gzip/zstd.html']).toMatchObject({ code: 'CONTENT_ENCODING' });
    expect(errors['/gzip/zstd.html'].message).toMatch(/"zstd"/);
    for (const name of ['bomb', 'corrupt', 'zstd']) expect(manifest.pages.some((p) => p.url.endsWith(`/${name}.html`))).toBe(false);
  });
});
