// @ts-check
/**
 * npm test's static checks, tsc and ESLint, run at once rather than one after the other: each waits on one core.
 * Each one's output is printed whole when it ends (never interleaved); the exit code is 1 if either failed.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const bin = (/** @type {string} */ file) => path.join(ROOT, 'node_modules', file);
const CHECKS = [
  { name: 'tsc', args: [bin('typescript/bin/tsc'), '-p', 'jsconfig.json'] },
  { name: 'eslint', args: [bin('eslint/bin/eslint.js'), '.'] },
];

/** @param {{ name: string, args: string[] }} check @returns {Promise<boolean>} whether it passed */
function run({ name, args }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    /** @type {Buffer[]} */
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('error', (error) => output.push(Buffer.from(`${error.message}\n`)));
    child.on('close', (code, signal) => {
      process.stdout.write(Buffer.concat(output));
      const passed = code === 0;
      if (!passed) process.stderr.write(`${name} failed (${signal ?? `exit ${code}`})\n`);
      resolve(passed);
    });
  });
}

const results = await Promise.all(CHECKS.map(run));
process.exitCode = results.every(Boolean) ? 0 : 1;
