// @ts-check
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../lib/serve/index.js';
import { parseRequestTarget } from '../lib/serve/paths.js';
import { buildServeTree } from '../fixtures/serve/tree.js';
import { HOSTILE_TARGETS } from '../fixtures/serve/hostile-targets.js';
import { closeServer, listen, rawRequest, request } from '../fixtures/serve/http.js';

describe('parseRequestTarget', () => {
  it.each([
    ['/', { ok: true, path: '', dir: false, search: '' }],
    ['/st/product1.htm?zip=1', { ok: true, path: 'st/product1.htm', dir: false, search: '?zip=1' }],
    ['/infodir/', { ok: true, path: 'infodir', dir: true, search: '' }],
    ['//st//./product1.htm', { ok: true, path: 'st/product1.htm', dir: false, search: '' }],
    ['/caf%C3%A9.htm', { ok: true, path: 'café.htm', dir: false, search: '' }],
    ['/%252e%252e/x', { ok: true, path: '%2e%2e/x', dir: false, search: '' }],
    ['/a/b?x=../..', { ok: true, path: 'a/b', dir: false, search: '?x=../..' }],
    ['/.well-known/security.txt', { ok: true, path: '.well-known/security.txt', dir: false, search: '' }],
    // absolute-form (RFC 9112 3.2.2): the host is ignored, the path checked the same way
    ['http://shop.example/st/product1.htm?zip=1', { ok: true, path: 'st/product1.htm', dir: false, search: '?zip=1' }],
    ['HTTPS://shop.example:8443', { ok: true, path: '', dir: false, search: '' }],
    ['http://shop.example?zip=1', { ok: true, path: '', dir: false, search: '?zip=1' }],
    ['http://evil.example/etc/passwd', { ok: true, path: 'etc/passwd', dir: false, search: '' }],
  ])('accepts %s', (url, expected) => {
    expect(parseRequestTarget(url)).toEqual(expected);
  });

  it.each(HOSTILE_TARGETS)('rejects %s (%i)', (url, status) => {
    const result = parseRequestTarget(url);
    expect(result.ok).toBe(false);
    expect(/** @type {any} */ (result).status).toBe(status);
  });
});

describe('no escape from the directory, over HTTP', () => {
  /** @type {string} */
  let dir;
  /** @type {import('node:http').Server} */
  let server;
  /** @type {number} */
  let port;
  const SECRET = 'TOP-SECRET-OUTSIDE-THE-ROOT';

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-paths-'));
    const out = path.join(dir, 'out');
    fs.mkdirSync(out);
    buildServeTree(out, { products: 1 });
    fs.writeFileSync(path.join(dir, 'secret.txt'), SECRET);
    fs.mkdirSync(path.join(dir, 'outside'));
    fs.writeFileSync(path.join(dir, 'outside/index.html'), SECRET);
    fs.writeFileSync(path.join(out, '.env'), SECRET);
    fs.symlinkSync(path.join(dir, 'secret.txt'), path.join(out, 'link-out.txt'));
    fs.symlinkSync(path.join(dir, 'outside'), path.join(out, 'dir-out'));
    fs.symlinkSync(path.join(dir, 'secret.txt'), path.join(out, 'assets/plain.txt.gz'));
    fs.symlinkSync(path.join(out, 'assets/plain.txt'), path.join(out, 'link-in.txt'));
    // A sibling directory whose name starts like the root must not count as inside.
    fs.mkdirSync(path.join(dir, 'out-evil'));
    fs.writeFileSync(path.join(dir, 'out-evil/x.txt'), SECRET);
    server = createServer({ root: out, logger: { warn: () => {} } });
    port = await listen(server);
  });
  afterAll(async () => {
    await closeServer(server);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    '/../secret.txt',
    '/%2e%2e/secret.txt',
    '/%2E%2E/secret.txt',
    '/.%2e/secret.txt',
    '/st/%2e%2e/%2e%2e/secret.txt',
    '/..%2fsecret.txt',
    '/%2e%2e%2fsecret.txt',
    '/..%5csecret.txt',
    '/..\\secret.txt',
    '/%c0%ae%c0%ae/secret.txt',
    '/%252e%252e/secret.txt',
    '/link-out.txt',
    '/dir-out/',
    '/dir-out/index.html',
    '/.env',
    '/../out-evil/x.txt',
    'http://127.0.0.1/../secret.txt',
    `http://127.0.0.1:${0}/secret.txt`,
  ])('does not serve %s', async (target) => {
    const res = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.text).not.toContain(SECRET);
  });

  it('rejects a NUL byte in the raw request line', async () => {
    const res = await rawRequest(port, Buffer.from('GET /secret.txt\u0000.htm HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'latin1'));
    expect(res.status).toBe(400);
    expect(res.text).not.toContain(SECRET);
  });

  it('does not serve a precompressed sibling that links outside', async () => {
    const res = await request(port, '/assets/plain.txt', { headers: { 'accept-encoding': 'gzip' } });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.text).toBe('plain text\n');
  });

  it('follows links that stay inside the root', async () => {
    const res = await request(port, '/link-in.txt');
    expect(res.status).toBe(200);
    expect(res.text).toBe('plain text\n');
  });
});
