// @ts-check
/**
 * Helpers of the multi-process tests: a `prerender` process whose output is
 * collected (killed at a bound), a bounded poll, and a tree's digest.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { BIN } from './cli.js';

/**
 * `prerender …args`, SIGKILLed past `limitMs` (a bound on a hang: a crawl of a few hundred pages takes
 * a minute on a heavily shared machine).
 * @param {string[]} args
 * @param {{ limitMs?: number, env?: Record<string, string | undefined>, cwd?: string }} [options]
 * @returns {{ child: import('node:child_process').ChildProcess, done: Promise<{ code: number | null, signal: string | null, stdout: string, stderr: string }> }}
 */
export function startCli(args, { limitMs = 120_000, env, cwd } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env } : {}), ...(cwd ? { cwd } : {}) });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => { stdout += chunk; });
  child.stderr?.on('data', (chunk) => { stderr += chunk; });
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const done = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, done: /** @type {any} */ (done) };
}

/** @param {() => boolean | Promise<boolean>} condition @param {number} [limitMs] */
export async function until(condition, limitMs = 30_000) {
  const deadline = Date.now() + limitMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => { setTimeout(resolve, 10); });
  }
}

/**
 * Every file of a tree with the sha256 of its bytes, .prerender/ and the
 * manifest left out: equal trees give equal objects (and a difference shows
 * which file).
 * @param {string} root
 */
export async function treeDigest(root) {
  /** @type {Record<string, string>} */
  const files = {};
  /** @param {string} sub */
  const walk = async (sub) => {
    const entries = (await readdir(path.join(root, sub), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const entry of entries) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (rel === '.prerender' || rel === 'prerender-manifest.json') continue;
      if (entry.isDirectory()) await walk(rel);
      else files[rel] = createHash('sha256').update(await readFile(path.join(root, rel))).digest('hex');
    }
  };
  await walk('');
  return files;
}

/** The manifest without its time stamp. @param {string} root */
export async function manifestOf(root) {
  const manifest = JSON.parse(await readFile(path.join(root, 'prerender-manifest.json'), 'utf8'));
  return JSON.stringify({ ...manifest, generatedAt: '' });
}
