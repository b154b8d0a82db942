// @ts-check
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TreeWriter } from '../lib/write.js';

/** @type {string} */
let dir;
beforeEach(async () => { dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-write-')); });
afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

describe('TreeWriter staging log', () => {
  it('keeps concurrent stages apart: every body reads back intact', async () => {
    const writer = new TreeWriter(dir);
    await writer.init();
    const bodies = Array.from({ length: 200 }, (_, i) => [Buffer.alloc(1 + (i * 37) % 5000, i % 251), Buffer.from(`scan ${i}`)]);
    const positions = await Promise.all(bodies.map((parts) => writer.stage(parts)));
    for (const [i, parts] of bodies.entries()) {
      const length = parts[0].length + parts[1].length;
      expect(await writer.readStaged(positions[i], length)).toEqual(Buffer.concat(parts));
    }
    expect(writer.logSize).toBe(bodies.reduce((sum, parts) => sum + parts[0].length + parts[1].length, 0));
    await writer.cleanup();
  });

  it('writes tree files atomically and refuses paths outside the tree', async () => {
    const writer = new TreeWriter(dir);
    await writer.init();
    await writer.write('a/b/c.html', 'hello');
    expect(await readFile(path.join(dir, 'a/b/c.html'), 'utf8')).toBe('hello');
    await expect(writer.write('../escape.html', 'x')).rejects.toThrow(/outside the output directory/);
    await writer.cleanup();
  });
});
