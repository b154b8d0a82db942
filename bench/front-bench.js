#!/usr/bin/env node
// @ts-check
/**
 * The front benchmark (issue 39):
 *
 *   node bench/front-bench.js [--products 200] [--duration 5] [--warmup 1] [--rounds 3] [--connections 32] [--baseline DIR]
 *
 * The fixture shop (its own process) crawled into a tree; then two fronts
 * before it, each its own process on 127.0.0.1: `prerender serve OUT
 * --origin` with a JSON price file, and nginx (one worker) on the
 * configuration `prerender front OUT --nginx` writes. Three loads, rounds
 * interleaved (nginx, prerender, nginx, ...): static pages at their crawled
 * URLs (/st/product.asp?SKUSetID=N, prices filled by prerender, unfilled by
 * nginx), proxied dynamic requests (/st/cart.asp?add=N: the shop answers
 * with a Set-Cookie), and the manifest's redirect (/st/old.asp). autocannon
 * in this process at --connections for --duration s after --warmup s.
 * Per run: req/s and the front's CPU per request (user + sys of its process
 * tree from /proc over the run / requests); the shop's CPU per request for
 * the proxied load. Medians of the rounds, and the fronts' peak RSS.
 *
 * --baseline DIR: a third front, `prerender serve` from another checkout
 * (e.g. `git worktree add DIR main`), in the same rounds: an A/B of a change.
 *
 * Prints a markdown table and writes bench/results/front-*.json.
 * Exit status: 0 proxied requests cost prerender at most 2x nginx's CPU, 1 not, 2 the run failed.
 */
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { checkNumbers, parseBenchArgs } from './lib/args.js';
import { findNginx, freePort } from './lib/nginx.js';
import { machineBusyMs, memoryOf, treeCpuMs } from './lib/proc.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
const BIN = path.join(REPO, 'bin', 'prerender.js');

const USAGE = `usage: node bench/front-bench.js [--products 200] [--duration 5] [--warmup 1] [--rounds 3] [--connections 32] [--baseline DIR]`;
const { values } = parseBenchArgs('front-bench', {
  products: { type: 'string', default: '200' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '1' },
  rounds: { type: 'string', default: '3' },
  connections: { type: 'string', default: '32' },
  baseline: { type: 'string' },
}, USAGE);
checkNumbers('front-bench', values, ['products', 'duration', 'warmup', 'rounds', 'connections']);
const PRODUCTS = Number(values.products);
const DURATION = Number(values.duration);
const WARMUP = Number(values.warmup);
const ROUNDS = Number(values.rounds);
const CONNECTIONS = Number(values.connections);

/**
 * A child process whose stdout line matching `ready` gives its URL.
 * @param {string} command
 * @param {string[]} args
 * @param {RegExp} ready
 */
async function startProcess(command, args, ready) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr.on('data', (c) => (output += c));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} did not start: ${output}`)), 30_000);
    child.stdout.on('data', (c) => {
      output += c;
      const found = ready.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    child.on('exit', () => reject(new Error(`${command} exited: ${output}`)));
  });
  return { url: /** @type {string} */ (url), pid: /** @type {number} */ (child.pid), stop: () => child.kill('SIGTERM') };
}

/**
 * nginx (one worker) on a site configuration.
 * @param {string} dir
 * @param {string} site
 */
async function startNginx(dir, site) {
  const bin = findNginx();
  if (!bin) throw new Error('nginx is not installed (apt-get install nginx)');
  fs.writeFileSync(path.join(dir, 'site.conf'), site);
  fs.writeFileSync(path.join(dir, 'nginx.conf'), `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  keepalive_requests 100000;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  include ${dir}/site.conf;
}
`);
  const child = spawn(bin, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: 'ignore' });
  const port = Number(/listen 127\.0\.0\.1:(\d+);/.exec(site)?.[1]);
  for (let i = 0; i < 200; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/st/product1.htm`).then((r) => r.status === 200, () => false);
    if (up) break;
    if (child.exitCode !== null) throw new Error(`nginx exited: ${fs.readFileSync(path.join(dir, 'error.log'), 'utf8')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url: `http://127.0.0.1:${port}`, pid: /** @type {number} */ (child.pid), stop: () => child.kill('SIGTERM') };
}

