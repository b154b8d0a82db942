// @ts-check
/**
 * The memory bound of `prerender serve` (issue 12, defect 3): pages load
 * lazily; every cached variant (identity, gzip, br, plain files) counts
 * against one byte budget, and what the cache counts is what it holds; the
 * real process stays under budget + 150 MB on a generated tree larger than
 * the budget, after identity, gzip and br traffic. (The 200,000-page figure
 * is in bench/serve-bench.js --memory.)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../lib/serve/index.js';
import { BUFFER_OVERHEAD, ENTRY_OVERHEAD } from '../lib/serve/byte-cache.js';
import { memoryOf } from '../bench/lib/proc.js';
import { requestAll, treeBytes, writeLargeTree } from '../fixtures/serve/load.js';
import { closeServer, listen, waitFor } from '../fixtures/serve/http.js';
import { BIN } from './helpers/cli.js';

const MiB = 1024 * 1024;
/** @type {string} */
let dir;
/** @type {{ filled: string[], plain: string[] }} */
let targets;

// (generous time limits: these move a few thousand pages, and the machine may be shared)
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-serve-mem-'));
  targets = writeLargeTree(dir, { pages: 2000, plain: 500, size: 15_000 });
  fs.writeFileSync(path.join(dir, '..', `${path.basename(dir)}-prices.json`), JSON.stringify({ 'SKU-1': { '*': '$1' } }));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(path.join(dir, '..', `${path.basename(dir)}-prices.json`), { force: true });
});

/**
 * Bytes really held by a set of buffers: each backing store once.
 * @param {Iterable<Buffer>} buffers
 */
function retained(buffers) {
  const seen = new Set();
  let total = 0;
  for (const b of buffers) {
    if (seen.has(b.buffer)) continue;
    seen.add(b.buffer);
    total += b.buffer.byteLength;
  }
  return total;
}

/**
 * The real `prerender serve` on DIR (port 0), its output collected.
 * @param {string[]} args after `serve DIR --port 0`
 */
function serveProcess(args) {
  const child = spawn(process.execPath, [BIN, 'serve', dir, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c) => (out.stdout += c));
  child.stderr.on('data', (c) => (out.stderr += c));
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = () => waitFor(() => Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out.stdout)?.[1] ?? 0), { timeoutMs: 60_000, what: 'the server' });
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  return { child, out, exited, listening, stop };
}

