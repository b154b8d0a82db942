// @ts-check
import { FrontierError } from '../errors.js';
import { connectRedis, keyPrefix } from './connection.js';
import { deadAfterMs } from './redis-frontier.js';
import { OPTION_BY_NAME } from '../options/crawl-options.js';

/**
 * `prerender status`: what a shared crawl is doing, read from Redis.
 * @typedef {{ crawlId: string, phase: string, version: string | null, queued: number, leased: number, done: number, failed: number,
 *   redirects: number, notCrawled: number, backoffs: number, workers: { id: string, role: string, host: string, pid: number, heartbeatAgeMs: number, pages: number }[],
 *   pagesPerSecond: number, elapsedMs: number, topErrors: { code: string, count: number }[] }} CrawlStatus
 */

/** @param {import('./connection.js').CrawlRedis} redis @param {string} crawlId @returns {Promise<CrawlStatus | null>} null when there is no such crawl */
export async function readStatus(redis, crawlId) {
  const prefix = keyPrefix(crawlId);
  try {
    const [config, meta, counts, workers, infos, errors, time] = await Promise.all([
      redis.get(`${prefix}config`),
      redis.hgetall(`${prefix}meta`),
      redis.hgetall(`${prefix}cnt`),
      redis.zrange(`${prefix}workers`, 0, -1, 'WITHSCORES'),
      redis.hgetall(`${prefix}winfo`),
      redis.hgetall(`${prefix}errs`),
      redis.time(),
    ]);
    if (!config) return null;
    const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    const n = (/** @type {string | undefined} */ value) => Number(value ?? 0);
    const stored = JSON.parse(config);
    // Alive as take_some counts it: a heartbeat within half the crawl's --lease-timeout.
    const leaseMs = Number(stored.options?.leaseTimeout ?? OPTION_BY_NAME.get('leaseTimeout')?.default ?? 30_000);
    const deadAfter = deadAfterMs(leaseMs);
    const list = [];
    for (let i = 0; i < workers.length; i += 2) {
      const info = infos[workers[i]] ? JSON.parse(infos[workers[i]]) : {};
      list.push({ id: workers[i], role: info.role ?? 'worker', host: info.host ?? '', pid: info.pid ?? 0, heartbeatAgeMs: Math.max(0, now - Number(workers[i + 1])), pages: info.pages ?? 0 });
    }
    const done = n(counts.done);
    // A finished crawl: its own result's counts (SharedCrawl.finished), when its coordinator kept them.
    const final = meta.phase === 'finished' ? finalOf(meta) : null;
    const startedAt = n(meta.startedAt);
    const end = meta.phase === 'finished' && meta.finishedAt ? n(meta.finishedAt) : now;
    const elapsedMs = startedAt > 0 ? Math.max(0, end - startedAt) : 0;
    return {
      crawlId,
      phase: meta.phase ?? 'seeding',
      version: stored.version ?? null,
      queued: n(counts.queued),
      leased: n(counts.leased),
      done,
      failed: final ? final.failed : n(counts.failed),
      redirects: final ? final.redirects : n(counts.redirect),
      notCrawled: n(counts.over),
      backoffs: n(counts.backoffs),
      workers: list.filter((worker) => worker.heartbeatAgeMs < deadAfter), // leavers are scored 0
      pagesPerSecond: elapsedMs > 0 ? Math.round((done / (elapsedMs / 1000)) * 10) / 10 : 0,
      elapsedMs,
      topErrors: Object.entries(final ? final.errors : errors).map(([code, count]) => ({ code, count: Number(count) })).filter((e) => e.count > 0)
        .sort((a, b) => b.count - a.count || (a.code < b.code ? -1 : 1)).slice(0, 5),
    };
  } catch (error) {
    throw redis.toFrontierError(error);
  }
}

/** If they are this finish's. @param {Record<string, string>} meta @returns {{ failed: number, redirects: number, errors: Record<string, number> } | null} */
function finalOf(meta) {
  try {
    const final = meta.final ? JSON.parse(meta.final) : null;
    if (!final || String(final.finishedAt) !== meta.finishedAt || typeof final.failed !== 'number' || typeof final.redirects !== 'number') return null;
    return { failed: final.failed, redirects: final.redirects, errors: final.errors && typeof final.errors === 'object' ? final.errors : {} };
  } catch {
    return null;
  }
}

/** @param {CrawlStatus} s */
export function formatStatus(s) {
  const lines = [
    `crawl ${s.crawlId}: ${s.phase}${s.version ? ` (prerender ${s.version})` : ''}`,
    `queued ${s.queued} · leased ${s.leased} · done ${s.done} · failed ${s.failed} · redirects ${s.redirects}${s.notCrawled ? ` · not crawled (--max-pages) ${s.notCrawled}` : ''} · ${s.pagesPerSecond} pages/s`,
    ...(s.backoffs ? [`origins held back after 429/503: ${s.backoffs} time(s)`] : []),
    `workers alive: ${s.workers.length}`,
    ...s.workers.map((w) => `  ${w.id} (${w.role}) heartbeat ${(w.heartbeatAgeMs / 1000).toFixed(1)} s ago, ${w.pages} pages`),
  ];
  if (s.topErrors.length > 0) lines.push(`top errors: ${s.topErrors.map((e) => `${e.code} ${e.count}`).join(', ')}`);
  return lines.join('\n') + '\n';
}

/**
 * @param {{ frontier: string, crawlId: string, json?: boolean, watch?: boolean, intervalMs?: number, frontierTimeout?: number, signal?: AbortSignal }} options
 * @param {{ write(text: string): unknown }} out @returns {Promise<number>} exit code: 0, or 2 when there is no such crawl
 */
export async function statusCommand(options, out) {
    // `prerender status` has no --frontier-timeout: its messages name no such option.
  const redis = await connectRedis(options.frontier, { timeoutSeconds: options.frontierTimeout ?? 10, timeoutFlag: options.frontierTimeout === undefined ? '' : '--frontier-timeout' });
  try {
    for (;;) {
      const status = await readStatus(redis, options.crawlId);
      if (!status) throw new FrontierError(`no crawl "${options.crawlId}" in Redis`, { code: 'NO_CRAWL' });
      out.write(options.json ? JSON.stringify(status) + '\n' : formatStatus(status));
      if (!options.watch || status.phase === 'finished' || options.signal?.aborted) return 0;
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, options.intervalMs ?? 2000);
        options.signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(undefined); }, { once: true });
      });
      if (options.signal?.aborted) return 0;
    }
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}
