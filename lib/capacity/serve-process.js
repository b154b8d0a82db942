// @ts-check
/** The static tier runs `prerender serve` in a process of its own, so its CPU is read apart from the load generator's. */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { PrerenderError } from '../errors.js';

const CHILD = fileURLToPath(new URL('./serve-child.js', import.meta.url));

/** The serve did not start (no tree to serve, a bad price source...). */
export class ServeStartError extends PrerenderError {
  code = 'CAPACITY_SERVE';
}

/** @param {string} out the tree @param {{ prices?: string | null, startTimeoutMs?: number }} [options] @returns {Promise<{ url: string, pid: number, stop: () => Promise<void> }>} */
export async function startServeProcess(out, { prices = null, startTimeoutMs = 30_000 } = {}) {
  const child = spawn(process.execPath, [CHILD, out, ...(prices ? [prices] : [])], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => { if (stderr.length < 4000) stderr += chunk; });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  const lines = createInterface({ input: child.stdout });
  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new ServeStartError(`prerender serve ${out} did not start listening within ${startTimeoutMs / 1000} s`)), startTimeoutMs);
      lines.on('line', (line) => {
        const m = /^listening on (http:\/\/\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.once('error', (error) => { clearTimeout(timer); reject(new ServeStartError(`cannot start prerender serve: ${error.message}`, { cause: error })); });
      child.once('exit', () => {
        clearTimeout(timer);
        const said = stderr.split('\n').filter((line) => line && !/cache budget/.test(line)).pop();
        reject(new ServeStartError(`prerender serve ${out} stopped before it listened${said ? `: ${said.replace(/^prerender serve: /, '')}` : ''}`));
      });
    });
    // The first line said where; the rest is not read (an unread pipe would not fill: serve prints nothing more).
    lines.close();
    child.stdout.resume();
    return { url, pid: /** @type {number} */ (child.pid), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
