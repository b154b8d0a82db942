// @ts-check
import { Crawler } from '../crawler/index.js';
import { rootDepths } from '../engine/run.js';
import { defaultLoader } from '../fetch/index.js';
import { mimeOf, wantedFileName } from '../naming/file-names.js';
import { compileNameRules } from '../naming/rules.js';
import { createRobots } from '../fetch/robots.js';
import { loadListedRoots } from '../roots/sources.js';
import { resolveCrawlOptions } from '../options/crawl-options.js';
import { Scope } from '../roots/scope.js';
import { normalizeUrl } from '../url.js';
import { UsageError } from '../errors.js';
import { formSubmittingTo } from './forms.js';
import { DynamicGroups } from './dynamic-groups.js';
import { compileFreshness, describeFreshness } from '../recrawl/freshness.js';
import { readState } from '../recrawl/state.js';
import { STATE_DIR } from '../output/outdir.js';
import path from 'node:path';

/**
 * `prerender preview`: the crawl engine with nothing written. Each URL found gets a row (decision, would-be file, why);
 * totals group dynamic targets by path and exclusions by pattern.
 * @typedef {'crawl' | 'dynamic' | 'excluded' | 'failed'} Decision
 * @typedef {{ url: string, decision: Decision, file?: string, reason: string, pattern?: string, status?: number, redirectTo?: string,
 *   from?: string | null, rendered?: RenderedInfo, fresh?: { pattern: string, duration: string } }} PlanRow fresh: the --fresh rule that carries it
 * @typedef {{ renderMs: number, partial: boolean, addedLinks: string[], aborted: import('../render/page.js').AbortCounts,
 *   abortedList: import('../render/page.js').AbortedRequest[] }} RenderedInfo addedLinks: links only the rendered DOM had
 * @typedef {{ pagesInScope: number, failed: number, notCrawled: number, dynamicByPath: { path: string, links: number, pages: number }[],
 *   excludedByPattern: { pattern: string, urls: number }[], collisions: number, unsafeNames: number, durationMs: number, interrupted: boolean,
 *   nameFallbacks: { url: string, code: 'NAME_RULE' | 'UNSAFE_NAME', message: string }[], notFetched?: number }} PlanTotals
 *   notFetched: with --sample, in-scope URLs planned from their URL alone; unsafeNames: pages whose name header or --name rule was unsafe
 */

/** @param {string | undefined} pattern @param {string | undefined} root */
function crawlReason(pattern, root) {
  if (pattern === 'root') return 'root';
  if (pattern === 'listed') return 'listed in a sitemap or URL list';
  return `include ${pattern ?? root}`;
}

/** The rows show each. */
const MAX_FALLBACKS_LISTED = 20;

const FORM_REASON = 'form action: a form submits its fields to the live site, so it is never crawled nor pointed at a static file';

/** @param {{ kind: string, decision: string, nofollow?: boolean }} link */
function notFollowedReason(link) {
  if (link.kind === 'form') return FORM_REASON;
  if (link.decision !== 'crawl') return 'out of scope';
  if (link.nofollow) return 'linked only from pages with <meta name="robots" content="nofollow"> (--robots)';
  if (link.kind === 'requisite') return 'page requisite: fetched only with --assets; references to it stay live';
  return 'in scope, deeper than --max-depth: links to it stay live';
}

/** What --assets fetches, and --why judges by. */
const REQUISITE_TYPE = /^(text\/css|text\/javascript|application\/(x-)?javascript|application\/json|image\/|font\/|audio\/|video\/|application\/(font-|x-font|vnd\.ms-fontobject|wasm))/;

/**
 * Rows go to `onRow` as decided; crawl rows at the end, once names are final.
 * @param {Record<string, any>} options crawl options, plus `limit`
 * @param {{ onRow?: (row: PlanRow) => void, onProgress?: (crawler: Crawler) => void }} [hooks] @returns {Promise<{ totals: PlanTotals, crawler: Crawler }>}
 */
