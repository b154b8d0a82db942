// @ts-check
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { startShop } from '../../fixtures/shop.js';
import { startSite } from '../../fixtures/site.js';
import { startSitemapSite } from '../../fixtures/sitemap-site.js';
import { tempDirs } from '../crawl-helpers.js';
import { runCli } from './cli.js';

/**
 * Per-file and per-test set-up: each helper registers the vitest hooks that
 * start and stop what it gives, so call it at the top level of a test file.
 */

/** @typedef {Awaited<ReturnType<typeof startSite>>} FixtureSite */

/**
 * The fixture site of fixtures/site.js for a whole test file: started before
 * its tests, reset before each test, closed after them together with the
 * file's temp directories.
 * @param {(site: FixtureSite) => void} setSite receives the site once it listens
 * @returns {ReturnType<typeof tempDirs>} the file's temp directories
 */
export function useFixtureSite(setSite) {
  /** @type {FixtureSite | undefined} */
  let site;
  const dirs = tempDirs();
  beforeAll(async () => {
    site = await startSite();
    setSite(site);
  });
  afterAll(async () => {
    await site?.close();
    await dirs.cleanup();
  });
  beforeEach(() => {
    site?.reset();
  });
  return dirs;
}

/**
 * A fresh temp directory for each test, removed after it, and the test's
 * cleanups, run (last added first) before it is removed.
 * @param {string} prefix temp directory name prefix
 * @param {(dir: string) => void} setDir receives each test's directory before the test runs
 */
export function useTestDir(prefix, setDir) {
  /** @type {string} */
  let dir;
  /** @type {(() => Promise<unknown>)[]} */
  let cleanups = [];
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    cleanups = [];
    setDir(dir);
  });
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * Run `cleanup` after the current test.
   * @param {() => Promise<unknown>} cleanup
   */
  function defer(cleanup) {
    cleanups.push(cleanup);
  }

  return {
    defer,

    /**
     * The CLI in-process (see runCli), by default in the test's directory.
     * @param {string[]} argv
     * @param {Partial<import('./cli.js').CliIo>} [io]
     */
    cli(argv, io = {}) {
      return runCli(argv, { ...io, cwd: io.cwd ?? dir });
    },

    /**
     * The shop fixture (fixtures/shop.js), closed after the test.
     * @param {Parameters<typeof startShop>[0]} [options]
     */
    async shop(options) {
      const server = await startShop(options);
      defer(server.close);
      return server;
    },

    /** The sitemap fixture site (fixtures/sitemap-site.js), closed after the test. */
    async sitemapSite() {
      const site = await startSitemapSite();
      defer(site.close);
      return site;
    },

    /**
     * A local HTTP server on 127.0.0.1, closed after the test.
     * @param {http.RequestListener} handler
     * @returns {Promise<string>} its origin, http://127.0.0.1:<port>
     */
    async serve(handler) {
      const server = http.createServer(handler);
      await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
      defer(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }));
      return `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
    },
  };
}
