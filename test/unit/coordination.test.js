// @ts-check
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalCoordination } from '../../lib/engine/coordination.js';
import { Arena } from '../../lib/store/arena.js';

const lib = path.join(import.meta.dirname, '..', '..', 'lib');
const item = (/** @type {string} */ key) => ({ key, kind: /** @type {const} */ ('navigation'), referrer: null });

describe('the coordination seam', () => {
  it('a local coordination seeds every root, knows what its frontier holds and lets it go', async () => {
    const local = new LocalCoordination({ maxPages: 10, arena: new Arena(1), recordsColumn: 0, blobs: null });
    expect(local.shared).toBe(false);
    expect(local.ownsOut).toBe(true);
    expect(local.seeds(['http://a.test/', 'http://b.test/'])).toEqual(['http://a.test/', 'http://b.test/']);
    await local.frontier.add([item('http://a.test/'), item('http://a.test/x')]);
    expect(await local.frontier.take(1)).toEqual(['http://a.test/']);
    expect(local.knows('http://a.test/')).toBe(true);
    expect(local.waits('http://a.test/')).toBe(false);
    expect(local.waits('http://a.test/x')).toBe(true);
    expect(local.knows('http://a.test/y')).toBe(false);
    expect(local.idle()).toBeNull();
    expect(local.feed()).toBeNull();
    expect(local.lastCrawl()).toBeNull();
    expect(await local.finishPool()).toBeNull();
    local.release();
    expect(local.knows('http://a.test/x')).toBe(false);
  });

  it('wants a page\'s links only while early writes want them', () => {
    const local = new LocalCoordination({ maxPages: 10, arena: new Arena(1), recordsColumn: 0, blobs: null });
    const run = /** @type {any} */ ({ early: null });
    expect(local.wantsLinks(run)).toBe(false);
    run.early = { wanted: () => true };
    expect(local.wantsLinks(run)).toBe(true);
  });

  it('the engine never reads --frontier: only the session chooses the coordination', () => {
    /** @type {string[]} */
    const readers = [];
    for (const folder of ['engine', 'naming', 'recrawl', 'store', 'document', 'fetch', 'output']) {
      for (const name of readdirSync(path.join(lib, folder), { recursive: true, encoding: 'utf8' })) {
        if (!name.endsWith('.js')) continue;
        const text = readFileSync(path.join(lib, folder, name), 'utf8');
        if (/\b(?:o|options|opts)\.frontier\b|options\?\.frontier\b/.test(text)) readers.push(`${folder}/${name}`);
      }
    }
    expect(readers).toEqual([]);
    const session = readFileSync(path.join(lib, 'crawler', 'session.js'), 'utf8');
    expect(session.match(/\bo\.frontier\b/g)).toHaveLength(1);
  });
});
