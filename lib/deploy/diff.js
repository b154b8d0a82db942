// @ts-check
/**
 * What a release changes against the one before it, from the two file lists
 * (path -> sha256 and size), never from scanning the trees: the churn table of
 * Content Deployment (files and bytes new / changed / unchanged / removed).
 *
 * @typedef {{ sha256: string, bytes: number }} ListedFile
 * @typedef {{ files: number, bytes: number }} Count
 * @typedef {{ new: Count, changed: Count, unchanged: Count, removed: Count }} Churn
 * @typedef {{ churn: Churn, send: string[], link: string[], remove: string[] }} Diff
 *   send: new and changed paths (their bytes must travel); link: unchanged
 *   paths (hard-linked from the previous release); remove: paths of the
 *   previous release the new one does not have (they go with the switch)
 */

/** @returns {Count} */
const zero = () => ({ files: 0, bytes: 0 });

/**
 * @param {Map<string, ListedFile>} next the new release's files
 * @param {Map<string, ListedFile> | null} previous the previous release's files (null: none)
 * @returns {Diff}
 */
export function diffFiles(next, previous) {
  const churn = { new: zero(), changed: zero(), unchanged: zero(), removed: zero() };
  /** @type {string[]} */ const send = [];
  /** @type {string[]} */ const link = [];
  /** @type {string[]} */ const remove = [];
  for (const [file, info] of next) {
    const before = previous?.get(file);
    const kind = !before ? 'new' : before.sha256 === info.sha256 && before.bytes === info.bytes ? 'unchanged' : 'changed';
    churn[kind].files++;
    churn[kind].bytes += info.bytes;
    (kind === 'unchanged' ? link : send).push(file);
  }
  if (previous) {
    for (const [file, info] of previous) {
      if (next.has(file)) continue;
      churn.removed.files++;
      churn.removed.bytes += info.bytes;
      remove.push(file);
    }
  }
  return { churn, send: send.sort(), link: link.sort(), remove: remove.sort() };
}
