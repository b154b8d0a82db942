// @ts-check
/**
 * The first module the command line loads (bin/prerender.js imports it
 * before anything else): `crawl` bounds its young generation before its
 * other modules are loaded, which alone would grow it to 16 MiB (heap.js).
 * The other commands keep V8's own policy: `serve` above all, and `worker`,
 * which holds no crawl's state; a shared crawl (`--frontier`) gives it back
 * once its options are read (cli.js): four processes on two cores spent
 * more CPU a page with it (BENCHMARKS.md).
 */
import { boundYoungGeneration } from './runtime/heap.js';

const command = process.argv[2];
if (command === 'crawl') boundYoungGeneration();
