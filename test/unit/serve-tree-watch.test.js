// @ts-check
/**
 * tree-watch.js: a check asked for while another is in flight is one begun after the call. The one in flight may have
 * read the link before the switch that made the caller ask; a request that found its tree gone would then answer 404.
 */
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchTree } from '../../lib/serve/tree-watch.js';

/** @type {string[]} */
const dirs = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Two releases and a `current` link to the first. */
function releases() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'prerender-tree-watch-'));
  dirs.push(dir);
  for (const name of ['one', 'two']) mkdirSync(path.join(dir, name));
  symlinkSync('one', path.join(dir, 'current'));
  return { dir, root: path.join(dir, 'current'), one: realpathSync(path.join(dir, 'one')), two: realpathSync(path.join(dir, 'two')) };
}

/** Switch `current` to `two` at once, as publish does (a new link renamed over the old). @param {string} dir */
function switchToTwo(dir) {
  symlinkSync('two', path.join(dir, 'current.new'));
  renameSync(path.join(dir, 'current.new'), path.join(dir, 'current'));
}

/**
 * A page store whose first reload waits until `release()`; the others answer at once. A reload with a root moves there.
 * @param {{ realRoot: string }} options
 */
function gatedPages(options) {
  /** @type {(string | undefined)[]} */
  const reloads = [];
  /** @type {() => void} */
  let release = () => {};
  const gate = new Promise((resolve) => { release = () => resolve(undefined); });
  /** @type {() => void} */
  let enter = () => {};
  /** Resolved once the first reload has begun: its check has read the link. */
  const entered = new Promise((resolve) => { enter = () => resolve(undefined); });
  const pages = {
    /** @param {string} [root] */
    async reloadManifest(root) {
      reloads.push(root);
      if (reloads.length === 1) {
        enter();
        await gate;
      }
      if (root === undefined) return false;
      options.realRoot = root;
      return true;
    },
  };
  return { pages, reloads, release, entered };
}

describe('watchTree check()', () => {
  it('asked while a check begun before a switch is in flight, it checks again after it and moves to the new tree', async () => {
    const { dir, root, one, two } = releases();
    const options = /** @type {import('../../lib/serve/options.js').ServeOptions} */ (/** @type {unknown} */ ({ root, realRoot: one, watch: false }));
    const { pages, reloads, release, entered } = gatedPages(options);
    const tree = watchTree(options, /** @type {import('../../lib/serve/pages.js').PageStore} */ (/** @type {unknown} */ (pages)), () => {}, { warn: () => {}, info: () => {} });
    try {
      const first = tree.check();
      // The first check has read the link (still `one`) and waits in its reload.
      await entered;
      expect(reloads).toEqual([undefined]);
      switchToTwo(dir);
      const second = tree.check();
      const third = tree.check();
      release();
      expect(await first).toBe(false);
      expect(await second).toBe(true);
      expect(await third).toBe(true);
      expect(options.realRoot).toBe(two);
      // One check after the first, shared by both callers that asked meanwhile.
      expect(reloads).toEqual([undefined, two]);
    } finally {
      tree.close();
    }
  });

  it('never runs two checks at once, and a caller with none in flight starts its own', async () => {
    const { root, one } = releases();
    const options = /** @type {import('../../lib/serve/options.js').ServeOptions} */ (/** @type {unknown} */ ({ root, realRoot: one, watch: false }));
    let running = 0;
    let most = 0;
    const pages = {
      async reloadManifest() {
        most = Math.max(most, ++running);
        await new Promise((resolve) => { setImmediate(resolve); });
        running--;
        return false;
      },
    };
    const tree = watchTree(options, /** @type {import('../../lib/serve/pages.js').PageStore} */ (/** @type {unknown} */ (pages)), () => {}, { warn: () => {}, info: () => {} });
    try {
      await Promise.all([tree.check(), tree.check(), tree.check()]);
      expect(most).toBe(1);
      expect(await tree.check()).toBe(false);
    } finally {
      tree.close();
    }
  });
});
