// @ts-check
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pagesWritten } from '../bench/lib/pages-written.js';
import { summarise } from '../bench/lib/crawl-report.js';

/**
 * crawl-bench --peers: prerender, wget, HTTrack and website-scraper crawl the
 * same tiny shop, and every one of them must have written its pages. In CI
 * all three peers are installed (.ci/run) and must run.
 */

const BENCH = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bench');
const IN_CI = process.env.CI === 'true';

/** @param {string} command */
const onPath = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;

const INSTALLED = {
  wget: onPath('wget'),
  httrack: onPath('httrack'),
  scraper: existsSync(path.join(BENCH, 'peers', 'node_modules', 'website-scraper', 'package.json')),
};
const PEERS = /** @type {(keyof typeof INSTALLED)[]} */ (Object.keys(INSTALLED)).filter((peer) => INSTALLED[peer] || IN_CI);
const absent = Object.entries(INSTALLED).filter(([, installed]) => !installed).map(([peer]) => peer);
if (absent.length > 0 && !IN_CI) console.warn(`crawl-bench --peers test runs without ${absent.join(', ')}: not installed here; in CI they run`);

/**
 * @param {string[]} args
 * @param {NodeJS.ProcessEnv} env
 * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
 */
function bench(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(BENCH, 'crawl-bench.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    // A bound on a hang, not on speed.
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`crawl-bench did not end; stderr: ${stderr}`)); }, 240_000);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

describe('crawl-bench --peers', () => {
  /** @type {string} */
  let dir;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-bench-peers-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it(`prerender and ${PEERS.join(', ')} each write all 21 pages of a 20-product shop`, async () => {
    if (IN_CI) expect(absent, 'peers that CI must have (.ci/run installs them)').toEqual([]);
    const results = path.join(dir, 'results');
    const { code, stdout, stderr } = await bench(
      ['--products', '20', '--rounds', '1', '--settle', '0', '--quiet-timeout', '0', '--peers', PEERS.join(','), '--results', results],
      { ...process.env, TMPDIR: dir },
    );
    // 1 is a target missed: a 20-page crawl is mostly start-up, over 1 ms of CPU a page.
    expect([0, 1], stderr).toContain(code);
    const [file] = await readdir(results);
    const report = JSON.parse(await readFile(path.join(results, file), 'utf8'));
    expect(Object.keys(report.tools)).toEqual(['prerender', ...PEERS]);
    for (const [tool, summary] of Object.entries(report.tools)) {
      expect({ tool, problems: summary.problems }).toEqual({ tool, problems: [] });
      expect(summary.pagesWritten).toBe(21);
      expect(summary.runs).toHaveLength(1);
      expect(summary.median.cpuMsPerPage).toBeGreaterThan(0);
      expect(summary.median.peakRssMB).toBeGreaterThan(0);
      expect(summary.median.pagesPerSecond).toBeGreaterThan(0);
    }
    for (const peer of PEERS) expect(stdout).toMatch(new RegExp(`^  ${peer} command: \\S`, 'm'));
    expect(stdout).toMatch(/pages written\s+21 of 21\s/);
    // Its temp folders are gone.
    expect((await readdir(dir)).sort()).toEqual(['results']);
  });

  it('a peer that is not installed ends it before it starts, with how to install it (exit 2)', async () => {
    const empty = path.join(dir, 'bin');
    await mkdir(empty);
    const { code, stderr } = await bench(['--products', '20', '--peers', 'httrack'], { ...process.env, PATH: empty, TMPDIR: dir });
    expect(code).toBe(2);
    expect(stderr).toBe('crawl-bench: HTTrack is not installed: apt-get update && apt-get install -y httrack (as root, else with sudo)\n');
  });

  it('an unknown peer is a usage error', async () => {
    const { code, stderr } = await bench(['--peers', 'wget,curl'], { ...process.env, TMPDIR: dir });
    expect(code).toBe(2);
    expect(stderr).toBe('crawl-bench: --peers takes a comma-separated list of wget, httrack, scraper, got "wget,curl" (see --help)\n');
  });
});

describe('the pages a tool wrote', () => {
  /** @type {string} */
  let dir;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-bench-pages-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * @param {string} name
   * @param {string} text
   */
  const page = (name, text) => mkdir(path.dirname(path.join(dir, name)), { recursive: true }).then(() => writeFile(path.join(dir, name), text));

  it('are found by their text, whatever their names; a missing one is named and the run flagged', async () => {
    await page('h/st/dir.html', '<h1>All products 1 to 2</h1>');
    await page('h/st/dirb24e.html', '<h1>All products 3 to 3</h1>');
    await page('h/st/product4b2a.html', '<p class="sku">Item SKU-1</p>');
    await page('h/st/product.asp?SKUSetID=3.html', '<p class="sku">Item SKU-3</p>');
    // HTTrack's cache holds copies; they are not pages written.
    await page('hts-cache/copy.html', '<p class="sku">Item SKU-2</p>');
    const written = pagesWritten(dir, { products: 3, count: 2 });
    expect(written).toEqual({ written: 4, expected: 5, products: 2, dirPages: 2, missing: ['product 2'] });

    const run = { exitCode: 0, written, wallMs: 1, pagesPerSecond: 4, userMs: 1, systemMs: 1, cpuMsPerPage: 1, peakRssMB: 1, originCpuMsPerPage: 0, otherLoadCores: 0 };
    const summary = summarise([run]);
    expect(summary.ok).toBe(false);
    expect(summary.problems).toEqual(["wrote 4 of the shop's 5 pages; missing product 2"]);

    await page('h/st/product2.htm', '<p class="sku">Item SKU-2</p>');
    expect(summarise([{ ...run, written: pagesWritten(dir, { products: 3, count: 2 }) }]).ok).toBe(true);
  });
});
