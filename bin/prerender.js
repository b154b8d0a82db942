#!/usr/bin/env node
// @ts-check
import '../lib/start.js'; // first: a crawl's heap bound, before the other modules load
import { run } from '../lib/cli/index.js';

const controller = new AbortController();
let interrupts = 0;
/** @param {NodeJS.Signals} signal */
const onSignal = (signal) => {
  interrupts++;
  if (interrupts === 1) {
    process.stderr.write(`\nprerender: stopping cleanly (${signal === 'SIGINT' ? 'Ctrl-C again to quit at once' : 'a second signal quits at once'})\n`);
    controller.abort();
  } else {
    process.exit(130);
  }
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
// A reader that went away (`prerender crawl --help | head`): nothing more to say, and no stack trace.
process.stdout.on('error', (error) => {
  if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'EPIPE') throw error;
  process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
});

// Run through the package's second bin, --help's usage lines say that name.
const name = process.argv[1]?.endsWith('prerender-static') ? 'prerender-static' : 'prerender';
process.exitCode = await run(process.argv.slice(2), {
  name,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
});
