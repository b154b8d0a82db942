// @ts-check
/**
 * The shell examples of README.md and docs/*.md run (issue #41): a renamed
 * option breaks this test, not a user's pipeline. The rules a page follows
 * are in test/helpers/doc-examples.js. Each page runs in its own temp dir,
 * seeded with prices.json and prices.csv for the fixture shop's SKUs.
 */
import { spawn } from 'node:child_process';
import { chmodSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startShop } from '../fixtures/shop.js';
import { startGitweb } from '../fixtures/gitweb.js';
import { startMediaWiki } from '../fixtures/mediawiki.js';
import { BIN } from './helpers/cli.js';
import { localise, PLACEHOLDERS, shellBlocks } from './helpers/doc-examples.js';
import { HAVE_REDIS, IN_CI, REDIS_SERVER, startRedis } from './helpers/redis.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const PAGES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
/** Bound on one command; a crawl of a fixture takes seconds. */
const COMMAND_MS = 90_000;
/** Bound on a long-running command's first URL. */
const LISTEN_MS = 60_000;

const SKUS = Array.from({ length: 25 }, (_, i) => `SKU-${i + 1}`);
const PRICES_JSON = JSON.stringify(Object.fromEntries(SKUS.map((sku, i) => [sku, { 10001: `$${i + 1}.00`, '*': `$${i + 1}.50` }])));
const PRICES_CSV = ['sku,zip,price', ...SKUS.flatMap((sku, i) => [`${sku},10001,$${i + 1}.00`, `${sku},*,$${i + 1}.50`])].join('\n') + '\n';

/**
 * @param {string} script @param {string} cwd @param {Record<string, string>} env
 * @returns {import('node:child_process').ChildProcessByStdio<null, import('node:stream').Readable, import('node:stream').Readable>}
 */
