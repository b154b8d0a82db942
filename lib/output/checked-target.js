// @ts-check
import { LocalTree } from './local-tree.js';

/**
 * Every call returns a promise, even from a synchronous or throwing method: a synchronous `abort() {}` once left OUT's lock
 * taken. A LocalTree passes as it is. @param {import('./target.js').OutputTarget} target @returns {import('./target.js').OutputTarget}
 */
export function checkedTarget(target) {
  if (target instanceof LocalTree) return target;
  /** @type {import('./target.js').OutputTarget} */ const checked = {
    get location() { return target.location; },
    init: async () => { await target.init(); },
    write: async (file, data, options) => { await target.write(file, data, options); },
    remove: async (file) => { await target.remove(file); },
    commit: async () => { await target.commit(); },
    abort: async () => { await target.abort(); },
  };
  // Optional calls stay absent: the engine asks whether they are there.
  const { existing, reserve } = target;
  if (typeof existing === 'function') checked.existing = async (file) => existing.call(target, file);
  if (typeof reserve === 'function') checked.reserve = async (file) => reserve.call(target, file);
  return checked;
}