export async function preview(options, hooks = {}) {
  const { limit, ...rest } = options;
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1)) throw new UsageError(`--limit must be a whole number of at least 1, got ${JSON.stringify(limit)}`);
  if (rest.sample !== undefined && (!Number.isSafeInteger(rest.sample) || rest.sample < 1)) throw new UsageError(`--sample must be a whole number of at least 1, got ${JSON.stringify(rest.sample)}`);
  const crawler = new Crawler({ ...rest, ...(limit !== undefined ? { maxPages: limit } : {}), dryRun: true });
  const onRow = hooks.onRow ?? (() => {});
  hooks.onProgress?.(crawler);

  /** @type {Map<string, { pattern?: string, root?: string, from: string | null }>} first sight of each */
  const inScope = new Map();
  /** @type {Set<string>} */ const reported = new Set();
  const dynamicByPath = new DynamicGroups();
  /** @type {Map<string, number>} */ const excludedByPattern = new Map();
  /** @type {Map<string, { status: number, location: string }>} */ const redirects = new Map();
  /** @type {Map<string, { status?: number, message: string }>} */ const failures = new Map();
  let collisions = 0;
  /** @type {Map<string, { code: 'NAME_RULE' | 'UNSAFE_NAME', message: string }>} */ const fallbacks = new Map();

  crawler.on('admit', (event) => {
    if (!inScope.has(event.url)) inScope.set(event.url, { pattern: event.pattern, root: event.root, from: event.from });
  });
  const crawlOrigins = new Set(crawler.options.roots.map((root) => new URL(root).origin));
  /** @type {Map<string, PlanRow>} a row only if never crawled after all */
  const notFollowed = new Map();
  /** @type {Map<string, string | null>} --sample: URLs not fetched, and the page that links them */
  const sampledOut = new Map();
  crawler.on('link', (link) => {
    if (link.decision === 'crawl' && link.followed) return; // reported through 'admit'
    if (link.sampledOut) {
      if (!sampledOut.has(link.url)) sampledOut.set(link.url, link.from);
      return;
    }
    if (link.decision === 'excluded') {
      if (!reported.has(link.url)) {
        reported.add(link.url);
        excludedByPattern.set(link.pattern, (excludedByPattern.get(link.pattern) ?? 0) + 1);
        const reason = link.pattern === 'robots.txt' ? 'disallowed by robots.txt (--robots)' : `exclude ${link.pattern}`;
        onRow({ url: link.url, decision: 'excluded', pattern: link.pattern, reason, from: link.from });
      }
      return;
    }
    // out of scope, a form's action, or in scope but not followed (a requisite without --assets, nofollow, too deep)
    const url = new URL(link.url);
    const path = crawlOrigins.has(url.origin) ? url.pathname : `${url.host}${url.pathname}`;
    dynamicByPath.add(path, url, link.from);
    if (reported.has(link.url) || notFollowed.has(link.url)) return;
    /** @type {PlanRow} */ const row = { url: link.url, decision: 'dynamic', reason: notFollowedReason(link), from: link.from };
    if (link.decision === 'crawl') {
      notFollowed.set(link.url, row);
    } else {
      reported.add(link.url);
      onRow(row);
    }
  });
  crawler.on('redirect', (event) => redirects.set(event.url, { status: event.status, location: event.location }));
  crawler.on('failure', (event) => failures.set(event.url, { status: event.status, message: event.message }));
  crawler.on('warning', (warning) => {
    if (warning.code === 'NAME_COLLISION') collisions++;
    else if (warning.code === 'UNSAFE_NAME' || warning.code === 'NAME_RULE') fallbacks.set(warning.url, { code: warning.code, message: warning.message });
  });
  /** @type {Map<string, RenderedInfo>} */ const rendered = new Map();
  crawler.on('rendered', (event) => rendered.set(event.url, { renderMs: event.renderMs, partial: event.partial, addedLinks: event.addedLinks, aborted: event.aborted, abortedList: event.abortedList }));
  /** @type {Map<string, string>} */ const files = new Map();
  crawler.on('named', (event) => files.set(event.url, event.file));

  const result = await crawler.run();
  const pageFile = (/** @type {string} */ url) => {
    let current = url;
    for (let hops = 0; redirects.has(current) && hops < 10; hops++) current = /** @type {any} */ (redirects.get(current)).location;
    return files.get(current);
  };
  for (const [url, row] of notFollowed) if (!inScope.has(url)) onRow(row);
  const notFetched = planSampledOut(crawler, sampledOut, inScope, onRow);
  // As for crawl: with --requisite-errors warn, a requisite answering 404/410 is no failure.
  const missing = new Set((result.requisitesMissing ?? []).map((error) => error.url));
  const freshness = compileFreshness({ rules: crawler.options.fresh, honourCacheControl: false, origins: [...crawlOrigins] });
  let notCrawled = 0;
  for (const [url, seen] of inScope) {
    const reason = crawlReason(seen.pattern, seen.root);
    const failure = failures.get(url);
    if (failure && missing.has(url)) failure.message += ': a requisite the site lacks, not counted as failed with --requisite-errors warn';
    const redirect = redirects.get(url);
    const render = rendered.get(url);
    const base = { url, pattern: seen.pattern, from: seen.from, ...(render ? { rendered: render } : {}) };
    if (failure) {
      onRow({ ...base, decision: 'failed', reason: failure.message, ...(failure.status ? { status: failure.status } : {}) });
    } else if (redirect) {
      const file = pageFile(url);
      onRow(file
        ? { ...base, decision: 'crawl', file, reason: `${reason}; HTTP ${redirect.status} to ${redirect.location}`, redirectTo: redirect.location, status: redirect.status }
        : { ...base, decision: 'dynamic', reason: `HTTP ${redirect.status} to ${redirect.location}, which is not written: links stay live`, redirectTo: redirect.location, status: redirect.status });
    } else if (files.has(url)) {
      const fallback = fallbacks.get(url);
      const rule = freshness.ruleFor(url);
      const fresh = rule ? `; --fresh ${rule.pattern} ${rule.duration}: ${rule.seconds === Infinity ? 'a stored copy is carried for good' : `a stored copy younger than ${rule.duration} is carried`}, without a request` : '';
      onRow({ ...base, decision: 'crawl', file: files.get(url), reason: reason + fresh + (fallback ? `; ${fallback.message}` : ''), ...(rule ? { fresh: { pattern: rule.pattern, duration: rule.duration } } : {}) });
    } else {
      notCrawled++;
      onRow({ ...base, decision: 'dynamic', reason: result.interrupted ? 'in scope, not reached (interrupted)' : 'in scope, not crawled: --limit/--max-pages reached' });
    }
  }
  return {
    crawler,
    totals: {
      pagesInScope: files.size,
      failed: failures.size - missing.size,
      notCrawled,
      dynamicByPath: dynamicByPath.list(),
      excludedByPattern: [...excludedByPattern].map(([pattern, urls]) => ({ pattern, urls })),
      collisions,
      ...(rest.sample !== undefined ? { notFetched } : {}),
      unsafeNames: fallbacks.size,
      nameFallbacks: [...fallbacks].slice(0, MAX_FALLBACKS_LISTED).map(([url, fallback]) => ({ url, ...fallback })),
      durationMs: result.durationMs,
      interrupted: result.interrupted,
    },
  };
}

