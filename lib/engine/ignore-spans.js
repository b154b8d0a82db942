// @ts-check
import { sha256 } from '../store/blobs.js';

/**
 * --ignore: bytes that differ only in the ignored spans count as unchanged. Plugged into the hook `sameAs`:
 * each staged page gets the hash of its body without those spans (`record.compare`), kept in the state.
 * @typedef {import('./run.js').CrawlRun} CrawlRun
 */

/** @param {CrawlRun} run */
export function plugIgnore(run) {
  run.hooks.on('sameAs', '--ignore', async (record, body, before, sameBody) => {
    record.compare = compareHash(run, body);
    return !sameBody && (await compareOfBefore(run, before)) === record.compare;
  });
}

/**
 * With --ignore, the sha256 of a body without the spans it ignores.
 * @param {CrawlRun} run
 * @param {Buffer} body
 */
function compareHash(run, body) {
  return sha256(Buffer.from(body.toString('latin1').replace(/** @type {RegExp} */ (run.ignore), ''), 'latin1'));
}

/**
 * The --ignore hash of the last run's copy of a page: as stored when the last
 * run ignored the same spans, else made again from its staged body (the first
 * run after --ignore was added or changed), so that a page that differs only
 * in what is ignored counts as unchanged from that run on.
 * @param {CrawlRun} run
 * @param {import('../recrawl/state.js').StoredPage | undefined} before
 */
async function compareOfBefore(run, before) {
  if (!before || before.state !== 'done') return undefined;
  if (before.compare !== undefined && run.prior?.sameIgnore) return before.compare;
  if (!before.body || !run.blobs?.has(before.body)) return undefined;
  const [body] = await run.blobs.get([before.body]);
  return compareHash(run, body);
}