describe('serve memory', () => {
  it('loads nothing at start, and what the one budget counts is what the cache holds (identity, gzip, br, plain files)', async () => {
    const budget = 4 * MiB;
    const server = createServer({ root: dir, prices: { 'SKU-1': { '*': '$1' } }, pageCacheBytes: budget, watch: false, logger: { warn: () => {} } });
    const port = await listen(server);
    try {
      const cache = server.priceFilter.cache;
      expect(cache.size).toBe(0); // lazy: nothing read before the first request
      const some = [...targets.filled.slice(0, 400), ...targets.plain.slice(0, 100)];
      for (const encoding of ['br', '', 'gzip']) expect(await requestAll(port, some, { encodings: [encoding] })).toBe(0);
      expect(cache.calculatedSize).toBeLessThanOrEqual(budget);
      expect(cache.calculatedSize).toBeGreaterThan(budget / 2);
      /** @type {Buffer[]} */
      const held = [];
      for (const entry of /** @type {any[]} */ ([...cache.values()])) {
        if (entry.parts) held.push(...entry.parts, ...(entry.deflated ?? []));
        if (entry.identity) held.push(entry.identity.body, ...(entry.gzip ? [entry.gzip.body] : []), ...(entry.br ? [entry.br.body] : []));
        if (entry.body) held.push(entry.body);
      }
      // The manifest's pages are charged to the budget: the cache has the rest.
      expect(cache.maxSize).toBe(budget - /** @type {any} */ (server.priceFilter.pages.manifest).pages.memoryBytes);
      // Every entry is counted at its present size (deflated parts and compressed forms added after it was cached too),
      // its objects and the Buffers it holds included.
      expect([...cache.values()].reduce((n, e) => n + e.bytes, 0)).toBe(cache.calculatedSize);
      for (const entry of /** @type {any[]} */ ([...cache.values()])) {
        const buffers = entry.parts ? [...entry.parts, ...(entry.deflated ?? [])] : entry.identity ? [entry.identity.body, entry.gzip?.body, entry.br?.body].filter(Boolean) : [entry.body];
        expect(entry.bytes).toBeGreaterThanOrEqual(ENTRY_OVERHEAD + buffers.reduce((/** @type {number} */ n, /** @type {Buffer} */ b) => n + b.length + BUFFER_OVERHEAD, 0));
      }
      expect(/** @type {any[]} */ ([...cache.values()]).some((e) => e.deflated)).toBe(true);
      // Buffers that are views into larger allocations would hold more than is counted.
      expect(retained(held)).toBeLessThanOrEqual(cache.calculatedSize * 1.05 + 64 * 1024);
    } finally {
      await closeServer(server);
    }
  });

  it('the real process stays under budget + 150 MB on a tree larger than the budget, after gzip, br and identity traffic', async () => {
    const budget = 16 * MiB;
    expect(treeBytes(dir)).toBeGreaterThan(2 * budget);
    const server = serveProcess(['--cache-bytes', '16m', '--prices', path.join(dir, '..', `${path.basename(dir)}-prices.json`)]);
    try {
      const port = await server.listening();
      // `prerender serve` bounds its RSS by default: the budget + 96 MiB
      expect(server.out.stderr).toMatch(/cache budget 16 MiB; the cache gives way when the resident memory passes 112 MiB \(--max-rss\)/);
      const all = [...targets.filled, ...targets.plain];
      for (const encoding of ['gzip', 'br', '']) expect(await requestAll(port, all, { encodings: [encoding], headers: { cookie: 'zip=10001' } })).toBe(0);
      const memory = memoryOf(/** @type {number} */ (server.child.pid));
      expect(memory).not.toBe(null);
      expect(/** @type {{ hwmKB: number }} */ (memory).hwmKB * 1024).toBeLessThan(budget + 150 * MiB);
    } finally {
      await server.stop();
    }
  }, 180_000);

  it('--max-rss: the cache gives way when the process would pass the bound, and says so once it cannot give more; a bound under the cache is refused', async () => {
    const prices = path.join(dir, '..', `${path.basename(dir)}-prices.json`);
    // A bound no process can keep (node alone takes more): the cache goes down to its floor and the server says so.
    const bounded = serveProcess(['--cache-bytes', '16m', '--max-rss', '17m', '--prices', prices]);
    try {
      const port = await bounded.listening();
      expect(await requestAll(port, targets.filled.slice(0, 300), { encodings: ['gzip'] })).toBe(0);
      await waitFor(() => /resident memory \d+ MB is over the 17 MB bound with the page cache down to 1 MB/.test(bounded.out.stderr), { timeoutMs: 60_000, what: 'the warning' });
      expect(bounded.out.stderr.match(/is over the 17 MB bound/g)).toHaveLength(1);
    } finally {
      await bounded.stop();
    }
    // --max-rss off: no bound, and the server says so.
    const unbound = serveProcess(['--cache-bytes', '16m', '--max-rss', 'off']);
    try {
      await waitFor(() => /no bound on the resident memory \(--max-rss off\)/.test(unbound.out.stderr), { timeoutMs: 60_000, what: 'the start-up line' });
    } finally {
      await unbound.stop();
    }
    // Under the cache budget: refused before anything starts (exit 2, one line).
    const refused = serveProcess(['--cache-bytes', '64m', '--max-rss', '32m']);
    expect(await refused.exited).toBe(2);
    expect(refused.out.stderr).toMatch(/--max-rss \(maxRssBytes\) must be larger than --cache-bytes/);
  });
});