/**
 * --sample: a row for each in-scope URL left out, with the file its URL gives if it is HTML and sends no name header.
 * @param {Crawler} crawler @param {Map<string, string | null>} sampledOut @param {Map<string, unknown>} inScope URLs admitted
 * @param {(row: PlanRow) => void} onRow @returns {number} the rows
 */
function planSampledOut(crawler, sampledOut, inScope, onRow) {
  const o = crawler.options;
  const origins = new Set(o.roots.map((root) => new URL(root).origin));
  const rules = compileNameRules(o.name, [...origins]);
  let rows = 0;
  for (const [url, from] of sampledOut) {
    if (inScope.has(url)) continue;
    const parsed = new URL(url);
    const { file } = wantedFileName(parsed, 'text/html', undefined, origins.size > 1 || !origins.has(parsed.origin), rules.ruleFor(url) ?? {});
    onRow({ url, decision: 'crawl', file, from, reason: `in scope, not fetched (--sample ${o.sample}): its file if it is HTML and sends no name header` });
    rows++;
  }
  return rows;
}

/**
 * The fetch phase's guards (--max-url-length, --max-depth below the shallowest root); roots and listed URLs skip them.
 * @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {string} url canonical @param {Map<string, number>} depths @returns {string | null}
 */
function guardReason(o, url, depths) {
  if (url.length > o.maxUrlLength) return `longer than --max-url-length ${o.maxUrlLength}: links to it are not followed, they stay live`;
  const { origin, pathname } = new URL(url);
  const below = pathname.split('/').length - 2 - (depths.get(origin) ?? 0);
  if (below > o.maxDepth) return `${below} directories below the root's, deeper than --max-depth ${o.maxDepth}: links to it stay live`;
  return null;
}

