// @ts-check
/**
 * The command line's first module (bin/prerender.js): `crawl` bounds its young generation before other
 * modules load and grow it (heap.js). Other commands keep V8's policy; a shared crawl gives it back once
 * its options are read (cli/index.js; BENCHMARKS.md, "Decisions").
 */
import { boundYoungGeneration } from './runtime/heap.js';

const command = process.argv[2];
if (command === 'crawl') boundYoungGeneration();
