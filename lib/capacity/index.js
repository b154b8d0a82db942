// @ts-check
/**
 * The capacity API. The run (and autocannon with it) loads when called, so
 * that importing prerender does not load a load generator.
 */
export { checkProfile, defaultProfile, loadProfile, DEFAULT_PROFILE } from './profile.js';

/**
 * Measure a site's capacity before and after pre-rendering (run.js).
 * @param {import('./measure.js').CapacityOptions} options
 * @returns {Promise<import('./measure.js').CapacityResult>}
 */
export async function measureCapacity(options) {
  const { measureCapacity: run } = await import('./measure.js');
  return run(options);
}
