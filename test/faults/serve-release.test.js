// @ts-check
/**
 * `prerender serve DIR/current` while publishes switch `current` and
 * `--keep 1` removes the release it served: serve follows the link, with
 * the new release's manifest; a tree served by its own path that is removed
 * is said once, in one line.
 */
import { existsSync } from 'node:fs';
import { readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { publish } from '../../lib/deploy/deploy.js';
import { createServer } from '../../lib/serve/index.js';
import { closeServer, listen, request } from '../../fixtures/serve/http.js';
import { generationIn, writeTree } from '../helpers/deploy-tree.js';
import { useTestDir } from '../helpers/fixtures.js';
import { until } from '../helpers/processes.js';

/** @type {string} */
let dir;
useTestDir('prerender-serve-release-', (d) => { dir = d; });
/** Release ids are unique per second: each publish a second later, never in the past. */
let clock = Date.now();
const later = () => new Date((clock = Math.max(clock + 1000, Date.now() + 1000)));

/** @param {string} root @param {string[]} warnings @param {{ watch?: boolean }} [options] */
async function serve(root, warnings, options = {}) {
  const server = createServer({ root, logger: { warn: (m) => void warnings.push(m), info: () => {} }, ...options });
  const port = await listen(server);
  return { port, server, close: () => closeServer(server) };
}

describe('serve DIR/current across publishes with --keep 1', () => {
  it('follows current to the new release, files and manifest, and never answers 404; a removed tree served by its path is said once', async () => {
    const out = path.join(dir, 'out');
    const www = path.join(dir, 'www');
    await writeTree(out, { pages: 5, generation: 1 });
    const first = await publish(out, www, { now: later(), keep: 1 });
    /** @type {string[]} */
    const warnings = [];
    /** @type {string[]} */
    const pinnedWarnings = [];
    const current = await serve(path.join(www, 'current'), warnings);
    const pinnedRoot = await realpath(path.join(www, 'releases', first.id));
    const pinned = await serve(pinnedRoot, pinnedWarnings);
    try {
      /** @type {number[]} */
      const statuses = [];
      /** @param {string} page @returns {Promise<number>} the generation served */
      const ask = async (page) => {
        const answer = await request(current.port, `/p/${page}`, { timeoutMs: 30_000 });
        statuses.push(answer.status);
        return generationIn(answer.text);
      };
      for (let i = 0; i < 5; i++) expect(await ask(`page${i}.html`)).toBe(1);
      expect((await request(pinned.port, '/p/page0.html', { timeoutMs: 30_000 })).status).toBe(200);

      // Generation 2 has one page more; the release of generation 1 is removed with the switch.
      await writeTree(out, { pages: 6, generation: 2 });
      const second = await publish(out, www, { now: later(), keep: 1 });
      expect(path.basename(await readlink(path.join(www, 'current')))).toBe(second.id);
      expect(second.targets[0].pruned).toEqual([first.id]);
      expect(existsSync(pinnedRoot)).toBe(false);

      // At once: each answer comes from a release (a file cached within the last second may still be the old one's).
      for (let i = 0; i < 6; i++) expect([1, 2]).toContain(await ask(`page${i}.html`));
      await until(async () => (await Promise.all([0, 1, 2, 3, 4, 5].map((i) => ask(`page${i}.html`)))).every((g) => g === 2), 30_000);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(warnings.filter((w) => !w.includes('no index.html'))).toEqual([]);

      // Served by its own path, the removed release answers 404, and says why once.
      expect((await request(pinned.port, '/p/page1.html', { timeoutMs: 30_000 })).status).toBe(404);
      expect((await request(pinned.port, '/p/page2.html', { timeoutMs: 30_000 })).status).toBe(404);
      expect(pinnedWarnings.filter((w) => w.includes('is gone'))).toEqual([
        `the tree served, ${pinnedRoot}, is gone: pages not cached answer 404; to follow publishes, serve DIR/current`,
      ]);
    } finally {
      await current.close();
      await pinned.close();
    }
  });

  it('a request whose lookup began before the tree moved is looked up again in the new tree, never answered 404', async () => {
    const out = path.join(dir, 'out-moved');
    const www = path.join(dir, 'www-moved');
    await writeTree(out, { pages: 5, generation: 1 });
    await publish(out, www, { now: later(), keep: 1 });
    // No watch: the tree moves only when the test says so.
    const current = await serve(path.join(www, 'current'), [], { watch: false });
    try {
      await writeTree(out, { pages: 6, generation: 2 });
      const second = await publish(out, www, { now: later(), keep: 1 });
      const moved = await realpath(path.join(www, 'releases', second.id));
      // Once the filter has begun looking page5 up in the removed tree, the tree moves, as a check of the link does.
      current.server.on('request', (req) => {
        if (req.url === '/p/page5.html') current.server.priceFilter.pages.emit('root', moved);
      });
      const answer = await request(current.port, '/p/page5.html', { timeoutMs: 30_000 });
      expect(answer.status).toBe(200);
      expect(generationIn(answer.text)).toBe(2);
    } finally {
      await current.close();
    }
  });
});
