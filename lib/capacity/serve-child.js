// @ts-check
/** `prerender serve DIR [PRICES]` for a capacity run; it stops on SIGTERM, SIGINT, or when its stdin ends (its parent has gone). */
import { runServeCommand } from '../serve/index.js';

const [dir, prices] = process.argv.slice(2);
const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
process.on('SIGINT', () => stop.abort());
process.stdin.on('end', () => stop.abort());
process.stdin.on('error', () => stop.abort());
process.stdin.resume();
try {
  await runServeCommand(dir, { port: 0, host: '127.0.0.1', watch: false, prices: prices || null }, { stdout: process.stdout, stderr: process.stderr, signal: stop.signal });
} catch (error) {
  process.stderr.write(`prerender serve: ${/** @type {Error} */ (error).message}\n`);
  process.exitCode = 2;
} finally {
  process.stdin.destroy(); // the last handle: the process ends
}
