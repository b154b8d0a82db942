// @ts-check
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { run } from '../../lib/cli/index.js';

/**
 * Running the CLI from tests: in-process through `run()` with fake streams,
 * or as a real child process.
 */

/** The real bin, for tests that spawn it. */
export const BIN = fileURLToPath(new URL('../../bin/prerender.js', import.meta.url));

/**
 * A fake writable stream that keeps what it is given, as text.
 * @returns {{ chunks: string[], write(chunk: unknown): boolean, readonly text: string }}
 */
export function sink() {
  /** @type {string[]} */
  const chunks = [];
  return {
    chunks,
    write(chunk) {
      chunks.push(String(chunk));
      return true;
    },
    get text() {
      return chunks.join('');
    },
  };
}

/**
 * @typedef {{ cwd: string, signal?: AbortSignal, stdin?: NodeJS.ReadableStream }} CliIo
 *   cwd: the working directory the CLI sees (a test's own, so that no config file is found by accident)
 * @typedef {{ code: number, stdout: string, stderr: string }} CliResult
 */

/**
 * The CLI in-process, with an empty environment and fake stdout and stderr.
 * @param {string[]} argv arguments after the program name
 * @param {CliIo} io
 * @returns {Promise<CliResult>}
 */
export async function runCli(argv, io) {
  const stdout = sink();
  const stderr = sink();
  // run() only ever calls write() on its output streams.
  const stream = (/** @type {ReturnType<typeof sink>} */ fake) => /** @type {NodeJS.WritableStream} */ (/** @type {unknown} */ (fake));
  const code = await run(argv, { stdout: stream(stdout), stderr: stream(stderr), env: {}, cwd: io.cwd, signal: io.signal, stdin: io.stdin });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/**
 * @typedef {{ code: number | null, signal: NodeJS.Signals | null, timedOut: boolean, stdout: string, stderr: string }} NodeResult
 *   timedOut: killed (SIGKILL) because it was still running after `limitMs`
 */

/**
 * Run `node <args>` as a child process; killed with SIGKILL after `limitMs`.
 * Rejects only when the process cannot be started.
 * @param {string[]} args arguments to node, e.g. `[BIN, 'crawl', ...]`
 * @param {{ cwd: string, input?: string, limitMs?: number, onSpawn?: (child: import('node:child_process').ChildProcess) => void }} options
 *   input: written to its stdin, which is then closed (without it, stdin is ignored);
 *   onSpawn: called once the child is started, e.g. to signal it later
 * @returns {Promise<NodeResult>}
 */
export function runNode(args, { cwd, input, limitMs = 120_000, onSpawn }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, limitMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
    onSpawn?.(child);
  });
}
