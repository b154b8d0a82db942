// @ts-check
import { PrerenderError } from '../errors.js';
import { canonicalKey, parseHttpUrl } from '../url.js';
import { warn } from '../warnings.js';
import { admit, decideLink } from './links.js';

/**
 * Page outcomes, redirected or failed, in one place for both phases, the render step and the shared crawl.
 * @typedef {import('./run.js').CrawlRun} CrawlRun @typedef {import('./fetch-phase.js').PageInFlight} PageInFlight
 * @typedef {import('../store/records.js').PageRecord} PageRecord
 */

/**
 * Its target is admitted, unless it closes a loop or passes --max-redirects: then the chain fails, and no hop beyond
 * is fetched. @param {CrawlRun} run @param {PageInFlight} page @param {number} status @param {string} location
 */
export async function redirect(run, page, status, location) {
  const record = page.record;
  const target = parseHttpUrl(location, page.key);
  if (!target) throw new PrerenderError(`HTTP ${status} redirect to an unusable location ${JSON.stringify(location)}`, { code: 'BAD_REDIRECT' });
  const key = canonicalKey(target);
  record.state = 'redirect';
  record.status = status;
  record.location = key;
  await run.records.put(record);
  run.hooks.recorded(record);
  run.redirects.push({ url: page.key, location: key, status });
  const decision = decideLink(run, key, record.kind);
  run.emit('redirect', { url: page.key, location: key, status, decision: decision.decision });
  if (decision.decision !== 'crawl') {
    // A root leaving the scope crawls nothing: said, or a run writing nothing would look like a success.
    if (run.options.roots.includes(page.key)) {
      warn(run, page.key, 'ROOT_REDIRECT', `the root ${page.key} redirects (${status}) to ${key}, outside the crawl's scope: nothing under it is crawled; crawl ${key} instead`);
    }
    record.referrers = undefined;
    await run.records.put(record); // the store may keep a copy: stored again
    return;
  }
  const max = run.options.maxRedirects;
  const loop = await loopThrough(run, key, page.key, max);
  if (loop) {
    const message = loopMessage(loop);
    for (const member of loop) {
      const looped = await run.records.get(member);
      if (looped && looped.state === 'redirect') await fail(run, looped, new PrerenderError(message, { code: 'REDIRECT_LOOP' }));
    }
    return;
  }
  if (record.hops + 1 > max) {
    const chain = await chainTo(run, record, max);
    const start = await run.records.get(chain[0]);
    const message = `more than --max-redirects ${max} redirects: ${[...chain, key].join(' → ')}`;
    if (start) await fail(run, start, new PrerenderError(message, { code: 'TOO_MANY_REDIRECTS' }));
    return;
  }
  const [outcome] = await admit(run, [{ key, kind: record.kind, referrer: page.key, decision }]);
  if (outcome === 'added') {
    const next = await run.records.get(key);
    if (next) {
      next.via = page.key;
      next.hops = record.hops + 1;
      await run.records.put(next); // a store outside memory hands out copies
    }
  }
  record.referrers = undefined;
  await run.records.put(record); // the store may keep a copy: stored again
}

/** @param {CrawlRun} run @param {string} key @param {string} from @param {number} max @returns {Promise<string[] | null>} from, then the hops back to it */
async function loopThrough(run, key, from, max) {
  const loop = [from];
  let current = key;
  for (let hop = 0; hop <= max; hop++) {
    if (current === from) return loop;
    const record = await run.records.get(current);
    if (!record || record.state !== 'redirect' || !record.location) return null;
    loop.push(current);
    current = record.location;
  }
  return null;
}

/** From its first member in URL order, so it reads the same whoever got there first. @param {string[]} loop in redirect order */
export function loopMessage(loop) {
  let first = 0;
  for (let i = 1; i < loop.length; i++) if (loop[i] < loop[first]) first = i;
  const from = [...loop.slice(first), ...loop.slice(0, first)];
  return `redirect loop: ${[...from, from[0]].join(' → ')}`;
}

/** From its start. @param {CrawlRun} run @param {PageRecord} record @param {number} max */
async function chainTo(run, record, max) {
  const chain = [record.key];
  let current = record;
  for (let hop = 0; hop <= max && current.via; hop++) {
    const previous = await run.records.get(current.via);
    if (!previous) break;
    chain.unshift(previous.key);
    current = previous;
  }
  return chain;
}

/** A page failure is data: recorded with its error; the crawl goes on. @param {CrawlRun} run @param {PageRecord} record @param {unknown} error */
export async function fail(run, record, error) {
  const err = /** @type {any} */ (error);
  record.state = 'failed';
  /** @type {NonNullable<PageRecord['error']>} */ const info = { message: err?.message ?? String(error) };
  if (err?.status) info.status = err.status;
  if (typeof err?.code === 'string') info.code = err.code;
  record.error = info;
  record.file = undefined;
  record.scan = undefined;
  await run.records.put(record);
  run.stats.failed++;
  run.emit('failure', { url: record.key, status: info.status, message: info.message, code: info.code });
}
