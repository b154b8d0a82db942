// @ts-check
/**
 * A front (serve --origin) stops cleanly: SIGTERM drains the server, which
 * closes the origin's connection pool once. Found by the documentation's
 * examples (docs/front.md): the pool was closed twice, on the server's
 * "close" event and by drain(), and `prerender serve --origin` exited 2.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAppsOrigin, writeAppsTree } from '../fixtures/front-apps.js';
import { createServer } from '../lib/serve/index.js';
import { runServeCommand } from '../lib/serve/server.js';

/** @type {(() => Promise<unknown>)[]} */
let cleanups = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function tree() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-front-drain-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  writeAppsTree(dir);
  const origin = await startAppsOrigin();
  cleanups.push(() => origin.close());
  return { dir, origin: origin.origin };
}

const quiet = { warn: () => {}, info: () => {} };

describe('a front stops cleanly', () => {
  it('drain() resolves after a request went to the origin', async () => {
    const { dir, origin } = await tree();
    const server = createServer({ root: dir, origin, logger: quiet });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
    const answer = await fetch(`http://127.0.0.1:${port}/cart.asp`);
    expect(await answer.text()).toContain('live GET /cart.asp');
    await expect(server.drain(5000)).resolves.toEqual({ cut: 0 });
  });

  it('drain() resolves when no request went to the origin', async () => {
    const { dir, origin } = await tree();
    const server = createServer({ root: dir, origin, logger: quiet });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    await expect(server.drain(5000)).resolves.toEqual({ cut: 0 });
  });

  it('runServeCommand ends without an error when its signal aborts', async () => {
    const { dir, origin } = await tree();
    const controller = new AbortController();
    let stdout = '';
    const io = {
      stdout: /** @type {NodeJS.WritableStream} */ (/** @type {unknown} */ ({ write: (/** @type {string} */ text) => { stdout += text; if (/listening on/.test(stdout)) controller.abort(); return true; } })),
      stderr: /** @type {NodeJS.WritableStream} */ (/** @type {unknown} */ ({ write: () => true })),
      signal: controller.signal,
    };
    await expect(runServeCommand(dir, { origin, port: 0 }, io)).resolves.not.toThrow();
    expect(stdout).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
  });
});
