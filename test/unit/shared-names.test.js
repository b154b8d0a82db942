// @ts-check
import { describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { createNameTable } from '../../lib/naming/assign.js';
import { encodeNameTable, openNameTable } from '../../lib/naming/name-table.js';

/**
 * The name table in shared memory (for the worker threads) answers as the
 * Map-based table of phase two does: files, redirects followed, loops and
 * chains over the limit, unknown URLs, non-ASCII names.
 */

const O = 'http://shop.test';

describe('shared name table', () => {
  const pages = [
    ...Array.from({ length: 3000 }, (_, i) => ({ key: `${O}/st/product.asp?SKUSetID=${i}`, file: `st/product${i}.htm` })),
    { key: `${O}/`, file: 'index.html' },
    { key: `${O}/caf%C3%A9`, file: 'café/index.html' },
    { key: `${O}/both`, file: 'both.html' },
  ];
  const redirects = [
    { key: `${O}/old`, location: `${O}/st/product.asp?SKUSetID=7` },
    { key: `${O}/older`, location: `${O}/old` },
    { key: `${O}/loop-a`, location: `${O}/loop-b` },
    { key: `${O}/loop-b`, location: `${O}/loop-a` },
    { key: `${O}/nowhere`, location: `${O}/gone` },
    { key: `${O}/both`, location: `${O}/` },
    ...Array.from({ length: 12 }, (_, i) => ({ key: `${O}/hop${i}`, location: i === 11 ? `${O}/` : `${O}/hop${i + 1}` })),
  ];
  const asked = [
    ...pages.map((page) => page.key), ...redirects.map((redirect) => redirect.key),
    `${O}/missing`, `${O}/st/product.asp?SKUSetID=3000`, '', `${O}/hop11`, `${O}/hop1`,
  ];

  it('answers as the Map-based table does', () => {
    for (const maxHops of [0, 1, 10]) {
      const reference = createNameTable(new Map(pages.map((/** @type {any} */ page) => [page.key, page.file])), new Set(), /** @type {any} */ (redirects), maxHops);
      const shared = openNameTable(encodeNameTable(pages, redirects, maxHops));
      expect(asked.map((key) => [key, shared.fileOf(key)])).toEqual(asked.map((key) => [key, reference.fileOf(key)]));
    }
    const shared = openNameTable(encodeNameTable(pages, redirects, 10));
    expect(shared.fileOf(`${O}/older`)).toBe('st/product7.htm');
    expect(shared.fileOf(`${O}/caf%C3%A9`)).toBe('café/index.html');
    expect(shared.fileOf(`${O}/both`)).toBe('both.html');
    expect(shared.fileOf(`${O}/loop-a`)).toBeNull();
    expect(shared.fileOf(`${O}/hop0`)).toBeNull(); // 12 hops: over the limit
    expect(shared.fileOf(`${O}/hop2`)).toBe('index.html');
  });

  it('an empty table knows nothing', () => {
    expect(openNameTable(encodeNameTable([], [], 10)).fileOf(`${O}/`)).toBeNull();
  });

  it('is read from another thread without a copy', async () => {
    const encoded = encodeNameTable(pages, redirects, 10);
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(${JSON.stringify(new URL('../../lib/naming/name-table.js', import.meta.url).href)}).then(({ openNameTable }) => {
        const table = openNameTable(workerData);
        parentPort.postMessage([table.fileOf(${JSON.stringify(`${O}/older`)}), table.fileOf(${JSON.stringify(`${O}/st/product.asp?SKUSetID=2999`)})]);
      });`;
    const worker = new Worker(source, { eval: true, workerData: encoded });
    const [answer] = await Promise.all([new Promise((resolve) => worker.once('message', resolve)), new Promise((resolve) => worker.once('exit', resolve))]);
    expect(answer).toEqual(['st/product7.htm', 'st/product2999.htm']);
  });
});
