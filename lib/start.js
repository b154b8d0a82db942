// @ts-check
/**
 * The first module the command line loads (bin/prerender.js imports it
 * before anything else): a crawling command (`crawl`, `worker`) bounds its
 * young generation before its other modules are loaded, which alone would
 * grow it to 16 MiB (heap.js). The other commands (`serve` above all) keep
 * V8's own policy.
 */
import { boundYoungGeneration } from './heap.js';

const command = process.argv[2];
if (command === 'crawl' || command === 'worker') boundYoungGeneration();
