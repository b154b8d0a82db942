// @ts-check
/**
 * nginx serving a published tree through DIR/current, with the template's
 * root line: every publish is seen at once and whole; a rollback too.
 * Skipped only outside CI when nginx is absent; in CI (CI=true) it must run.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, rollback } from '../lib/index.js';
import { request, waitFor } from '../fixtures/serve/http.js';
import { generationIn, writeTree } from './helpers/deploy-tree.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const IN_CI = process.env.CI === 'true';
const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'].find((file) => fs.existsSync(file)) ?? null;
const skip = !NGINX && !IN_CI;
if (skip) console.warn('nginx publish test skipped: nginx is not installed; in CI it runs');

describe.skipIf(skip)('nginx with root DIR/current (templates/nginx/prerender.conf)', () => {
  /** @type {string} */ let dir;
  /** @type {number} */ let port;
  /** @type {import('node:child_process').ChildProcess | null} */ let nginx = null;
  let clock = Date.now();
  const later = () => new Date((clock += 1000));

  beforeAll(async () => {
    if (!NGINX) throw new Error('nginx is not installed; .ci/run installs Debian\'s nginx package');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-nginx-publish-'));
    await writeTree(path.join(dir, 'out'), { pages: 3, generation: 1 });
    await publish(path.join(dir, 'out'), path.join(dir, 'www'), { now: later() });
    const probe = net.createServer();
    await new Promise((resolve) => probe.listen(0, '127.0.0.1', () => resolve(undefined)));
    port = /** @type {net.AddressInfo} */ (probe.address()).port;
    await new Promise((resolve) => probe.close(resolve));
    let site = fs.readFileSync(path.join(ROOT, 'templates/nginx/prerender.conf'), 'utf8');
    for (const [from, to] of [
      ['listen 8080;', `listen 127.0.0.1:${port};`],
      ['root /srv/prerender/current;', `root ${path.join(dir, 'www')}/current;`],
      ['/var/cache/nginx/prerender-prices', path.join(dir, 'price-cache')],
    ]) {
      expect(site.split(from)).toHaveLength(2);
      site = site.replace(from, to);
    }
    fs.writeFileSync(path.join(dir, 'site.conf'), site);
    const temp = (/** @type {string} */ name) => path.join(dir, name);
    fs.writeFileSync(temp('nginx.conf'), `
${process.getuid?.() === 0 ? 'user root;' : ''}
daemon off;
worker_processes 1;
pid ${temp('nginx.pid')};
error_log ${temp('error.log')} warn;
events { worker_connections 64; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  client_body_temp_path ${temp('body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  include ${temp('site.conf')};
}
`);
    nginx = spawn(NGINX, ['-p', dir, '-c', temp('nginx.conf'), '-e', temp('error.log')], { stdio: 'ignore' });
    await waitFor(async () => {
      if (nginx?.exitCode !== null) throw new Error(`nginx exited: ${fs.existsSync(temp('error.log')) ? fs.readFileSync(temp('error.log'), 'utf8') : ''}`);
      return request(port, '/p/page0.html', { timeoutMs: 500 }).then((r) => r.status === 200, () => false);
    }, { timeoutMs: 10_000, what: 'nginx to answer' });
  }, 30_000);

  afterAll(async () => {
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((resolve) => nginx?.once('exit', resolve));
      nginx.kill('SIGTERM');
      await exited;
    }
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
