import { defineConfig } from 'vitest/config';

const shared = {
  pool: 'forks',
  // Bounds on a hang, not on speed: with both cores busy, a test that starts three crawls takes over 20 s.
  testTimeout: 120_000,
  hookTimeout: 120_000,
};

export default defineConfig({
  test: {
    // Most files wait on local servers and child processes: more files than cores at once.
    maxWorkers: 4,
    projects: [
      { test: { ...shared, name: 'main', include: ['test/**/*.test.js'], exclude: ['test/render.test.js', 'test/faults/render.test.js', 'test/capacity-page.test.js'], sequence: { groupOrder: 0 } } },
      // Real Chromium takes both cores: its tests run after the others, not beside them.
      { test: { ...shared, name: 'browser', include: ['test/render.test.js', 'test/faults/render.test.js', 'test/capacity-page.test.js'], sequence: { groupOrder: 1 } } },
    ],
  },
});
