// @ts-check
/**
 * The order vitest starts test files in: the longest first, so that none of them starts last and holds the run back
 * alone. vitest orders by the durations of the last run on this machine; a fresh checkout has none, so the files
 * known to be long (longest first) start before the others in any case. A stale list costs time, never a result.
 */
import path from 'node:path';
import { BaseSequencer } from 'vitest/node';

/** Longest first: wall time of each file run alone on a quiet 2-core machine. */
export const LONG_FILES = [
  'test/render-browser.test.js',
  'test/render.test.js',
  'test/render-page.test.js',
  'test/redis-crawl.test.js',
  'test/doc-examples.test.js',
  'test/redis-processes.test.js',
  'test/redis-render.test.js',
  'test/recrawl.test.js',
  'test/deploy-ssh.test.js',
  'test/capacity.test.js',
  'test/redis-frontier.test.js',
  'test/faults/deploy-target.test.js',
  'test/types.test.js',
  'test/serve-production.test.js',
  'test/redis-connection.test.js',
  'test/heap-bound.test.js',
  'test/faults/origin.test.js',
  'test/serve-memory.test.js',
];

export default class SlowFirst extends BaseSequencer {
  /** @param {import('vitest/node').TestSpecification[]} files */
  async sort(files) {
    const sorted = await super.sort(files);
    const rank = (/** @type {import('vitest/node').TestSpecification} */ spec) => {
      const index = LONG_FILES.indexOf(path.relative(spec.project.config.root, spec.moduleId).split(path.sep).join('/'));
      return index === -1 ? LONG_FILES.length : index;
    };
    // Stable: the others keep vitest's order (last durations, else size).
    return sorted.map((spec, index) => ({ spec, index, rank: rank(spec) }))
      .sort((a, b) => a.rank - b.rank || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
