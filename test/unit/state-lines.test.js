// @ts-check
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { STATE_FILE, STATE_VERSION, readState } from '../../lib/recrawl/state.js';

/** @type {string[]} */ const made = [];
afterAll(async () => { for (const dir of made) await rm(dir, { recursive: true, force: true }); });

/** A state of `count` pages whose URLs hold two-byte characters, so some line and some character straddle a 1 MiB chunk. @param {number} count */
function stateText(count, eol = '\n') {
  const header = JSON.stringify({ format: 'prerender-state', version: STATE_VERSION, complete: true, roots: [], output: '', sealed: true, finishedAt: 't' });
  const pages = Array.from({ length: count }, (_, i) => JSON.stringify({ url: `http://shop.test/caf\u00e9/${'\u00e9'.repeat(i % 7)}${i}`, state: 'done', status: 200, file: `p${i}.htm` }));
  return { text: [header, ...pages, JSON.stringify({ end: count })].join(eol) + eol, urls: pages.map((line) => JSON.parse(line).url) };
}

describe('readState reads its lines in chunks', () => {
  it.each([['LF', '\n'], ['CRLF', '\r\n']])('%s: every page of a state past 1 MiB, in order, two-byte characters whole', async (_, eol) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-state-lines-'));
    made.push(dir);
    const { text, urls } = stateText(20_000, eol);
    expect(Buffer.byteLength(text)).toBeGreaterThan(1 << 20);
    await writeFile(path.join(dir, STATE_FILE), text);
    const state = await readState(dir);
    expect(state?.urls).toEqual(urls);
    expect(state?.pages.get(urls[12_345])?.file).toBe('p12345.htm');
  });

  it('a last line without its newline is read; a state cut inside a line is refused', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-state-lines-'));
    made.push(dir);
    const { text } = stateText(3);
    await writeFile(path.join(dir, STATE_FILE), text.slice(0, -1));
    expect((await readState(dir))?.urls).toHaveLength(3);
    await writeFile(path.join(dir, STATE_FILE), text.slice(0, -5));
    await expect(readState(dir)).rejects.toThrow(/cannot be read/);
  });
});
