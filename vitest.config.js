import { defineConfig } from 'vitest/config';

const shared = {
  pool: 'forks',
  // Bounds on a hang, not on speed: with both cores busy, a test that starts three crawls takes over 20 s.
  testTimeout: 120_000,
  hookTimeout: 120_000,
};

export default defineConfig({
  test: {
    // Most files wait on local servers, child processes and Chromium's timeouts: more files than cores at once.
    // Chromium's files run beside the others: every test must pass with both cores busy anyway.
    maxWorkers: 4,
    projects: [
      // Unit files share their processes: a process and its imports per file cost more than their tests.
      // They restore what they change (timers, spies) themselves.
      { test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.js'], isolate: false } },
      { test: { ...shared, name: 'main', include: ['test/**/*.test.js'], exclude: ['test/unit/**'] } },
    ],
  },
});
