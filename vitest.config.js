import { defineConfig } from 'vitest/config';
import SlowFirst from './test/helpers/slow-first.js';

const shared = {
  pool: 'forks',
  // Bounds on a hang, not on speed: on a machine shared by several suites (a load of 20 on 2 cores), a test that
  // starts a few crawls took over 120 s.
  testTimeout: 300_000,
  hookTimeout: 300_000,
  // The product's own modules load as Node loads them: nothing mocks them, and Vite's transform of each, in each
  // worker, cost CPU for nothing. But the config loader's import(): config.test.js has it import a .ts file through Vite.
  server: { deps: { external: [/\/node_modules\//, /\/lib\/(?!options\/config-file\.js$)/, /\/fixtures\//, /\/bench\//] } },
};

export default defineConfig({
  test: {
    // Most files wait on local servers, child processes and Chromium's timeouts: more files than cores at once.
    // Chromium's files run beside the others: every test must pass with both cores busy anyway.
    maxWorkers: 4,
    // The longest files first, even without the durations of an earlier run (a fresh checkout).
    sequence: { sequencer: SlowFirst },
    projects: [
      // Unit files share their processes: a process and its imports per file cost more than their tests.
      // They restore what they change (timers, spies) themselves.
      { test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.js'], isolate: false } },
      // So do the others: each closes what it starts, and a fresh process and imports per file cost a second of CPU.
      { test: { ...shared, name: 'main', include: ['test/**/*.test.js'], exclude: ['test/unit/**'], isolate: false } },
    ],
  },
});
