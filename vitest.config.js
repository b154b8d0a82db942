import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.js'],
    pool: 'forks',
    // Most files wait on local servers, child processes and Chromium's timeouts: more files than cores at once.
    // Chromium's files run beside the others: every test must pass with both cores busy anyway.
    maxWorkers: 4,
    // Bounds on a hang, not on speed: with both cores busy, a test that starts three crawls takes over 20 s.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
