// @ts-check
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNameTable } from '../../lib/naming/assign.js';
import { encodeNameTable, openNameTable } from '../../lib/naming/name-table.js';
import { createPlaceReader, scanPage, storeBlob, writeNew } from '../../lib/engine/page-work.js';
import { readdir } from 'node:fs/promises';
import { nameTableBytes, nameTableFrom } from '../../lib/distributed/finish.js';
import { writeWindow } from '../../lib/engine/write-phase.js';

/**
 * What the processes of a shared crawl's finishing phase read besides the
 * blobs: the name table, written once as a file, answers as the table it was
 * made from; a blob of its own is read whole; a temp file left by a process
 * that died is replaced, not refused.
 */

const O = 'http://shop.test';
let dir = '';
afterEach(async () => { if (dir) await rm(dir, { recursive: true, force: true }); });

describe('the finishing phase of a shared crawl', () => {
  it('the name table survives the trip through a file', () => {
    const pages = Array.from({ length: 500 }, (_, i) => ({ key: `${O}/p${i}`, file: `p${i}.html` }));
    const redirects = [{ key: `${O}/old`, location: `${O}/p7` }];
    const table = openNameTable(nameTableFrom(nameTableBytes(encodeNameTable(pages, redirects, 10))));
    const expected = createNameTable(new Map(pages.map((/** @type {any} */ page) => [page.key, page.file])), new Set(), /** @type {any} */ (redirects), 10);
    for (const key of [`${O}/p0`, `${O}/p499`, `${O}/old`, `${O}/missing`]) expect(table.fileOf(key)).toBe(expected.fileOf(key));
    expect(table.fileOf(`${O}/old`)).toBe('p7.html');
    const bytes = nameTableBytes(encodeNameTable(pages, redirects, 10));
    expect(() => nameTableFrom(bytes.subarray(0, bytes.length - 1))).toThrow(/cut short/);
  });

  it('a scan stores body and scan in a blob directory of one file per sha256 (made as needed), leaving one already there', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-finish-'));
    const body = Buffer.from('<html><body><a href="/next">next</a></body></html>');
    const scanned = scanPage({ body, type: 'html', contentType: 'text/html', url: 'http://shop.test/a', stageDir: dir });
    expect(scanned.stored).toBe(true);
    expect(await readFile(path.join(dir, scanned.bodyId.slice(0, 2), scanned.bodyId))).toEqual(body);
    expect(await readFile(path.join(dir, scanned.scanId.slice(0, 2), scanned.scanId))).toEqual(scanned.scanBytes);
    const id = scanned.bodyId;
    storeBlob(dir, id, Buffer.from('other bytes')); // already there: left as it is
    expect(await readFile(path.join(dir, id.slice(0, 2), id))).toEqual(body);
    expect((await readdir(path.join(dir, id.slice(0, 2)))).filter((name) => name.includes('.tmp-'))).toEqual([]);
    // A directory that cannot be written: not stored, the caller stores them and reports the error.
    const blocked = path.join(dir, 'file-not-dir');
    await writeFile(blocked, '');
    expect(scanPage({ body, type: 'html', contentType: 'text/html', url: 'http://shop.test/a', stageDir: blocked }).stored).toBe(false);
  });

  it('reads a blob of its own whole, and replaces a temp file a dead process left', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-finish-'));
    const blob = path.join(dir, 'blob');
    await writeFile(blob, 'the staged bytes');
    expect(createPlaceReader()({ path: blob, at: 0, length: -1 }).toString()).toBe('the staged bytes');
    const temp = path.join(dir, '1.tmp');
    await writeFile(temp, 'half a page');
    expect(() => writeNew(temp, Buffer.from('whole page'))).toThrow(/EEXIST/);
    writeNew(temp, Buffer.from('whole page'), true);
    expect(await readFile(temp, 'utf8')).toBe('whole page');
  });
});

describe('the write pass window', () => {
  it('is narrow whenever each page in flight may hold its bytes in the main thread, wide otherwise', () => {
    const wide = writeWindow({ precompress: false, threads: 2, locate: true });
    const narrow = writeWindow({ precompress: false, threads: 0, locate: true });
    expect(wide).toBeGreaterThan(narrow);
    // --precompress wants the output; a blob store the threads cannot read: the same narrow window.
    expect(writeWindow({ precompress: true, threads: 2, locate: true })).toBe(narrow);
    expect(writeWindow({ precompress: false, threads: 2, locate: false })).toBe(narrow);
    // A finishing pool's own window wins.
    expect(writeWindow({ precompress: true, threads: 0, locate: false, pool: 7 })).toBe(7);
  });
});
