// @ts-check
/**
 * The command line's first module (bin/prerender.js), for V8 settings that must precede the other modules. `crawl` bounds its
 * young generation before they load and grow it (heap.js). Other commands keep V8's policy; a shared crawl gives it back once
 * its options are read (cli/index.js; BENCHMARKS.md, "Decisions").
 */
import v8 from 'node:v8';
import { boundYoungGeneration } from './runtime/heap.js';

// undici parses HTTP with llhttp, in WebAssembly. V8 compiles it again in its optimising tier, in the background, and a process
// waits for that job before it exits: CPU and wall time for every command. The baseline code parses as fast (BENCHMARKS.md, "Decisions").
v8.setFlagsFromString('--liftoff-only');

const command = process.argv[2];
if (command === 'crawl') boundYoungGeneration();