/**
 * `--why <url>`: the root and pattern that decide a URL and, with one fetch, its file; and a form that submits to it.
 * @param {Record<string, any>} options crawl options @param {string} target
 */
export async function explainUrl(options, target) {
  /** @type {Map<string, { body: Buffer, contentType: string }>} */ const fetched = new Map();
  const answer = await explainDecision(options, target, fetched);
  // A URL --why does not fetch stays so: nothing more is fetched.
  if (fetched.size === 0) return answer;
  const o = resolveCrawlOptions({ ...options, dryRun: true });
  const form = await formSubmittingTo(o, [...o.roots, answer.url], answer.url, fetched);
  if (form) answer.asFormAction = `a form on ${form} submits to it; as a form action it is never crawled, the form's fields go to the live site`;
  return answer;
}

/**
 * @param {Record<string, any>} options @param {string} target @param {Map<string, { body: Buffer, contentType: string }>} fetched receives the page
 * @returns {Promise<Record<string, any> & { url: string }>}
 */
async function explainDecision(options, target, fetched) {
  const o = resolveCrawlOptions({ ...options, dryRun: true });
  const url = normalizeUrl(target);
  if (!url) throw new UsageError(`--why needs an absolute http(s) URL, got ${JSON.stringify(target)}`);
  const listed = await loadListedRoots(o, () => {});
  const scope = new Scope({ roots: o.roots, include: o.include, exclude: o.exclude, includeRegex: o.includeRegex, excludeRegex: o.excludeRegex, listed });
  const origins = new Set([...o.roots, ...listed].map((root) => new URL(root).origin));
  const origin = new URL(url).origin;
  const decision = scope.decide(url);
  /** @type {Record<string, any> & { url: string }} */ const answer = { url, decision: decision.decision };
  // With --assets, a requisite on a root's origin (or --assets-origins) is fetched outside the page scope.
  const assetOrigin = o.assets && (origins.has(origin) || o.assetsOrigins.includes(origin));
  if (decision.decision === 'excluded') {
    answer.reason = `matches exclude pattern ${decision.pattern}`;
    answer.pattern = decision.pattern;
  } else if (decision.decision === 'crawl') {
    answer.pattern = decision.pattern;
    answer.reason = decision.pattern === 'root' ? 'it is a root'
      : decision.pattern === 'listed' ? 'it is listed in a sitemap or URL list'
        : `matches include pattern ${decision.pattern}`;
    const roots = o.include.length + o.includeRegex.length === 0 ? o.roots.filter((root) => url.startsWith(new URL('.', root).href)) : o.roots.filter((root) => new URL(root).origin === origin);
    answer.roots = roots;
  } else {
    answer.reason = o.include.length + o.includeRegex.length > 0
      ? `matches no include pattern (${scope.toJSON().include.join(', ')})`
      : `outside every root's directory (${scope.toJSON().include.join(', ')})`;
  }
  answer.scope = scope.toJSON();
  if (decision.decision === 'crawl') Object.assign(answer, await freshnessOf(o, url, [...origins]));
  if (decision.decision === 'excluded' || (decision.decision === 'dynamic' && !assetOrigin)) return answer;
  // The plan shows such a URL dynamic, and never fetches it: neither does --why.
  const guard = decision.pattern === 'root' || decision.pattern === 'listed' ? null : guardReason(o, url, rootDepths([...o.roots, ...listed]));
  if (guard) return { ...answer, decision: 'dynamic', reason: `${decision.decision === 'crawl' ? `${answer.reason}, but ` : ''}${guard}` };
  const loader = defaultLoader({ concurrency: 1, timeout: o.timeout, retries: o.retries, maxPageBytes: o.maxPageBytes, headers: o.headers, retryDelay: o.retryDelay });
  try {
    if (o.robots && !(await createRobots(loader).allowed(url, o.signal))) {
      return { ...answer, decision: 'excluded', pattern: 'robots.txt', reason: 'disallowed by robots.txt (--robots)' };
    }
    const response = await loader.load(url, { signal: o.signal });
    answer.status = response.status;
    if (response.location !== undefined) {
      answer.redirectTo = normalizeUrl(response.location, url);
      return answer;
    }
    const contentType = String(response.headers['content-type'] ?? 'application/octet-stream');
    fetched.set(url, { body: response.body, contentType });
    // Requisites as the crawl treats them: only with --assets, then even out of page scope.
    if (REQUISITE_TYPE.test(mimeOf(contentType))) {
      const type = mimeOf(contentType);
      if (!o.assets) {
        answer.decision = 'dynamic';
        answer.reason = `a page requisite (${type}): fetched only with --assets; references to it stay live`;
        return answer;
      }
      if (decision.decision === 'dynamic') {
        answer.decision = 'crawl';
        answer.reason = `a page requisite (${type}) on ${origin}: --assets fetches it outside the page scope`;
      } else {
        answer.reason = `${answer.reason}; a page requisite (${type}), fetched with --assets`;
      }
    } else if (decision.decision === 'dynamic') {
      return answer; // an out-of-scope page: links to it stay live
    }
    const header = response.headers['x-builder-filename'] ?? response.headers['xbuilder-filename'];
    const rules = compileNameRules(o.name, [...origins]);
    const wanted = wantedFileName(new URL(url), contentType, Array.isArray(header) ? header[0] : header, origins.size > 1 || !origins.has(origin), rules.ruleFor(url) ?? {});
    answer.file = wanted.file;
    answer.fileFrom = wanted.refused ? `default name (${wanted.refused.message})` : wanted.from;
  } catch (error) {
    answer.fetchError = /** @type {Error} */ (error).message;
  } finally {
    await loader.close();
  }
  return answer;
}

