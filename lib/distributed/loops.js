// @ts-check
import { PrerenderError } from '../errors.js';
import { fail, loopMessage } from '../engine/outcomes.js';

/**
 * Two processes closing a loop at once each saw the other's hop in flight. The coordinator fails it at the barrier as
 * one process would, with the same message and referrer.
 * @param {import('../engine/run.js').CrawlRun} run @param {(key: string, referrer: string) => Promise<void>} noteReferrer @returns {Promise<number>} the loops failed
 */
export async function failRedirectLoops(run, noteReferrer) {
  /** @type {Map<string, string>} */ const next = new Map(run.redirects.map((redirect) => [redirect.url, redirect.location]));
  const max = run.options.maxRedirects;
  /** @type {Set<string>} */ const walked = new Set();
  let failed = 0;
  for (const start of next.keys()) {
    if (walked.has(start)) continue;
    /** @type {string[]} */ const path = [];
    /** @type {Map<string, number>} */ const at = new Map();
    /** @type {string | undefined} */ let current = start;
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
