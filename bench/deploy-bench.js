#!/usr/bin/env node
// @ts-check
/**
 * The Content Deployment churn table: a tree of N files deployed over
 * ssh://127.0.0.1 (a real sshd started here) at 0 %, 10 %, 30 % and 100 %
 * churn, to one and to three targets.
 *
 *   node bench/deploy-bench.js [--files 20000] [--size 15000] [--rounds 3]
 *                              [--churn 0,10,30,100] [--targets 1,3] [--verify sent|all]
 *
 * Each measured deploy starts from targets that hold the tree as it is; then
 * CHURN % of the pages get new bytes (the others are not touched, as a
 * re-crawl leaves them), the manifest is written again (so even 0 % churn
 * changes one file, as a real re-crawl does), and `prerender deploy` runs as
 * a child process. Measured: wall time; CPU (user+sys) of the deploy process
 * and everything it waited for (ssh, tar, cp) plus the CPU the sshd spent on
 * its sessions (the remote sh, cp, tar, sha256sum); file data sent (the bytes
 * of the files in the stream, per target); peak RSS of the node process.
 * Configurations are interleaved, median of the rounds.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatManifest } from '../lib/output/manifest/index.js';
import { startSshd } from '../test/helpers/sshd.js';
import { checkNumbers, parseBenchArgs } from './lib/args.js';
import { clockTicks } from './lib/proc.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin/prerender.js');
const RUSAGE = path.join(ROOT, 'bench/lib/rusage.js');

const USAGE = `usage: node bench/deploy-bench.js [--files 20000] [--size 15000] [--rounds 3]
                                  [--churn 0,10,30,100] [--targets 1,3] [--verify sent|all]
The Content Deployment churn table: a tree of N files deployed over ssh://127.0.0.1
(a real sshd started here) at 0 %, 10 %, 30 % and 100 % churn, to one and to three targets.
  --files N        files in the tree (default 20000)
  --size BYTES     about BYTES bytes a file, spread 0.5x to 1.5x (default 15000)
  --rounds N       rounds, configurations interleaved, median of the rounds (default 3)
  --churn LIST     % of the pages that get new bytes before a measured deploy (default 0,10,30,100)
  --targets LIST   numbers of targets deployed to (default 1,3)
  --verify MODE    prerender deploy --verify: sent or all (default sent)`;

const { values } = parseBenchArgs('deploy-bench', {
  files: { type: 'string', default: '20000' },
  size: { type: 'string', default: '15000' },
  rounds: { type: 'string', default: '3' },
  churn: { type: 'string', default: '0,10,30,100' },
  targets: { type: 'string', default: '1,3' },
  verify: { type: 'string', default: 'sent' },
}, USAGE);
checkNumbers('deploy-bench', values, ['files', 'size', 'rounds'], ['churn', 'targets']);
const FILES = Number(values.files);
const SIZE = Number(values.size);
const ROUNDS = Number(values.rounds);
const CHURNS = String(values.churn).split(',').map(Number);
const TARGET_COUNTS = String(values.targets).split(',').map(Number);

/** CPU ms of a process and of the children it waited for, from /proc. @param {number | 'self'} pid */
async function cpuWithChildren(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime 14, stime 15, cutime 16, cstime 17 (1-based over the whole line)
  const ticks = [11, 12, 13, 14].map((i) => Number(fields[i]));
  return { self: ((ticks[0] + ticks[1]) * 1000) / clockTicks(), children: ((ticks[2] + ticks[3]) * 1000) / clockTicks() };
}

/** @param {number[]} list */
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];

