#!/usr/bin/env node
// @ts-check
/**
 * One server of the serve benchmark, in its own process:
 *   node bench/serve-servers.js sirv DIR
 *   node bench/serve-servers.js prerender DIR [PRICES] [CACHE_BYTES]   (a .json file or an URL template)
 *   node bench/serve-servers.js floor [BYTES]   (bare node:http: the same fixed buffer, default
 *     15,000 bytes, for every request, headers as one array: what any node:http server pays)
 * Listens on 127.0.0.1, port 0; prints `listening on http://HOST:PORT`;
 * SIGTERM stops it. prerender runs as `prerender serve` does (runServeCommand:
 * its defaults, its drain on SIGTERM).
 */
import http from 'node:http';
import sirv from 'sirv';
import { runServeCommand } from '../lib/serve/index.js';
import { parseBenchArgs, usageError } from './lib/args.js';

const SERVERS = 'sirv DIR | floor [BYTES] | prerender DIR [PRICES] [CACHE_BYTES]';
const USAGE = `usage: node bench/serve-servers.js sirv DIR
       node bench/serve-servers.js prerender DIR [PRICES] [CACHE_BYTES]   (a .json file or an URL template)
       node bench/serve-servers.js floor [BYTES]   (bare node:http: the same fixed buffer, default
         15,000 bytes, for every request, headers as one array: what any node:http server pays)
One server of the serve benchmark, in its own process. Listens on 127.0.0.1,
port 0; prints \`listening on http://HOST:PORT\`; SIGTERM stops it. prerender
runs as \`prerender serve\` does (runServeCommand: its defaults, its drain on SIGTERM).`;

const { positionals } = parseBenchArgs('serve-servers', {}, USAGE, { allowPositionals: true });
const [kind, dir, prices, cacheBytes] = positionals;
if (kind === undefined) usageError('serve-servers', `which server? ${SERVERS}`);
if ((kind === 'sirv' || kind === 'prerender') && dir === undefined) usageError('serve-servers', `${kind} needs a DIR`);
for (const [name, text] of /** @type {const} */ ([['BYTES', kind === 'floor' ? dir : undefined], ['CACHE_BYTES', kind === 'prerender' ? cacheBytes : undefined]])) {
  if (text && !(Number.isSafeInteger(Number(text)) && Number(text) >= 0)) usageError('serve-servers', `${name} must be a whole number >= 0, got ${JSON.stringify(text)}`);
}

if (kind === 'sirv') {
  // sirv in production mode: file headers computed once at start-up.
  const handler = sirv(dir, { dev: false, etag: true });
  const server = http.createServer((req, res) => handler(req, res, () => { res.statusCode = 404; res.end(); }));
  server.listen(0, '127.0.0.1', () => {
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
    process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
} else if (kind === 'floor') {
  const body = Buffer.alloc(Number(dir ?? 15_000), 'x');
  const headers = ['Content-Type', 'text/html; charset=utf-8', 'Content-Length', String(body.length)];
  const server = http.createServer((req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
    process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
} else if (kind === 'prerender') {
  // As `prerender serve` runs it (its defaults included, e.g. the RSS bound), on port 0.
  const stop = new AbortController();
  process.on('SIGTERM', () => stop.abort());
  await runServeCommand(dir, { port: 0, host: '127.0.0.1', prices: prices || null, watch: false, ...(cacheBytes ? { pageCacheBytes: Number(cacheBytes) } : {}) }, { stdout: process.stdout, stderr: process.stderr, signal: stop.signal });
  process.exit(0);
} else {
  usageError('serve-servers', `unknown server ${JSON.stringify(kind)}: ${SERVERS}`);
}
