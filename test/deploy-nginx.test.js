// @ts-check
/**
 * nginx serving a published tree through DIR/current, with the template's
 * root line: every publish is seen at once and whole; a rollback too.
 * Skipped only outside CI when nginx is absent; in CI (CI=true) it must run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, rollback } from '../lib/index.js';
import { request } from '../fixtures/serve/http.js';
import { NGINX, startNginx } from './helpers/edge.js';
import { generationIn, writeTree } from './helpers/deploy-tree.js';

const IN_CI = process.env.CI === 'true';
const skip = !NGINX && !IN_CI;
if (skip) console.warn('nginx publish test skipped: nginx is not installed; in CI it runs');

describe.skipIf(skip)('nginx with root DIR/current (templates/nginx/prerender.conf)', () => {
  /** @type {string} */ let dir;
  /** @type {number} */ let port;
  /** @type {Awaited<ReturnType<typeof startNginx>> | null} */ let nginx = null;
  let clock = Date.now();
  const later = () => new Date((clock += 1000));

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-nginx-publish-'));
    await writeTree(path.join(dir, 'out'), { pages: 3, generation: 1 });
    await publish(path.join(dir, 'out'), path.join(dir, 'www'), { now: later() });
    nginx = await startNginx({ dir, root: `${path.join(dir, 'www')}/current`, probe: '/p/page0.html' });
    port = nginx.port;
  });

  afterAll(async () => {
    await nginx?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves each new release as soon as current is switched, and the old one after a rollback', async () => {
    const generationAt = async (/** @type {string} */ file) => {
      const answer = await request(port, file);
      expect(answer.status).toBe(200);
      return generationIn(answer.body.toString());
    };
    expect(await generationAt('/p/page1.html')).toBe(1);
    await writeTree(path.join(dir, 'out'), { pages: 3, generation: 2 });
    await publish(path.join(dir, 'out'), path.join(dir, 'www'), { now: later() });
    expect(await generationAt('/p/page1.html')).toBe(2);
    await rollback(path.join(dir, 'www'));
    expect(await generationAt('/p/page1.html')).toBe(1);
    expect((await request(port, '/.prerender/state.ndjson')).status).toBe(404); // never published
  });
});