/**
 * One autocannon run on `front`.
 * @param {{ url: string, pid: number }} front
 * @param {string[]} paths
 * @param {number} seconds
 * @param {number} originPid
 * @param {number} expected the status every answer must have
 */
async function run(front, paths, seconds, originPid, expected) {
  const cpuBefore = treeCpuMs(front.pid);
  const originBefore = treeCpuMs(originPid);
  const busyBefore = machineBusyMs();
  let bad = 0;
  const result = await autocannon({
    url: front.url,
    connections: CONNECTIONS,
    duration: seconds,
    requests: paths.map((p) => ({ method: 'GET', path: p })),
    expectBody: undefined,
  }).then((r) => r);
  const cpuMs = treeCpuMs(front.pid) - cpuBefore;
  const originMs = treeCpuMs(originPid) - originBefore;
  for (const [status, count] of Object.entries(result.statusCodeStats ?? {})) if (Number(status) !== expected) bad += Number(/** @type {any} */ (count).count ?? count);
  if (bad > 0) throw new Error(`${front.url}: ${bad} answers other than ${expected}`);
  const total = Math.max(1, result.requests.total);
  return {
    rps: result.requests.average,
    total,
    errors: result.errors + result.timeouts,
    cpuUsPerRequest: (cpuMs * 1000) / total,
    originUsPerRequest: (originMs * 1000) / total,
    machineBusy: (machineBusyMs() - busyBefore) / (seconds * 1000 * os.cpus().length),
  };
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-front-bench-'));
  /** @type {(() => void)[]} */
  const stops = [];
  try {
    const shop = await startProcess(process.execPath, ['--input-type=module', '-e',
      `import { startShop } from ${JSON.stringify(path.join(REPO, 'fixtures', 'shop.js'))}; const s = await startShop({ products: ${PRODUCTS}, count: 50 }); console.log('origin ' + s.origin);`], /origin (http:\/\/\S+)/);
    stops.push(shop.stop);
    const out = path.join(dir, 'out');
    execFileSync(process.execPath, [BIN, 'crawl', `${shop.url}/st/dir.asp`, `${shop.url}/st/old.asp`, '-i', '/st/dir.asp', '-i', '/st/product.asp', '-i', '/st/old.asp', '-o', out, '-q'], { stdio: 'inherit' });
    fs.writeFileSync(path.join(dir, 'prices.json'), JSON.stringify(Object.fromEntries(Array.from({ length: PRODUCTS }, (_, i) => [`SKU-${i + 1}`, { '*': `$${i + 1}.99` }]))));
    /** @param {string} bin */
    const startFront = async (bin) => {
      const front = await startProcess(process.execPath, [bin, 'serve', out, '--origin', shop.url, '--port', '0', '--prices', path.join(dir, 'prices.json')], /listening on (http:\/\/\S+)/);
      stops.push(front.stop);
      return front;
    };
    const prerender = await startFront(BIN);
    const baseline = values.baseline ? await startFront(path.join(path.resolve(values.baseline), 'bin', 'prerender.js')) : null;
    const nginxPort = await freePort();
    execFileSync(process.execPath, [BIN, 'front', out, '--nginx', '--origin', shop.url, '--listen', `127.0.0.1:${nginxPort}`, '--output', path.join(dir, 'front.conf')], { stdio: ['ignore', 'ignore', 'ignore'] });
    const nginxDir = path.join(dir, 'nginx');
    fs.mkdirSync(nginxDir);
    const nginx = await startNginx(nginxDir, fs.readFileSync(path.join(dir, 'front.conf'), 'utf8'));
    stops.push(nginx.stop);

    const loads = /** @type {const} */ ([
      ['static pages (crawled URLs)', Array.from({ length: PRODUCTS }, (_, i) => `/st/product.asp?SKUSetID=${i + 1}`), 200],
      ['proxied dynamic requests', Array.from({ length: PRODUCTS }, (_, i) => `/st/cart.asp?add=${i + 1}`), 200],
      ['manifest redirects', ['/st/old.asp'], 301],
    ]);
    /** @type {[string, { url: string, pid: number }][]} */
    const fronts = [['nginx', nginx], ['prerender', prerender]];
    if (baseline) fronts.push(['baseline', baseline]);
    /** @type {Record<string, Record<string, ReturnType<typeof run> extends Promise<infer R> ? R[] : never>>} */
    const results = {};
    for (const [load, paths, status] of loads) {
      results[load] = Object.fromEntries(fronts.map(([name]) => [name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, front] of fronts) {
          if (WARMUP > 0) await run(front, paths, WARMUP, shop.pid, status);
          results[load][name].push(await run(front, paths, DURATION, shop.pid, status));
        }
      }
    }
    const peak = Object.fromEntries(fronts.map(([name, front]) => [name, name === 'nginx'
      ? Math.max(...fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number).filter((pid) => pid === front.pid || readPpid(pid) === front.pid).map((pid) => memoryOf(pid)?.hwmKB ?? 0))
      : memoryOf(front.pid)?.hwmKB ?? 0]));

    const lines = ['| load | nginx req/s | nginx CPU µs/req | prerender req/s | prerender CPU µs/req | prerender / nginx CPU | shop CPU µs/req (nginx / prerender) |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: |'];
    let ok = true;
    for (const [load] of loads) {
      const n = results[load].nginx;
      const p = results[load].prerender;
      const ratio = median(p.map((r) => r.cpuUsPerRequest)) / median(n.map((r) => r.cpuUsPerRequest));
      if (load.startsWith('proxied') && ratio > 2) ok = false;
      lines.push(`| ${load} | ${Math.round(median(n.map((r) => r.rps)))} | ${median(n.map((r) => r.cpuUsPerRequest)).toFixed(0)} | ${Math.round(median(p.map((r) => r.rps)))} | ${median(p.map((r) => r.cpuUsPerRequest)).toFixed(0)} | ${ratio.toFixed(2)}x | ${load.startsWith('proxied') ? `${median(n.map((r) => r.originUsPerRequest)).toFixed(0)} / ${median(p.map((r) => r.originUsPerRequest)).toFixed(0)}` : '-'} |`);
    }
    if (baseline) lines.push('', ...baselineLines(results));
    lines.push('', `Peak RSS: nginx ${(peak.nginx / 1024).toFixed(1)} MB (master + worker, the largest), prerender ${(peak.prerender / 1024).toFixed(1)} MB${baseline ? `, baseline ${(peak.baseline / 1024).toFixed(1)} MB` : ''}.`);
    const busy = Object.values(results).flatMap((r) => Object.values(r).flat()).map((r) => r.machineBusy);
    lines.push(`Machine busy during the runs: median ${(median(busy) * 100).toFixed(0)} % of ${os.cpus().length} cores.`);
    const text = lines.join('\n');
    process.stdout.write(`${text}\n`);
    fs.mkdirSync(path.join(HERE, 'results'), { recursive: true });
    fs.writeFileSync(path.join(HERE, 'results', `front-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify({ options: values, results, peak }, null, 2));
    process.exitCode = ok ? 0 : 1;
  } finally {
    for (const stop of stops.reverse()) stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The baseline beside prerender, from the same rounds: its CPU per request, and prerender's over it.
 * @param {Record<string, Record<string, { cpuUsPerRequest: number }[]>>} results
 */
function baselineLines(results) {
  const lines = ['| load | baseline CPU µs/req | prerender CPU µs/req | prerender / baseline | baseline / nginx |', '| --- | ---: | ---: | ---: | ---: |'];
  for (const [load, r] of Object.entries(results)) {
    const [n, p, b] = [r.nginx, r.prerender, r.baseline].map((runs) => median(runs.map((x) => x.cpuUsPerRequest)));
    lines.push(`| ${load} | ${b.toFixed(0)} | ${p.toFixed(0)} | ${(p / b).toFixed(2)}x | ${(b / n).toFixed(2)}x |`);
  }
  return lines;
}

/** @param {number} pid */
function readPpid(pid) {
  try {
    return Number(/PPid:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  } catch {
    return -1;
  }
}

main().catch((error) => {
  process.stderr.write(`front-bench: ${error.stack ?? error}\n`);
  process.exit(2);
});
