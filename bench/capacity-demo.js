#!/usr/bin/env node
// @ts-check
/**
 * The report of docs/capacity.md, made again:
 *
 *   node bench/capacity-demo.js [--cpu-us 5000] [--products 200] [--html FILE] [--png FILE] [-- capacity options...]
 *
 * starts the benchmark shop (bench/origin.js) in its own process, each of
 * its pages costing --cpu-us of CPU, crawls its catalogue and product pages
 * into a temporary tree, runs `prerender capacity` on it (the shop's pid as
 * --origin-pid; the options after "--" passed on), prints the command and
 * its report, and with --png takes a screenshot of the HTML page in
 * Chromium. Exit status: the capacity command's.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseBenchArgs, checkNumbers } from './lib/args.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.join(HERE, '..', 'bin', 'prerender.js');

const USAGE = `usage: node bench/capacity-demo.js [--cpu-us 5000] [--products 200] [--html FILE] [--png FILE] [-- capacity options...]
The report of docs/capacity.md: the benchmark shop (bench/origin.js, each page
costing --cpu-us of CPU) crawled into a temporary tree, then \`prerender capacity\`
on it with the shop's pid as --origin-pid; the options after "--" are passed on.
  --cpu-us N     CPU each page of the shop costs, in microseconds (default 5000)
  --products N   products in the shop (default 200)
  --html FILE    where the HTML page goes (default: in the temporary directory)
  --png FILE     a screenshot of the HTML page, taken in Chromium`;

const end = process.argv.indexOf('--');
const own = end === -1 ? process.argv.slice(2) : process.argv.slice(2, end);
const passed = end === -1 ? [] : process.argv.slice(end + 1);
const { values } = parseBenchArgs('capacity-demo', {
  'cpu-us': { type: 'string', default: '5000' },
  products: { type: 'string', default: '200' },
  html: { type: 'string' },
  png: { type: 'string' },
}, USAGE, { args: own });
checkNumbers('capacity-demo', values, ['cpu-us', 'products']);

/**
 * @param {string[]} args
 * @param {{ cwd: string, echo?: boolean }} options
 * @returns {Promise<number>}
 */
function runPrerender(args, { cwd, echo = true }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', echo ? 'inherit' : 'ignore', 'inherit'] });
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

/**
 * @param {string} html
 * @param {string} png
 */
async function screenshot(html, png) {
  const { default: puppeteer } = await import('puppeteer-core');
  const { findBrowser, launchFlags } = await import('../lib/render/browser.js');
  const browser = await puppeteer.launch({ executablePath: findBrowser({}), args: launchFlags() });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1220, height: 900 });
    await page.goto(pathToFileURL(html).href, { waitUntil: 'load' });
    await page.screenshot({ path: png, fullPage: true });
  } finally {
    await browser.close();
  }
}

async function main() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-capacity-demo-'));
  const shop = spawn(process.execPath, [path.join(HERE, 'origin.js'), '--products', String(values.products), '--count', '50', '--cpu-us', String(values['cpu-us'])], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const origin = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the shop did not start within 15 s')), 15_000);
      createInterface({ input: /** @type {import('node:stream').Readable} */ (shop.stdout) }).once('line', (line) => { clearTimeout(timer); resolve(line.trim()); });
    });
    const out = path.join(dir, 'out');
    if (await runPrerender(['crawl', `${origin}/st/dir.asp`, '-i', '/st/dir.asp', '/st/product.asp', '-o', out, '-q'], { cwd: dir, echo: false }) !== 0) throw new Error('the crawl failed');
    const html = path.resolve(values.html ?? path.join(dir, 'report.html'));
    const args = ['capacity', out, '--origin', origin, '--origin-pid', String(shop.pid), '--html', html, ...passed];
    process.stdout.write(`$ prerender ${args.join(' ').replaceAll(dir, 'TMP').replace(/:\d{4,5}\b/, ':PORT').replace(/--origin-pid \d+/, '--origin-pid PID')}\n\n`);
    const code = await runPrerender(args, { cwd: dir });
    if (values.png) await screenshot(html, path.resolve(values.png));
    process.exitCode = code;
  } finally {
    shop.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`capacity-demo: ${error.stack ?? error}\n`);
  process.exitCode = 2;
});
