// @ts-check
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Arena } from '../../lib/store/arena.js';
import { FOLLOW_FILE, FollowNotes, followToken, readFollowLists, writeFollowLists } from '../../lib/recrawl/follow-lists.js';

/** @type {string[]} */ const made = [];
afterAll(async () => { for (const dir of made) await rm(dir, { recursive: true, force: true }); });
const tempDir = async () => { const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-follow-')); made.push(dir); return dir; };

const A = 'http://shop.test/a';
const B = 'http://shop.test/b';
const C = 'http://shop.test/c';
const GONE = 'http://shop.test/gone';
const CSS = 'http://shop.test/s.css';
const LINES = [A, B, C, CSS];
const TOKEN = followToken('2026-12-04T00:00:00.000Z', LINES.length);

/** Notes for a small site: A links to B, C and a URL the state does not list; B to A; C has no note. */
function notes() {
  const arena = new Arena(2);
  const follow = new FollowNotes(arena);
  follow.note(A, [{ key: B, kind: 'navigation' }, { key: GONE, kind: 'navigation' }, { key: CSS, kind: 'requisite' }, { key: C, kind: 'navigation' }], 2, true);
  follow.note(B, [{ key: A, kind: 'navigation' }], 0, false);
  follow.note(C, [{ key: A, kind: 'navigation' }], 0, true);
  follow.forget(C); // too deep a link: followed from its scan next time
  return follow;
}

describe('follow lists beside the state', () => {
  it('read back as noted: state lines and URLs the state does not list, kinds, skipped requisites, completeness', async () => {
    const dir = await tempDir();
    await writeFollowLists(dir, notes().encode(LINES, { token: TOKEN, key: 'k' }));
    const lists = await readFollowLists(dir, { token: TOKEN, key: 'k', lines: LINES });
    expect(lists?.of(A)).toEqual({
      items: [{ key: B, kind: 'navigation' }, { key: GONE, kind: 'navigation' }, { key: CSS, kind: 'requisite' }, { key: C, kind: 'navigation' }],
      skipped: 2, complete: true,
    });
    expect(lists?.of(B)).toEqual({ items: [{ key: A, kind: 'navigation' }], skipped: 0, complete: false });
    expect(lists?.of(C)).toBeNull();
    expect(lists?.of(CSS)).toBeNull();
    expect(lists?.of('http://shop.test/never')).toBeNull();
    // Found by the slots of an arena that holds other URLs first, as a run's does.
    const arena = new Arena(1);
    for (const url of ['http://shop.test/other', ...[...LINES].reverse()]) arena.intern(url);
    const bySlot = await readFollowLists(dir, { token: TOKEN, key: 'k', lines: LINES, slotOf: (url) => arena.slotOf(url) });
    for (const url of [A, B, C, CSS, 'http://shop.test/other', 'http://shop.test/never']) expect(bySlot?.of(url)).toEqual(lists?.of(url));
  });

  it('many slots and large indices survive the varints (the arena grows while noting)', async () => {
    const dir = await tempDir();
    const arena = new Arena(1);
    const follow = new FollowNotes(arena);
    const urls = Array.from({ length: 5000 }, (_, i) => `http://shop.test/p/${i}`);
    urls.forEach((url, i) => follow.note(url, [{ key: urls[(i * 7919) % urls.length], kind: 'navigation' }, { key: urls[urls.length - 1 - i], kind: 'requisite' }], i, i % 2 === 0));
    const lines = [...urls].reverse();
    const token = followToken('t', lines.length);
    await writeFollowLists(dir, follow.encode(lines, { token, key: 'k' }));
    const lists = await readFollowLists(dir, { token, key: 'k', lines });
    for (const i of [0, 1, 127, 128, 4095, 4999]) {
      expect(lists?.of(urls[i])).toEqual({ items: [{ key: urls[(i * 7919) % urls.length], kind: 'navigation' }, { key: urls[urls.length - 1 - i], kind: 'requisite' }], skipped: i, complete: i % 2 === 0 });
    }
  });

  it('none for another state, other link rules, other lines, or damaged bytes', async () => {
    const dir = await tempDir();
    await writeFollowLists(dir, notes().encode(LINES, { token: TOKEN, key: 'k' }));
    expect(await readFollowLists(dir, { token: followToken('2026-12-05T00:00:00.000Z', LINES.length), key: 'k', lines: LINES })).toBeNull();
    expect(await readFollowLists(dir, { token: TOKEN, key: 'other rules', lines: LINES })).toBeNull();
    expect(await readFollowLists(dir, { token: TOKEN, key: 'k', lines: LINES.slice(0, 3) })).toBeNull();
    const file = path.join(dir, FOLLOW_FILE);
    const bytes = await readFile(file);
    bytes[bytes.length - 40] ^= 1;
    await writeFile(file, bytes);
    expect(await readFollowLists(dir, { token: TOKEN, key: 'k', lines: LINES })).toBeNull();
    await writeFile(file, bytes.subarray(0, 10));
    expect(await readFollowLists(dir, { token: TOKEN, key: 'k', lines: LINES })).toBeNull();
    await rm(file);
    expect(await readFollowLists(dir, { token: TOKEN, key: 'k', lines: LINES })).toBeNull();
  });
});
