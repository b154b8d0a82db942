// @ts-check
import { LocalTree } from './local-tree.js';

/**
 * An output target given by the caller (the `target` option), made safe for
 * the engine's clean-up: each call returns a promise, even when the target's
 * method is synchronous or throws before returning one. The engine ends a
 * failed run with `abort().catch(...)` before it releases OUT's lock; a
 * synchronous `abort() {}` (it returns undefined) made that line throw, and
 * the lock stayed taken for the life of the process.
 * A LocalTree is the engine's own and is passed as it is (the engine tells it
 * apart with instanceof, for early writes).
 * @param {import('./target.js').OutputTarget} target
 * @returns {import('./target.js').OutputTarget}
 */
export function checkedTarget(target) {
  if (target instanceof LocalTree) return target;
  /** @type {import('./target.js').OutputTarget} */
  const checked = {
    get location() { return target.location; },
    init: async () => { await target.init(); },
    write: async (file, data, options) => { await target.write(file, data, options); },
    remove: async (file) => { await target.remove(file); },
    commit: async () => { await target.commit(); },
    abort: async () => { await target.abort(); },
  };
  // The optional calls stay absent when the target has none: the engine asks whether they are there.
  const { existing, reserve } = target;
  if (typeof existing === 'function') checked.existing = async (file) => existing.call(target, file);
  if (typeof reserve === 'function') checked.reserve = async (file) => reserve.call(target, file);
  return checked;
}
