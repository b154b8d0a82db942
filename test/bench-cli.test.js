// @ts-check
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The benchmark scripts' command line (bench/lib/args.js): --help, and a
 * mistake in one line with exit 2; and the benchmark origin's cluster mode
 * ending on a signal. They are run by people and by other benchmarks.
 */

const BENCH = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bench');

/**
 * @param {string} script
 * @param {string[]} args
 * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
 */
function run(script, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(BENCH, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${script} did not end`)); }, 20_000);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

describe('the benchmark scripts', () => {
  it.each(['crawl-bench.js', 'recrawl-bench.js', 'changed-bench.js', 'redis-bench.js', 'origin.js', 'wakeup-bench.js', 'loader-thread-bench.js', 'thread-loader-experiment.js', 'same-output.js', 'render-memory-bench.js'])('%s --help prints its usage and exits 0', async (script) => {
    const { code, stdout } = await run(script, ['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: node bench\//);
  });

  it.each(['recrawl-bench.js', 'changed-bench.js', 'redis-bench.js', 'origin.js', 'loader-thread-bench.js', 'thread-loader-experiment.js', 'same-output.js'])('%s answers an unknown option with one line and exit 2', async (script) => {
    const { code, stderr } = await run(script, ['--no-such-option']);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/: unknown option --no-such-option \(see --help\)$/)]);
  });

  it('a bad value is one line and exit 2, not a stack trace', async () => {
    const { code, stderr } = await run('wakeup-bench.js', ['--gaps', 'x']);
    expect(code).toBe(2);
    expect(stderr).toBe('wakeup-bench: --gaps must be comma-separated numbers >= 0, got "x" (see --help)\n');
  });

  it('recrawl-bench.js --resume-after: a bad value is one line and exit 2', async () => {
    const { code, stderr } = await run('recrawl-bench.js', ['--resume-after=-1']);
    expect(code).toBe(2);
    expect(stderr).toBe('recrawl-bench: --resume-after must be a number of seconds >= 0, got "-1" (see --help)\n');
  });

  it.each(['SIGTERM', 'SIGINT'])('origin.js --workers 2 ends, workers and all, on %s', async (signal) => {
    const child = spawn(process.execPath, [path.join(BENCH, 'origin.js'), '--products', '10', '--workers', '2'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const url = await new Promise((resolve) => child.stdout.once('data', (chunk) => resolve(String(chunk).trim())));
    const response = await fetch(`${url}/st/product.asp?SKUSetID=3`);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const ended = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
    child.kill(/** @type {NodeJS.Signals} */ (signal));
    const outcome = await Promise.race([ended, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
    if (outcome === 'still running') child.kill('SIGKILL');
    expect(outcome).toEqual({ code: 0, sig: null });
  });
});
