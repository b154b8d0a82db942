// @ts-check
import { sha256 } from '../store/blobs.js';

/**
 * --ignore, on the hook `sameAs`: bytes that differ only in ignored spans count as unchanged. The hash without them is
 * kept in the state as `compare`. @typedef {import('./run.js').CrawlRun} CrawlRun
 */

/** @param {CrawlRun} run */
export function plugIgnore(run) {
  run.hooks.on('sameAs', '--ignore', async (record, body, before, sameBody) => {
    record.compare = compareHash(run, body);
    return !sameBody && (await compareOfBefore(run, before)) === record.compare;
  });
}

/** @param {CrawlRun} run @param {Buffer} body */
function compareHash(run, body) {
  return sha256(Buffer.from(body.toString('latin1').replace(/** @type {RegExp} */ (run.ignore), ''), 'latin1'));
}

/**
 * As stored if the last run ignored the same spans, else made again from its staged body.
 * @param {CrawlRun} run @param {import('../recrawl/state.js').StoredPage | undefined} before
 */
async function compareOfBefore(run, before) {
  if (!before || before.state !== 'done') return undefined;
  if (before.compare !== undefined && run.prior?.sameIgnore) return before.compare;
  if (!before.body || !run.blobs?.has(before.body)) return undefined;
  const [body] = await run.blobs.get([before.body]);
  return compareHash(run, body);
}

