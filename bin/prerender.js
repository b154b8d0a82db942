#!/usr/bin/env node
// @ts-check
import '../lib/start.js'; // first: a crawl's heap bound, before the other modules load
import { run } from '../lib/cli.js';

const controller = new AbortController();
let interrupts = 0;
const onSignal = () => {
  interrupts++;
  if (interrupts === 1) {
    process.stderr.write('\nprerender: stopping cleanly (Ctrl-C again to quit at once)\n');
    controller.abort();
  } else {
    process.exit(130);
  }
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

process.exitCode = await run(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
});
