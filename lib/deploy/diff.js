// @ts-check
/**
 * Content Deployment's churn table, from the two file lists, never by scanning trees.
 * @typedef {{ sha256: string, bytes: number }} ListedFile @typedef {{ files: number, bytes: number }} Count
 * @typedef {{ new: Count, changed: Count, unchanged: Count, removed: Count }} Churn
 * @typedef {{ churn: Churn, send: string[], link: string[], remove: string[] }} Diff send: new and changed; link: unchanged, hard-linked; remove: gone with the switch
 */

/** @returns {Count} */
const zero = () => ({ files: 0, bytes: 0 });

/** @param {Map<string, ListedFile>} next @param {Map<string, ListedFile> | null} previous null: none @returns {Diff} */
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
