// @ts-check
/**
 * Running one side's `bin/prerender.js` as a child process for
 * bench/same-output.js: in a working directory of its own (so no config file
 * is found by accident), with no REDIS_URL or browser variable from the
 * caller's environment, killed with SIGKILL past its time limit.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** Variables a crawl reads that must not leak in from the caller's shell. */
const SCRUBBED = ['REDIS_URL', 'PUPPETEER_EXECUTABLE_PATH', 'CHROME_PATH', 'NODE_OPTIONS'];

/** @typedef {{ name: 'A' | 'B', repo: string, bin: string, version: string }} Side */

/** Children still running: killed if the script ends first (an error, Ctrl-C). */
const running = new Set();
process.once('exit', () => { for (const child of running) child.kill('SIGKILL'); });

/**
 * @param {'A' | 'B'} name
 * @param {string} repo a checkout of prerender
 * @returns {Side}
 */
export function sideOf(name, repo) {
  const root = path.resolve(repo);
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  return { name, repo: root, bin: path.join(root, 'bin', 'prerender.js'), version: String(version) };
}

/**
 * @typedef {{ code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string, args: string[] }} Ran
 * @typedef {{ child: import('node:child_process').ChildProcess, done: Promise<Ran> }} Started
 */

/**
 * Starts `node BIN ...args`.
 * @param {Side} side
 * @param {string[]} args
 * @param {{ cwd: string, limitMs?: number }} options
 * @returns {Started}
 */
export function start(side, args, { cwd, limitMs = 180_000 }) {
  const env = { ...process.env };
  for (const name of SCRUBBED) delete env[name];
  const child = spawn(process.execPath, [side.bin, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => { stdout += chunk; });
  child.stderr?.on('data', (chunk) => { stderr += chunk; });
  running.add(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const done = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, signal, stdout, stderr, args });
    });
  });
  return { child, done: /** @type {Promise<Ran>} */ (done) };
}

/**
 * Runs a command to its end and checks its exit code.
 * @param {Side} side
 * @param {string[]} args
 * @param {{ cwd: string, expect?: number, limitMs?: number }} options
 */
export async function run(side, args, { expect = 0, ...options }) {
  return check(side, await start(side, args, options).done, expect);
}

/**
 * @param {Side} side
 * @param {Ran} ran
 * @param {number} expected
 */
export function check(side, ran, expected) {
  if (ran.code !== expected) {
    const how = ran.signal ? `signal ${ran.signal}` : `exit ${ran.code}`;
    throw new Error(`side ${side.name}: prerender ${ran.args.join(' ')}\n  ended with ${how}, expected exit ${expected}\n${ran.stderr.trim().split('\n').slice(-20).map((line) => `  | ${line}`).join('\n')}`);
  }
  return ran;
}
