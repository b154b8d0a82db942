// @ts-check
import { PrerenderError } from '../errors.js';
import { fail, loopMessage } from '../engine/outcomes.js';

/**
 * Redirect loops that two processes closed at once. One process finds a
 * loop when a redirect leads back through recorded redirects to the page
 * itself (engine/fetch-phase.js); in a shared crawl the hop before may still be
 * in flight elsewhere (its result not in Redis yet), and both redirects
 * stand. At the barrier every result is in: the coordinator fails such a
 * loop as one process would have, with the same message (`loopMessage`: the
 * same whoever closed it) and referrer (the member whose redirect closed it,
 * the one reached last, most hops, is noted as linked from the hop before it).
 *
 * @param {import('../engine/run.js').CrawlRun} run
 * @param {(key: string, referrer: string) => Promise<void>} noteReferrer
 * @returns {Promise<number>} the loops failed
 */
export async function failRedirectLoops(run, noteReferrer) {
  /** @type {Map<string, string>} */
  const next = new Map(run.redirects.map((redirect) => [redirect.url, redirect.location]));
  const max = run.options.maxRedirects;
  /** @type {Set<string>} */
  const walked = new Set();
  let failed = 0;
  for (const start of next.keys()) {
    if (walked.has(start)) continue;
    /** @type {string[]} */
    const path = [];
    /** @type {Map<string, number>} */
    const at = new Map();
    /** @type {string | undefined} */
    let current = start;
    while (current !== undefined && !walked.has(current) && !at.has(current) && path.length <= max + 1) {
      at.set(current, path.length);
      path.push(current);
      current = next.get(current);
    }
    for (const url of path) walked.add(url);
    const from = current === undefined ? undefined : at.get(current);
    if (from === undefined) continue;
    const cycle = path.slice(from);
    const records = run.records.getMany ? await run.records.getMany(cycle) : await Promise.all(cycle.map((key) => run.records.get(key)));
    // Found at fetch time (failed already), or not all of it redirects: nothing to do.
    if (!records.every((record) => record?.state === 'redirect')) continue;
    let closing = 0;
    records.forEach((record, i) => { if ((record?.hops ?? 0) > (records[closing]?.hops ?? 0)) closing = i; });
    const message = loopMessage(cycle);
    for (const record of records) await fail(run, /** @type {import('../store/records.js').PageRecord} */ (record), new PrerenderError(message, { code: 'REDIRECT_LOOP' }));
    const via = records[closing]?.via;
    if (via) await noteReferrer(cycle[closing], via);
    failed++;
  }
  return failed;
}
