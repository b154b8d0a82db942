// @ts-check
import fs from 'node:fs';
import { MANIFEST_NAME } from './manifest.js';

/**
 * Manifest hot reload: a watch on the root and a poll every pollIntervalMs, debounced.
 * @param {import('./options.js').ServeOptions} options @param {() => Promise<boolean>} reload true when it changed
 * @param {() => void} changed after a reload that changed it @returns {{ close: () => void }}
 */
export function watchTree(options, reload, changed) {
  /** @type {fs.FSWatcher | null} */ let watcher = null;
  /** @type {NodeJS.Timeout | null} */ let poll = null;
  /** @type {NodeJS.Timeout | null} */ let debounce = null;
  let closed = false;
  const recheck = () => {
    if (closed) return;
    if (debounce) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = null;
      void reload().then((didChange) => {
        if (didChange && !closed) changed();
      });
    }, 50);
    debounce.unref();
  };
  if (options.watch) {
    try {
      watcher = fs.watch(options.realRoot, { persistent: false }, (_e, name) => {
        if (name === null || name === MANIFEST_NAME) recheck();
      });
      watcher.on('error', () => {
        watcher?.close();
        watcher = null;
      });
    } catch {
      watcher = null;
    }
    poll = setInterval(recheck, options.pollIntervalMs);
    poll.unref();
  }
  return {
    close() {
      closed = true;
      watcher?.close();
      if (poll) clearInterval(poll);
      if (debounce) clearTimeout(debounce);
    },
  };
}