/**
 * The --fresh rule or Cache-Control that would carry a URL's stored copy without a request, and until when.
 * @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {string} url @param {string[]} origins @returns {Promise<{ fresh?: string }>}
 */
async function freshnessOf(o, url, origins) {
  const freshness = compileFreshness({ rules: o.fresh, honourCacheControl: o.honourCacheControl, origins });
  if (!freshness.active) return {};
  const rule = freshness.ruleFor(url);
  const state = await readState(path.join(path.resolve(o.out), STATE_DIR)).catch(() => null);
  const stored = state?.pages.get(url);
  if (!stored || stored.state !== 'done') {
    const how = rule ? `--fresh ${rule.pattern} ${rule.duration}` : 'only --honour-cache-control';
    return { fresh: `${how} applies; ${o.out} holds no stored copy of it: the next crawl fetches it` };
  }
  const now = Math.floor((o.now?.() ?? Date.now()) / 1000);
  const fetched = stored.fetched === undefined ? 'at a time the state does not say' : new Date(stored.fetched * 1000).toISOString();
  const found = freshness.freshness(url, stored, now);
  if (found) return { fresh: `${describeFreshness(found)}; stored copy fetched ${fetched}: the next crawl carries it without a request` };
  return { fresh: `${rule ? `--fresh ${rule.pattern} ${rule.duration}` : 'Cache-Control'}: the stored copy, fetched ${fetched}, is no longer fresh: the next crawl fetches it` };
}