async function main() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-deploy-bench-'));
  const sshd = await startSshd(path.join(dir, 'sshd'));
  const sshdPid = sshd.pid;
  const out = path.join(dir, 'out');
  try {
    // The tree: FILES pages of about SIZE bytes (sizes spread 0.5x to 1.5x), not compressible to nothing.
    await mkdir(path.join(out, 'st'), { recursive: true });
    /** @type {{ url: string, file: string, status: number, contentType: string, bytes: number, sha256: string, placeholders: [] }[]} */
    const pages = [];
    const filler = randomBytes(SIZE * 2).toString('base64');
    let generation = 1;
    /** @param {number} i */
    const writePage = async (i) => {
      const size = Math.round(SIZE * (0.5 + ((i * 7919) % 1000) / 1000));
      const start = (i * 131) % SIZE;
      const body = Buffer.from(`<!doctype html><title>product ${i}</title><p>generation ${generation}</p>${filler.slice(start, start + size)}\n`);
      const file = `st/product${i}.htm`;
      await writeFile(path.join(out, file), body);
      pages[i] = { url: `http://shop.test/st/product.asp?SKUSetID=${i}`, file, status: 200, contentType: 'text/html', bytes: body.length, sha256: createHash('sha256').update(body).digest('hex'), placeholders: [] };
    };
    const writeManifest = () => writeFile(path.join(out, 'prerender-manifest.json'), formatManifest({ roots: ['http://shop.test/st/dir.asp'], scope: {}, placeholderMode: 'filter', pages }));
    for (let i = 0; i < FILES; i++) await writePage(i);
    await writeManifest();

    const ssh = ['--ssh-key', sshd.userKey, '--ssh-option', ...sshd.sshOption];
    const targetSets = new Map(TARGET_COUNTS.map((n) => [n, Array.from({ length: n }, (_, k) => sshd.url(path.join(dir, `t${n}-${k}`)))]));
    /**
     * @param {string[]} targets
     * @param {boolean} measure
     */
    const runDeploy = async (targets, measure) => {
      const rusageFile = path.join(dir, 'rusage.json');
      const before = await cpuWithChildren('self');
      const remoteBefore = await cpuWithChildren(sshdPid);
      const started = process.hrtime.bigint();
      const child = spawn(process.execPath, ['--import', RUSAGE, BIN, 'deploy', out, ...targets, '--json', '--keep', '2', '--verify', String(values.verify), ...ssh], {
        stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PRERENDER_BENCH_RUSAGE: rusageFile },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => { stdout += chunk; });
      child.stderr.on('data', (chunk) => { stderr += chunk; });
      const code = await new Promise((resolve) => child.once('exit', resolve));
      const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
      const after = await cpuWithChildren('self');
      // The sshd reaps its session processes a moment after they end: let it.
      await new Promise((resolve) => setTimeout(resolve, measure ? 300 : 0));
      const remoteAfter = await cpuWithChildren(sshdPid);
      if (code !== 0) throw new Error(`deploy exited ${code}: ${stderr}\n${stdout.slice(0, 2000)}`);
      const result = JSON.parse(stdout);
      const usage = JSON.parse(await readFile(rusageFile, 'utf8'));
      return {
        wallMs,
        localCpuMs: after.children - before.children,
        remoteCpuMs: (remoteAfter.self + remoteAfter.children) - (remoteBefore.self + remoteBefore.children),
        sentBytes: result.targets.reduce((/** @type {number} */ sum, /** @type {any} */ t) => sum + t.sent.bytes, 0),
        sentFiles: result.targets.reduce((/** @type {number} */ sum, /** @type {any} */ t) => sum + t.sent.files, 0),
        changed: result.targets[0].churn.changed.files,
        peakRssMb: usage.maxRSS / 1024,
      };
    };

    /** @type {Map<string, Awaited<ReturnType<typeof runDeploy>>[]>} */
    const results = new Map();
    for (let round = 0; round < ROUNDS; round++) {
      for (const churn of CHURNS) {
        for (const [n, targets] of targetSets) {
          await runDeploy(targets, false); // targets hold the tree as it is
          generation++;
          const count = Math.round((FILES * churn) / 100);
          const offset = (round * 977 + churn * 31) % FILES;
          for (let k = 0; k < count; k++) await writePage((offset + k) % FILES);
          await writeManifest();
          const measured = await runDeploy(targets, true);
          const key = `${churn}|${n}`;
          results.set(key, [...(results.get(key) ?? []), measured]);
          process.stderr.write(`round ${round + 1}: ${churn}% churn, ${n} target(s): ${(measured.wallMs / 1000).toFixed(2)} s, ${measured.sentFiles} files sent\n`);
        }
      }
    }
    const cpu = (await readFile('/proc/cpuinfo', 'utf8')).match(/model name\s*:\s*(.*)/)?.[1] ?? 'unknown CPU';
    console.log(`\n${FILES.toLocaleString('en-US')} files of ~${SIZE.toLocaleString('en-US')} bytes, ssh://127.0.0.1, --verify ${values.verify}, median of ${ROUNDS}; ${cpu}, ${os.cpus().length} cores; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
    console.log('| churn | targets | files changed (per target) | file data sent (all targets) | wall time | % of 100 % churn | CPU local (ms) | CPU remote (ms) | CPU ms per file | peak RSS (node) |');
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const [n] of targetSets) {
      const full = median((results.get(`100|${n}`) ?? []).map((r) => r.wallMs));
      for (const churn of CHURNS) {
        const runs = results.get(`${churn}|${n}`) ?? [];
        const wall = median(runs.map((r) => r.wallMs));
        const local = median(runs.map((r) => r.localCpuMs));
        const remote = median(runs.map((r) => r.remoteCpuMs));
        console.log(`| ${churn} % | ${n} | ${median(runs.map((r) => r.changed)).toLocaleString('en-US')} | ${(median(runs.map((r) => r.sentBytes)) / 1024 / 1024).toFixed(1)} MiB | ${(wall / 1000).toFixed(2)} s | ${full ? Math.round((wall / full) * 100) + ' %' : ''} | ${Math.round(local)} | ${Math.round(remote)} | ${((local + remote) / (FILES * n)).toFixed(3)} | ${Math.round(median(runs.map((r) => r.peakRssMb)))} MB |`);
      }
    }
    console.log(`\nRuns (wall s): ${[...results].map(([key, runs]) => `${key.replace('|', '%/')}t: ${runs.map((r) => (r.wallMs / 1000).toFixed(2)).join(' / ')}`).join('; ')}`);
  } finally {
    await sshd.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
