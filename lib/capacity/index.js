// @ts-check
/** The capacity API; the run loads when called, so importing prerender does not load autocannon. */
export { checkProfile, defaultProfile, loadProfile, DEFAULT_PROFILE } from './profile.js';

/** @param {import('./measure.js').CapacityOptions} options @returns {Promise<import('./measure.js').CapacityResult>} */
export async function measureCapacity(options) {
  const { measureCapacity: run } = await import('./measure.js');
  return run(options);
}
