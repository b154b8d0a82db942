// @ts-check
import fs from 'node:fs';
import path from 'node:path';
import { MANIFEST_NAME } from './manifest.js';

/**
 * Manifest hot reload: a watch on the root and a poll every pollIntervalMs, debounced. A root reached through a link
 * (`serve DIR/current`) is resolved again at every check, and its link's directory is watched too: once the link leads to
 * another tree with a usable manifest, that tree is served. A served tree that is gone is said once, in one line.
 * @param {import('./options.js').ServeOptions} options @param {import('./pages.js').PageStore} pages
 * @param {() => void} changed after a reload that changed it @param {import('./options.js').Logger} logger
 * @returns {{ close: () => void, check: () => Promise<boolean> }}
 */
export function watchTree(options, pages, changed, logger) {
  /** @type {fs.FSWatcher[]} */ let watchers = [];
  /** @type {NodeJS.Timeout | null} */ let poll = null;
  /** @type {NodeJS.Timeout | null} */ let debounce = null;
  let closed = false;
  let watched = '';
  /** @type {string | null} */ let gone = null;

  /** @type {Promise<boolean> | null} */ let checking = null;
  /** @type {Promise<boolean> | null} */ let again = null;
  /**
   * Checks never overlap, and each caller gets one begun after its call: a check in flight may have read the link before
   * the switch that made the caller ask (a request that found the tree gone would answer 404). Callers meanwhile share one.
   * @returns {Promise<boolean>}
   */
  const check = () => {
    if (!checking) return (checking = checkNow().finally(() => { checking = null; }));
    const next = () => { again = null; return check(); };
    return (again ??= checking.then(next, next));
  };
  const checkNow = async () => {
    const real = await fs.promises.realpath(options.root).catch(() => null);
    // A link that leads elsewhere: that tree is served once its manifest is usable.
    const moved = real !== null && real !== options.realRoot && (await pages.reloadManifest(real));
    const didChange = moved || (await pages.reloadManifest());
    if (moved || fs.existsSync(options.realRoot)) gone = null;
    else if (gone !== options.realRoot) {
      gone = options.realRoot;
      const link = options.root !== options.realRoot;
      logger.warn(`the tree served, ${options.realRoot}, is gone${link ? `, and ${options.root} leads to no usable tree` : ''}: pages not cached answer 404${link ? '' : '; to follow publishes, serve DIR/current'}`);
    }
    if (didChange && !closed) {
      if (options.watch && watched !== options.realRoot) watch();
      changed();
    }
    return didChange;
  };
  const recheck = () => {
    if (closed) return;
    if (debounce) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = null;
      void check();
    }, 50);
    debounce.unref();
  };
  /** @param {string} dir @param {(name: string | null) => boolean} wanted */
  const watchDir = (dir, wanted) => {
    try {
      const watcher = fs.watch(dir, { persistent: false }, (_e, name) => {
        if (wanted(name)) recheck();
      });
      watcher.on('error', () => watcher.close());
      watchers.push(watcher);
    } catch {
      // fs.watch unsupported here (some network file systems): the poll does
    }
  };
  const watch = () => {
    for (const watcher of watchers) watcher.close();
    watchers = [];
    watched = options.realRoot;
    watchDir(options.realRoot, (name) => name === null || name === MANIFEST_NAME);
    const link = path.basename(options.root);
    if (options.root !== options.realRoot) watchDir(path.dirname(options.root), (name) => name === null || name === link);
  };
  if (options.watch) {
    watch();
    poll = setInterval(recheck, options.pollIntervalMs);
    poll.unref();
  }
  return {
    check,
    close() {
      closed = true;
      for (const watcher of watchers) watcher.close();
      if (poll) clearInterval(poll);
      if (debounce) clearTimeout(debounce);
    },
  };
}