const shell = (script, cwd, env) => spawn('/bin/sh', ['-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * Run a command to its end, SIGKILLed past COMMAND_MS.
 * @param {string} script @param {string} cwd @param {Record<string, string>} env
 */
function runToEnd(script, cwd, env) {
  return new Promise((resolve) => {
    const child = shell(script, cwd, env);
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

/**
 * Start a server command, GET the first local URL it prints, then stop it with SIGTERM.
 * @param {string} script @param {string} cwd @param {Record<string, string>} env
 * @returns {Promise<{ status: number | null, code: number | null, output: string }>}
 */
function runAndProbe(script, cwd, env) {
  return new Promise((resolve) => {
    const child = shell(script, cwd, env);
    let output = '';
    let stdout = '';
    let probed = false;
    /** @type {number | null} */
    let status = null;
    const killer = setTimeout(() => child.kill('SIGKILL'), LISTEN_MS + COMMAND_MS);
    const listenTimer = setTimeout(() => child.kill('SIGTERM'), LISTEN_MS);
    /** @param {Buffer} chunk @param {boolean} out whether it came on stdout */
    const onData = (chunk, out) => {
      output += chunk;
      if (out) stdout += chunk;
      // The URL to open is on stdout: "listening on URL" for serve.
      const url = (/listening on (http:\/\/127\.0\.0\.1:\d+\S*)/.exec(stdout) ?? /(http:\/\/127\.0\.0\.1:\d+[^\s:]*)/.exec(stdout))?.[1];
      if (!url || probed) return;
      probed = true;
      clearTimeout(listenTimer);
      fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(COMMAND_MS) })
        .then(async (response) => { status = response.status; await response.arrayBuffer(); })
        .catch((error) => { output += `\n(probe of ${url} failed: ${error.message})`; })
        .finally(() => child.kill('SIGTERM'));
    };
    child.stdout.on('data', (chunk) => onData(chunk, true));
    child.stderr.on('data', (chunk) => onData(chunk, false));
    child.on('close', (code) => {
      clearTimeout(killer);
      clearTimeout(listenTimer);
      resolve({ status, code, output });
    });
  });
}

describe.each(PAGES.filter((page) => shellBlocks(page, readFileSync(path.join(ROOT, page), 'utf8')).length > 0))('the examples of %s run', (page) => {
  const blocks = shellBlocks(page, readFileSync(path.join(ROOT, page), 'utf8'));
  const text = blocks.flatMap((block) => block.notRun === null ? block.commands.map((command) => command.text) : []).join('\n');
  const needs = (/** @type {keyof typeof PLACEHOLDERS} */ name) => new RegExp(PLACEHOLDERS[name].source).test(text);
  let dir = '';
  /** @type {Record<string, string>} */
  let env = {};
  /** @type {Partial<Record<keyof typeof PLACEHOLDERS, string>>} */
  const origins = {};
  /** @type {(() => Promise<unknown>)[]} */
  const closers = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-doc-'));
    const bin = path.join(dir, '.bin');
    await mkdir(bin);
    for (const name of ['prerender', 'prerender-static']) {
      await writeFile(path.join(bin, name), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
      chmodSync(path.join(bin, name), 0o755);
    }
    await writeFile(path.join(dir, 'prices.json'), PRICES_JSON);
    await writeFile(path.join(dir, 'prices.csv'), PRICES_CSV);
    const { REDIS_URL: _redis, CI: _ci, ...rest } = process.env;
    env = /** @type {Record<string, string>} */ ({ ...rest, PATH: `${bin}:${process.env.PATH}` });
    if (needs('shop')) {
      const shop = await startShop();
      origins.shop = shop.origin;
      closers.push(() => shop.close());
    }
    if (needs('git')) {
      const gitweb = await startGitweb();
      origins.git = gitweb.origin;
      closers.push(() => gitweb.close());
    }
    if (needs('wiki')) {
      const wiki = await startMediaWiki();
      origins.wiki = wiki.origin;
      closers.push(() => wiki.close());
    }
    if (needs('redis') && (REDIS_SERVER || IN_CI)) {
      const redis = await startRedis();
      origins.redis = `redis://127.0.0.1:${redis.port}`;
      closers.push(() => redis.stop());
    }
  });

  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const block of blocks) {
    const title = `${page}:${block.line}`;
    if (block.notRun !== null) {
      // Not run here (a registry, a real server): the marker must say why, for the reader as much as for us.
      it(`${title} is not run, and says why: ${block.notRun}`, () => expect(block.notRun?.trim()).not.toBe(''));
      continue;
    }
    if (block.commands.length === 0) continue;
    const needsRedis = block.commands.some((command) => new RegExp(PLACEHOLDERS.redis.source).test(command.text));
    it.skipIf(needsRedis && !HAVE_REDIS)(`${title}${block.skipped.length ? ` (lines not run: ${block.skipped.join('; ')})` : ''}`, { timeout: block.commands.length * (COMMAND_MS + LISTEN_MS) }, async () => {
      expect(block.notRun).toBeNull();
      for (const command of block.commands) {
        const { script, missing } = localise(command, { dir, origins });
        expect(missing, `${page}:${command.line}: no server here for ${missing.join(", ")}: use a placeholder host (see test/helpers/doc-examples.js)`).toEqual([]);
        const where = `${page}:${command.line}: ${command.text}`;
        if (command.longRunning) {
          const result = await runAndProbe(script, dir, env);
          expect(result.status, `${where}\n${result.output.slice(-3000)}`).not.toBeNull();
          expect(/** @type {number} */ (result.status), `${where}\n${result.output.slice(-3000)}`).toBeLessThan(500);
          expect([0, 130], `${where}\n${result.output.slice(-3000)}`).toContain(result.code);
        } else {
          const result = /** @type {{ code: number | null, output: string }} */ (await runToEnd(script, dir, env));
          expect(result.code, `${where}\n${result.output.slice(-3000)}`).toBe(command.exit);
        }
      }
    });
  }
});

