// @ts-check
/**
 * A --render crawl of pages that allocate without end: the peak RSS of the
 * crawl's whole process tree (Node, Chromium and its renderers), the wall
 * time and the exit code. Issue #44 asked for this figure: before
 * --render-memory, one such page grew the tree to gigabytes.
 *
 *   node bench/render-memory-bench.js [--bombs 8] [--tabs 8] [--render-memory 512]
 */
import http from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkNumbers, parseBenchArgs } from './lib/args.js';
import { TreeSampler } from './lib/proc.js';

const USAGE = `usage: node bench/render-memory-bench.js [--bombs 8] [--tabs 8] [--render-memory 512] [--render-timeout 20000]
Crawls, with --render, a site whose pages allocate without end (half JavaScript
objects in a loop that never yields, half array buffers), plus two plain pages.
Prints the crawl's exit code, wall time and the peak RSS of its process tree.
  --bombs N            pages that allocate (default 8)
  --tabs N             --render-concurrency (default 8)
  --render-memory MIB  the crawl's --render-memory (default 512, prerender's own)
  --render-timeout MS  the crawl's --render-timeout (default 20000)
  --sample-ms N        /proc sampling interval (default 100)`;

const { values } = parseBenchArgs('render-memory-bench', {
  bombs: { type: 'string', default: '8' },
  tabs: { type: 'string', default: '8' },
  'render-memory': { type: 'string', default: '512' },
  'render-timeout': { type: 'string', default: '20000' },
  'sample-ms': { type: 'string', default: '100' },
}, USAGE);
checkNumbers('render-memory-bench', values, ['bombs', 'tabs', 'render-memory', 'render-timeout', 'sample-ms']);
const [bombs, tabs, memory, timeout, sampleMs] = [values.bombs, values.tabs, values['render-memory'], values['render-timeout'], values['sample-ms']].map(Number);

const SCRIPTS = {
  objects: 'const keep = []; for (;;) keep.push({ a: Math.random(), b: [1, 2, 3] });',
  buffers: 'const keep = []; (function grow() { for (let i = 0; i < 4; i++) keep.push(new Uint8Array(8 << 20).fill(1)); setTimeout(grow, 0); })();',
};

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://bench');
  const bomb = /^\/st\/(objects|buffers)(\d+)\.(asp|js)$/.exec(url.pathname);
  if (bomb?.[3] === 'js') {
    res.setHeader('content-type', 'text/javascript');
    res.end(SCRIPTS[/** @type {'objects' | 'buffers'} */ (bomb[1])]);
    return;
  }
  res.setHeader('content-type', 'text/html');
  if (bomb) res.end(`<!doctype html><title>${bomb[1]}</title><script src="${bomb[1]}${bomb[2]}.js"></script>`);
  else if (url.pathname === '/st/index.asp') res.end(`<!doctype html><title>index</title>${links()}<a href="one.asp">1</a> <a href="two.asp">2</a>`);
  else res.end(`<!doctype html><title>page</title><p>built ${url.pathname}`);
});

function links() {
  return Array.from({ length: bombs }, (_, i) => `<a href="${i % 2 ? 'buffers' : 'objects'}${i}.asp">${i}</a> `).join('');
}

await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
const out = mkdtempSync(path.join(os.tmpdir(), 'prerender-bench-memory-'));
const bin = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'prerender.js');
const args = [bin, 'crawl', `http://127.0.0.1:${port}/st/index.asp`, '-i', '/st/', '-o', out, '-q', '--retries', '0', '--render', '--render-wait', 'load',
  '--render-concurrency', String(tabs), '--render-memory', String(memory), '--render-timeout', String(timeout)];
const started = performance.now();
const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
const tree = new TreeSampler(/** @type {number} */ (child.pid));
let peakKB = 0;
const timer = setInterval(() => { peakKB = Math.max(peakKB, tree.sample().rssKB); }, sampleMs);
const code = await new Promise((resolve) => child.on('exit', (exit) => resolve(exit)));
clearInterval(timer);
const wallS = (performance.now() - started) / 1000;
console.log(`${bombs} allocating pages, ${tabs} tabs, --render-memory ${memory}: exit ${code}, ${wallS.toFixed(1)} s, peak RSS of the process tree ${Math.round(peakKB / 1024)} MB`);
rmSync(out, { recursive: true, force: true });
server.close();
