// @ts-check
/**
 * `rediss://`: a shared crawl through a redis-server that speaks TLS only,
 * with a throwaway CA and server certificate made here by openssl. The
 * coordinator, a worker and `status` connect with TLS and verify the
 * server's certificate (the CA given to Node with NODE_EXTRA_CA_CERTS); a
 * process that does not trust the CA is refused, with one line. Skipped
 * outside CI without redis-server; in CI it must run (and openssl be there).
 */
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAVE_REDIS, startRedis } from './helpers/redis.js';
import { BIN } from './helpers/cli.js';

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis;
/** @type {http.Server} */
let site;
let origin = '';
let dir = '';

/**
 * Run the CLI with `env` added; bounded.
 * @param {string[]} args
 * @param {Record<string, string>} [env]
 * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
 */
function run(args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env, NODE_EXTRA_CA_CERTS: env.NODE_EXTRA_CA_CERTS ?? '' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** @param {string[]} args */
const openssl = (args) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore', timeout: 30_000 });

describe.skipIf(!HAVE_REDIS)('a crawl shared through rediss:// (TLS)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-redis-tls-'));
    openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=prerender test CA']);
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
    await writeFile(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'ext.cnf']);
    redis = await startRedis({ tls: { cert: path.join(dir, 'server.crt'), key: path.join(dir, 'server.key'), ca: path.join(dir, 'ca.crt') } });
    site = http.createServer((request, response) => {
      const body = request.url === '/'
        ? `<html><body>${Array.from({ length: 12 }, (_, i) => `<a href="/p${i}">${i}</a>`).join('')}</body></html>`
        : `<html><body><a href="/">home</a> ${request.url}</body></html>`;
      setTimeout(() => response.writeHead(200, { 'content-type': 'text/html' }).end(body), 10);
    });
    await new Promise((resolve) => site.listen(0, '127.0.0.1', () => resolve(undefined)));
    origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (site.address()).port}`;
  });
  afterAll(async () => {
    await redis?.stop();
    site?.closeAllConnections();
    await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
    await rm(dir, { recursive: true, force: true });
  });

  it('rediss:// gives ioredis a TLS connection', () => {
    const client = new Redis(redis.url, { lazyConnect: true });
    expect(redis.url).toMatch(/^rediss:\/\//);
    expect(client.options.tls).toBeTruthy();
    client.disconnect();
  });

  it('the coordinator, a worker and status connect with TLS and verify the server', async () => {
    const env = { NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.crt') };
    const frontier = ['--frontier', redis.url, '--crawl-id', 'tls'];
    const [crawl, worker] = await Promise.all([
      run(['crawl', `${origin}/`, ...frontier, '-o', path.join(dir, 'out'), '-q', '-c', '2', '--json'], env),
      run(['worker', ...frontier, '-q', '-c', '2'], env),
    ]);
    expect([crawl.code, worker.code, crawl.stderr + worker.stderr]).toEqual([0, 0, '']);
    expect(JSON.parse(crawl.stdout).pages).toBe(13);
    const status = await run(['status', ...frontier, '--json'], env);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ phase: 'finished', queued: 0, leased: 0, done: 13 });
  });

  it('a process that does not trust the server\'s CA is refused: exit 2, one line', async () => {
    const refused = await run(['worker', '--frontier', redis.url, '--crawl-id', 'tls', '-q', '--frontier-timeout', '2']);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/rediss:\/\/127\.0\.0\.1:\d+.*(CERT|certificate)/);
  });
});
