// @ts-check
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { crawl } from '../lib/crawler/index.js';
import { explainUrl, preview } from '../lib/preview/index.js';
import { exists, listFilesIfAny, readManifest } from './crawl-helpers.js';
import { useTestDir } from './helpers/fixtures.js';

/**
 * `prerender preview` through real local servers: the plan it prints must be
 * what `crawl` then writes (same files, same decisions), and it must write nothing.
 */

/** @type {string} */
let dir;
// cli() runs in the test's temp dir, so no config file is found by accident.
const { cli, shop, sitemapSite, serve } = useTestDir('prerender-preview-', (made) => { dir = made; });

/**
 * @typedef {{ type: 'url', url: string, decision: string, file?: string, reason: string, pattern?: string,
 *   status?: number, redirectTo?: string, from?: string | null }} Row
 * @typedef {import('../lib/preview/index.js').PlanTotals & { type: 'totals' }} Totals
 */

/**
 * `prerender preview ... --json`, parsed.
 * @param {string[]} argv
 * @param {{ signal?: AbortSignal, cwd?: string }} [io]
 */
async function plan(argv, io) {
  const result = await cli(['preview', ...argv, '--json'], io);
  const lines = result.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
  const last = lines.at(-1);
  expect(last?.type, `last line is the totals; stderr: ${result.stderr}`).toBe('totals');
  expect(lines.slice(0, -1).every((line) => line.type === 'url')).toBe(true);
  return { ...result, rows: /** @type {Row[]} */ (lines.slice(0, -1)), totals: /** @type {Totals} */ (last) };
}

/**
 * `prerender crawl ... -o <out> -q`, and its manifest.
 * @param {string[]} argv
 * @param {string} out
 */
async function crawlTo(argv, out) {
  const result = await cli(['crawl', ...argv, '-o', out, '-q']);
  const manifest = await readManifest(out);
  return { ...result, manifest };
}

/**
 * The plan must be what the crawl wrote: every page with the same file, the
 * same failures, the same redirects, nothing else written.
 * @param {Row[]} rows
 * @param {Totals} totals
 * @param {any} manifest
 * @param {string} out
 */
async function expectPlanMatchesCrawl(rows, totals, manifest, out) {
  const pages = new Map(manifest.pages.map((/** @type {any} */ page) => [page.url, page.file]));
  const planned = new Map(rows.filter((row) => row.decision === 'crawl' && !row.redirectTo).map((row) => [row.url, row.file]));
  expect(planned).toEqual(pages);

  const byUrl = (/** @type {{ url: string }} */ a, /** @type {{ url: string }} */ b) => (a.url < b.url ? -1 : 1);
  expect(rows.filter((row) => row.decision === 'failed').map((row) => ({ url: row.url, status: row.status, message: row.reason })).sort(byUrl))
    .toEqual(manifest.errors.map((/** @type {any} */ error) => ({ url: error.url, status: error.status, message: error.message })).sort(byUrl));

  const redirectRows = rows.filter((row) => row.redirectTo);
  expect(redirectRows.map((row) => ({ url: row.url, location: row.redirectTo })).sort(byUrl))
    .toEqual(manifest.redirects.map((/** @type {any} */ r) => ({ url: r.url, location: r.location })).sort(byUrl));
  for (const row of redirectRows) expect(row.file, row.url).toBe(pages.get(/** @type {string} */ (row.redirectTo)));

  for (const row of rows.filter((r) => r.decision === 'dynamic' || r.decision === 'excluded')) {
    expect(pages.has(row.url), `${row.decision} ${row.url} was written by the crawl`).toBe(false);
  }
  expect(totals.pagesInScope).toBe(manifest.pages.length);
  expect(totals.failed).toBe(manifest.errors.length);
  expect(totals.collisions).toBe(manifest.warnings.filter((/** @type {any} */ w) => w.message.startsWith('file name collision')).length);
  expect(totals.unsafeNames).toBe(manifest.warnings.filter((/** @type {any} */ w) => w.message.startsWith('unsafe file name')).length);
  // Same files on disk: exactly the planned ones, plus the manifest.
  expect(await listFilesIfAny(out)).toEqual([...planned.values(), 'prerender-manifest.json'].sort());
}

/** Request count of the server, all paths. @param {Map<string, number>} hits */
const totalHits = (hits) => [...hits.values()].reduce((a, b) => a + b, 0);

describe('preview against the fixture shop', () => {
  const scope = ['-i', '/st/dir.asp', '/st/product.asp', '-x', '/st/product.asp?SKUSetID=2*'];

  it('plans exactly what crawl then writes: same files, same decisions', async () => {
    const s = await shop({ products: 25, count: 10 });
    const previewed = await plan([s.url, ...scope, '-c', '1']);
    expect(previewed.code).toBe(0);
    const out = path.join(dir, 'out');
    const crawled = await crawlTo([s.url, ...scope, '-c', '8'], out);
    expect(crawled.code).toBe(0);
    await expectPlanMatchesCrawl(previewed.rows, previewed.totals, crawled.manifest, out);

    // What the plan says, concretely: 18 products (2 and 20-25 excluded) and 3 catalogue pages.
    const crawlRows = previewed.rows.filter((row) => row.decision === 'crawl');
    expect(crawlRows).toHaveLength(21);
    expect(crawlRows.find((row) => row.url === `${s.origin}/st/product.asp?SKUSetID=7`)).toMatchObject({ file: 'st/product7.htm', reason: 'include /st/product.asp', pattern: '/st/product.asp' });
    expect(crawlRows.find((row) => row.url === s.url)).toMatchObject({ file: 'st/dir.asp.html', reason: 'root' });
    expect(crawlRows.find((row) => row.url === `${s.origin}/st/dir.asp?Start=11&Count=10`)).toMatchObject({ file: 'st/dir.asp@Start=11&Count=10.html', reason: 'include /st/dir.asp' });
    const excluded = previewed.rows.filter((row) => row.decision === 'excluded');
    expect(excluded.map((row) => row.url).sort()).toEqual([2, 20, 21, 22, 23, 24, 25].map((n) => `${s.origin}/st/product.asp?SKUSetID=${n}`).sort());
    for (const row of excluded) expect(row).toMatchObject({ pattern: '/st/product.asp?SKUSetID=2*', reason: 'exclude /st/product.asp?SKUSetID=2*' });
    const dynamic = previewed.rows.filter((row) => row.decision === 'dynamic');
    expect(dynamic.map((row) => row.url)).toContain(`${s.origin}/st/cart.asp?add=7&qty=1`);
    expect(dynamic.map((row) => row.url)).toContain(`${s.origin}/st/checkout.asp`);
    for (const row of dynamic) expect(row.reason).toMatch(/^(out of scope|form action: a form submits its fields to the live site)/);
    // One row per URL.
    expect(new Set(previewed.rows.map((row) => row.url)).size).toBe(previewed.rows.length);
    // Neither preview nor crawl fetched what is excluded or dynamic.
    expect([...s.hits.keys()].filter((key) => /SKUSetID=2|cart|checkout|search/.test(key))).toEqual([]);
  });

  it('groups dynamic targets by path and exclusions by pattern in the totals', async () => {
    const s = await shop({ products: 25, count: 10 });
    const { totals } = await plan([s.url, ...scope]);
    expect(totals).toMatchObject({ pagesInScope: 21, failed: 0, notCrawled: 0, collisions: 0, unsafeNames: 0, interrupted: false });
    // 21 fetched pages link the cart and the search form, the 18 product pages the checkout.
    expect(totals.dynamicByPath).toEqual([
      { path: '/st/cart.asp', links: 21, pages: 21 },
      { path: '/st/search.asp', links: 21, pages: 21 },
      { path: '/st/checkout.asp', links: 18, pages: 18 },
    ]);
    expect(totals.excludedByPattern).toEqual([{ pattern: '/st/product.asp?SKUSetID=2*', urls: 7 }]);
    expect(totals.durationMs).toBeGreaterThanOrEqual(0);

    const text = await cli(['preview', s.url, ...scope]);
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines.filter((line) => /^Plan: 21 pages in scope would be written; 0 failed; 0 in scope but not crawled \(\d+\.\d s\)$/.test(line))).toHaveLength(1);
    expect(lines).toContain('Dynamic targets (links kept live), by path:');
    expect(lines.some((line) => /^ {2}\/st\/cart\.asp +21 links from 21 pages$/.test(line))).toBe(true);
    expect(lines.some((line) => /^ {2}\/st\/checkout\.asp +18 links from 18 pages$/.test(line))).toBe(true);
    expect(lines).toContain('Exclusions by pattern:');
    expect(lines).toContain('  /st/product.asp?SKUSetID=2*  7 URLs');
    expect(lines).toContain('Name collisions: 0; unsafe names refused: 0');
    expect(lines).toContain('Nothing was written.');
  });

  it('prints the same plan as text and as JSON lines', async () => {
    const s = await shop({ products: 12, count: 5 });
    const json = await plan([s.url, ...scope]);
    const text = await cli(['preview', s.url, ...scope]);
    expect(text.code).toBe(0);
    const rowLines = text.stdout.split('\n\n')[0].split('\n');
    const parsed = rowLines.map((line) => {
      const match = /^(crawl|dynamic|excluded|failed) +(\S+)(?: {2}-> (.+?))? {2}\((.*)\)$/.exec(line);
      expect(match, line).not.toBeNull();
      const [, decision, url, file, reason] = /** @type {RegExpExecArray} */ (match);
      return { decision, url, file, reason };
    });
    const fromJson = json.rows.map((row) => ({ decision: row.decision, url: row.url, file: row.file, reason: row.reason }));
    const byUrl = (/** @type {{ url: string }} */ a, /** @type {{ url: string }} */ b) => (a.url < b.url ? -1 : 1);
    expect(parsed.sort(byUrl)).toEqual(fromJson.sort(byUrl));
    expect(parsed.length).toBeGreaterThan(10);
  });

  it('writes nothing to disk, even with an output directory configured', async () => {
    const s = await shop({ products: 8, count: 5 });
    const out = path.join(dir, 'out');
    await writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ out, roots: [s.url], include: ['/st/dir.asp', '/st/product.asp'] }));
    const defaultOut = path.resolve('prerendered');
    const defaultOutExisted = await exists(defaultOut);
    const before = await listFilesIfAny(dir);

    const result = await cli(['preview']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`crawl     ${s.origin}/st/product.asp?SKUSetID=8  -> st/product8.htm  (include /st/product.asp)`);
    expect(totalHits(s.hits)).toBe(10); // it did fetch: 2 catalogue pages + 8 products

    expect(await exists(out)).toBe(false);
    expect(await listFilesIfAny(dir)).toEqual(before);
    expect(await exists(defaultOut)).toBe(defaultOutExisted);
  });

  it('--limit n stops after n in-scope pages, and the n planned match a crawl with --max-pages n', async () => {
    const s = await shop({ products: 25, count: 10 });
    const limited = await plan([s.url, '-i', '/st/dir.asp', '/st/product.asp', '--limit', '5']);
    expect(limited.code).toBe(0);
    const crawlRows = limited.rows.filter((row) => row.decision === 'crawl');
    // The root is fetched first; its first links fill the remaining four places.
    expect(crawlRows.map((row) => [row.url, row.file])).toEqual([
      [s.url, 'st/dir.asp.html'],
      ...[1, 2, 3, 4].map((n) => [`${s.origin}/st/product.asp?SKUSetID=${n}`, `st/product${n}.htm`]),
    ]);
    expect([...s.hits.keys()].sort()).toEqual(['/st/dir.asp', ...[1, 2, 3, 4].map((n) => `/st/product.asp?SKUSetID=${n}`)].sort());
    expect(totalHits(s.hits)).toBe(5);
    const notCrawled = limited.rows.filter((row) => row.reason === 'in scope, not crawled: --limit/--max-pages reached');
    expect(notCrawled.map((row) => row.url).sort()).toEqual([
      ...[5, 6, 7, 8, 9, 10].map((n) => `${s.origin}/st/product.asp?SKUSetID=${n}`),
      `${s.origin}/st/dir.asp?Start=11&Count=10`,
    ].sort());
    for (const row of notCrawled) expect(row.decision).toBe('dynamic');
    expect(limited.totals).toMatchObject({ pagesInScope: 5, notCrawled: 7, failed: 0 });

    const out = path.join(dir, 'out');
    const crawled = await crawlTo([s.url, '-i', '/st/dir.asp', '/st/product.asp', '--max-pages', '5'], out);
    expect(crawled.manifest.pages.map((/** @type {any} */ page) => [page.url, page.file]).sort())
      .toEqual(crawlRows.map((row) => [row.url, row.file]).sort());
  });

  it('exits 1 when --max-pages leaves in-scope pages out, as crawl does; --limit, asked for, exits 0', async () => {
    const s = await shop({ products: 25, count: 10 });
    const capped = await plan([s.url, '-i', '/st/dir.asp', '/st/product.asp', '--max-pages', '5']);
    expect(capped.totals.notCrawled).toBe(7);
    expect(capped.code).toBe(1);
    const limited = await plan([s.url, '-i', '/st/dir.asp', '/st/product.asp', '--limit', '5']);
    expect(limited.code).toBe(0);
  });

  it('keeps --rate as crawl does: a preview of a production site is as gentle as its crawl', async () => {
    const s = await shop({ products: 3, count: 10 });
    const started = performance.now();
    const result = await plan([s.url, '-i', '/st/dir.asp', '/st/product.asp', '--rate', '5']);
    expect(result.totals.pagesInScope).toBe(4);
    // Four requests at five a second: the last starts 0.6 s after the first at the soonest.
    expect(performance.now() - started).toBeGreaterThanOrEqual(550);
  });

  it.each([
    [['preview', 'http://127.0.0.1:1/', '--limit', '0', '--json'], '--limit must be a whole number of at least 1, got 0'],
    [['preview', 'http://127.0.0.1:1/', '--bogus', '--json'], "unknown option '--bogus'"],
    [['crawl', 'http://127.0.0.1:1/', '--bogus', '--json'], "unknown option '--bogus'"],
    [['status', '--json'], 'give --frontier <redis-url> (or set REDIS_URL)'],
  ])('%j: with --json, a usage error is one JSON object on stdout too (exit 2)', async (argv, message) => {
    const result = await cli(argv);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(JSON.parse(result.stdout)).toEqual({ error: { code: 'USAGE', message } });
  });

  it.each([['0'], ['-1'], ['2.5'], ['many']])('--limit %s is a usage error (exit 2) and fetches nothing', async (value) => {
    const s = await shop();
    const result = await cli(['preview', s.url, `--limit=${value}`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--limit must be a whole number of at least 1');
    expect(result.stdout).toBe('');
    expect(s.hits.size).toBe(0);
  });
});

describe('preview against the sitemap site: collisions, unsafe names, failures, redirects', () => {
  it('plans the collision suffix, the refused name, the failure and the redirect exactly as crawl writes them', async () => {
    const site = await sitemapSite();
    const previewed = await plan([site.catalog, '--retries', '0', '-c', '1']);
    expect(previewed.code).toBe(1); // product 13 fails
    const out = path.join(dir, 'out');
    const crawled = await crawlTo([site.catalog, '--retries', '0', '-c', '8'], out);
    expect(crawled.code).toBe(1);
    await expectPlanMatchesCrawl(previewed.rows, previewed.totals, crawled.manifest, out);

    const row = (/** @type {string} */ url) => previewed.rows.find((r) => r.url === url);
    // legacy.asp?id=3 sorts before product.asp?id=3: it gets the name, the product the suffix.
    expect(row(`${site.origin}/catalog/legacy.asp?id=3`)).toMatchObject({ decision: 'crawl', file: 'catalog/product3.htm' });
    expect(row(site.product(3))).toMatchObject({ decision: 'crawl', file: 'catalog/product3-2.htm' });
    expect(row(site.product(5))).toMatchObject({ decision: 'crawl', file: 'catalog/product 5 (red).htm' });
    expect(row(`${site.origin}/catalog/unsafe.asp`)).toMatchObject({ decision: 'crawl', file: 'catalog/unsafe.asp.html' });
    expect(row(site.product(13))).toMatchObject({ decision: 'failed', status: 500, reason: 'HTTP 500' });
    expect(row(`${site.origin}/catalog/old.asp?id=2`)).toMatchObject({ decision: 'crawl', redirectTo: site.product(2), file: 'catalog/product2.htm' });
    expect(row(`${site.origin}/catalog/old.asp?id=2`)?.reason).toContain(`HTTP 301 to ${site.product(2)}`);
    expect(row(`${site.origin}/catalog/spec.pdf`)).toMatchObject({ decision: 'crawl', file: 'catalog/spec.pdf' });
    expect(row(`${site.origin}/info/about.asp`)).toMatchObject({ decision: 'dynamic', reason: 'out of scope' });
    expect(previewed.totals).toMatchObject({ pagesInScope: 10, failed: 1, collisions: 1, unsafeNames: 1, notCrawled: 0 });

    const text = await cli(['preview', site.catalog, '--retries', '0']);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`failed    ${site.product(13)}  (HTTP 500)\n`);
    expect(text.stdout).toContain(`crawl     ${site.product(3)}  -> catalog/product3-2.htm  (include ${site.origin}/catalog/)\n`);
    expect(text.stdout).toMatch(/Name collisions: 1; unsafe names refused: 1 \(these pages get their default name, as the crawl would write them\):\n {2}\S+\/catalog\/unsafe.asp {2}unsafe file name/);
  });

  it('gives the same plan whatever the concurrency', async () => {
    const site = await sitemapSite();
    const key = (/** @type {Row[]} */ rows) => rows.map((row) => `${row.decision} ${row.url} ${row.file ?? ''}`).sort();
    const one = await plan([site.catalog, '--retries', '0', '-c', '1']);
    const many = await plan([site.catalog, '--retries', '0', '-c', '16']);
    expect(key(many.rows)).toEqual(key(one.rows));
    expect({ ...many.totals, durationMs: 0 }).toEqual({ ...one.totals, durationMs: 0 });
  });
});

describe('preview --why <url>', () => {
  const scope = ['-i', '/st/dir.asp', '/st/product.asp', '-x', '/st/product.asp?SKUSetID=2*'];

  it('names the include pattern, the root, the status and the file from the name header, fetching that URL and reading the roots for forms', async () => {
    const s = await shop();
    const target = `${s.origin}/st/product.asp?SKUSetID=7`;
    const json = await cli(['preview', s.url, ...scope, '--why', target, '--json']);
    expect(json.code).toBe(0);
    const answer = JSON.parse(json.stdout);
    expect(answer).toMatchObject({
      url: target,
      decision: 'crawl',
      pattern: '/st/product.asp',
      reason: 'matches include pattern /st/product.asp',
      roots: [s.url],
      status: 200,
      file: 'st/product7.htm',
      fileFrom: 'name header',
    });
    expect(answer.scope).toEqual({
      include: [`${s.origin}/st/dir.asp`, `${s.origin}/st/product.asp`],
      exclude: [`${s.origin}/st/product.asp?SKUSetID=2*`],
    });
    // The URL, then the root, read for a form that submits to the URL (none does: nothing said of forms).
    expect([...s.hits]).toEqual([['/st/product.asp?SKUSetID=7', 1], ['/st/dir.asp', 1]]);

    const text = await cli(['preview', s.url, ...scope, '--why', target]);
    expect(text.code).toBe(0);
    expect(text.stdout.split('\n')).toEqual([
      target,
      '  decision  crawl',
      '  reason    matches include pattern /st/product.asp',
      `  roots     ${s.url}`,
      '  status    200',
      '  file      st/product7.htm (name header; a collision found by a full crawl would add a suffix)',
      `  scope     include ${s.origin}/st/dir.asp, ${s.origin}/st/product.asp; exclude ${s.origin}/st/product.asp?SKUSetID=2*`,
      '',
    ]);
  });

  it('names the exclude pattern of an excluded URL and the include patterns a dynamic URL misses, fetching nothing', async () => {
    const s = await shop();
    const excluded = JSON.parse((await cli(['preview', s.url, ...scope, '--json', '--why', `${s.origin}/st/product.asp?SKUSetID=21`])).stdout);
    expect(excluded).toMatchObject({ decision: 'excluded', pattern: '/st/product.asp?SKUSetID=2*', reason: 'matches exclude pattern /st/product.asp?SKUSetID=2*' });
    expect(excluded.file).toBeUndefined();
    const dynamic = JSON.parse((await cli(['preview', s.url, ...scope, '--json', '--why', `${s.origin}/st/cart.asp?add=1&qty=1`])).stdout);
    expect(dynamic).toMatchObject({ decision: 'dynamic', reason: `matches no include pattern (${s.origin}/st/dir.asp, ${s.origin}/st/product.asp)` });
    expect(dynamic.file).toBeUndefined();
    expect(s.hits.size).toBe(0);
  });

  it('names the root whose directory brings a URL into scope, and says when the URL is a root', async () => {
    const site = await sitemapSite();
    const roots = [site.catalog, `${site.origin}/info/about.asp`];
    const why = async (/** @type {string} */ url) => JSON.parse((await cli(['preview', ...roots, '--json', '--why', url])).stdout);
    expect(await why(site.product(2))).toMatchObject({ decision: 'crawl', pattern: `${site.origin}/catalog/`, roots: [site.catalog], file: 'catalog/product2.htm' });
    expect(await why(`${site.origin}/info/terms.asp`)).toMatchObject({ decision: 'crawl', pattern: `${site.origin}/info/`, roots: [`${site.origin}/info/about.asp`], file: 'info/terms.asp.html', fileFrom: 'default name' });
    expect(await why(site.catalog)).toMatchObject({ decision: 'crawl', pattern: 'root', reason: 'it is a root', roots: [site.catalog] });
    expect(await why(`${site.origin}/cart.asp`)).toMatchObject({ decision: 'dynamic', reason: `outside every root's directory (${site.origin}/catalog/, ${site.origin}/info/)` });
  });

  it('reports a refused name header, a redirect and a failing fetch', async () => {
    const site = await sitemapSite();
    const why = async (/** @type {string} */ url) => {
      const result = await cli(['preview', site.catalog, '--retries', '0', '--json', '--why', url]);
      expect(result.stderr).toBe('');
      return JSON.parse(result.stdout);
    };
    const unsafe = await why(`${site.origin}/catalog/unsafe.asp`);
    expect(unsafe).toMatchObject({ decision: 'crawl', status: 200, file: 'catalog/unsafe.asp.html' });
    expect(unsafe.fileFrom).toMatch(/^default name \(unsafe file name "\.\.\/\.\.\/etc\/passwd" \(".." segment\)/);
    expect(await why(`${site.origin}/catalog/old.asp?id=2`)).toMatchObject({ decision: 'crawl', status: 301, redirectTo: site.product(2) });
    const failed = await why(site.product(13));
    expect(failed).toMatchObject({ decision: 'crawl', fetchError: 'HTTP 500' });
    expect(failed.file).toBeUndefined();
    expect(site.hits.get('/catalog/product.asp?id=13')).toBe(1); // --retries 0 honoured

    const text = await cli(['preview', site.catalog, '--retries', '0', '--why', site.product(13)]);
    expect(text.stdout).toContain('  fetch     failed: HTTP 500\n');
  });

  it('agrees with the full plan for every URL the plan lists (API)', async () => {
    const s = await shop({ products: 12, count: 5 });
    const options = { roots: [s.url], include: ['/st/dir.asp', '/st/product.asp'], exclude: ['/st/product.asp?SKUSetID=1*'] };
    /** @type {import('../lib/preview/index.js').PlanRow[]} */
    const rows = [];
    await preview(options, { onRow: (row) => rows.push(row) });
    expect(rows.length).toBeGreaterThan(15);
    for (const row of rows) {
      const answer = await explainUrl(options, row.url);
      expect(answer.decision, row.url).toBe(row.decision);
      if (row.decision === 'excluded') expect(answer.pattern, row.url).toBe(row.pattern);
      if (row.decision === 'crawl') expect(answer.file, row.url).toBe(row.file);
    }
  });

  it('is a usage error (exit 2) for a URL that is not absolute http(s)', async () => {
    const s = await shop();
    for (const bad of ['st/product.asp', 'ftp://example.com/x', 'mailto:a@b.c']) {
      const result = await cli(['preview', s.url, '--why', bad]);
      expect(result.code, bad).toBe(2);
      expect(result.stderr).toContain('--why needs an absolute http(s) URL');
    }
    expect(s.hits.size).toBe(0);
  });
});

describe('preview engine', () => {
  it('fetches with the same bounded concurrency as crawl (-c 4: four requests in flight, never more)', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    /** @type {(() => void)[]} */
    let held = [];
    let released = false;
    const origin = await serve((req, res) => {
      if (req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(Array.from({ length: 12 }, (_, i) => `<a href="/p/${i + 1}">${i + 1}</a>`).join('\n'));
        return;
      }
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const answer = () => {
        inFlight--;
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<p>product</p>');
      };
      // Hold the first requests until four are in flight at once: a preview
      // that fetched one at a time would never get there (and time out).
      if (released) return answer();
      held.push(answer);
      if (held.length === 4) {
        released = true;
        for (const release of held) release();
        held = [];
      }
    });

    const { totals } = await preview({ roots: [`${origin}/`], concurrency: 4, timeout: 5000, retries: 0 });
    expect(totals.failed).toBe(0);
    expect(totals.pagesInScope).toBe(13);
    expect(maxInFlight).toBe(4);
  });

  it('stops on abort (Ctrl-C): exit 130, interrupted totals, nothing written', async () => {
    const controller = new AbortController();
    /** @type {http.ServerResponse[]} */
    const hanging = [];
    const origin = await serve((req, res) => {
      if (req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<a href="/slow">slow</a> <a href="/fast">fast</a>');
      } else if (req.url === '/slow') {
        hanging.push(res); // never answered: the abort must end the run
        controller.abort();
      } else {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<p>fast</p>');
      }
    });
    const before = await listFilesIfAny(dir);

    const result = await plan([`${origin}/`, '-c', '1'], { signal: controller.signal });
    expect(result.code).toBe(130);
    expect(result.totals.interrupted).toBe(true);
    expect(hanging).toHaveLength(1);
    const slow = result.rows.find((row) => row.url === `${origin}/slow`);
    expect(slow).toMatchObject({ decision: 'dynamic', reason: 'in scope, not reached (interrupted)' });
    expect(result.rows.find((row) => row.url === `${origin}/`)).toMatchObject({ decision: 'crawl', file: 'index.html' });
    expect(await listFilesIfAny(dir)).toEqual(before);
  });
  it('stops on Ctrl-C while its sitemaps load: exit 130 and, with --json, the error object, as crawl does', async () => {
    const controller = new AbortController();
    /** @type {http.ServerResponse[]} */
    const hanging = [];
    const origin = await serve((req, res) => {
      hanging.push(res); // the sitemap never comes: the abort must end the run
      controller.abort();
    });
    const result = await cli(['preview', '--sitemap', `${origin}/sitemap.xml`, '--json'], { signal: controller.signal });
    expect(result.code).toBe(130);
    expect(JSON.parse(result.stdout)).toEqual({ error: { code: 'INTERRUPTED', message: 'interrupted before any page was planned' } });
    expect(hanging).toHaveLength(1);
  });
});

/** @param {string[]} argv */
async function planRows(argv) {
  const result = await cli(['preview', ...argv, '--json']);
  const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line));
  return { code: result.code, rows: lines.filter((line) => line.type === 'url'), totals: lines.find((line) => line.type === 'totals') };
}

describe('preview lists every URL the crawl writes', () => {
  it('lists a sitemap URL that no crawled page links to', async () => {
    const site = await sitemapSite();
    const { rows, totals } = await planRows(['--sitemap', site.url, '--retries', '0']);
    const out = path.join(dir, 'out');
    await cli(['crawl', '--sitemap', site.url, '--retries', '0', '-o', out, '-q']);
    const manifest = await readManifest(out);
    const written = manifest.pages.map((/** @type {any} */ p) => p.url).sort();
    expect(written).toContain(`${site.origin}/info/privacy.asp`);
    expect(totals.pagesInScope).toBe(written.length);
    // Every page the crawl writes has its own crawl row in the plan.
    expect(rows.filter((row) => row.decision === 'crawl' && !row.redirectTo).map((row) => row.url).sort()).toEqual(written);
    expect(rows.find((row) => row.url === `${site.origin}/info/privacy.asp`)).toMatchObject({ decision: 'crawl', file: 'info/privacy.asp.html', reason: 'listed in a sitemap or URL list' });
  });

  it('lists the URLs of a URL list read from stdin', async () => {
    const site = await sitemapSite();
    const stdin = new PassThrough();
    stdin.end(`${site.product(4)}\n${site.product(5)}\n`);
    const result = await cli(['preview', '--urls', '-', '--json'], { stdin });
    const rows = result.stdout.trim().split('\n').map((line) => JSON.parse(line)).filter((line) => line.type === 'url');
    expect(rows.find((row) => row.url === site.product(4))).toMatchObject({ decision: 'crawl', file: 'catalog/product4.htm' });
    expect(rows.find((row) => row.url === site.product(5))).toMatchObject({ decision: 'crawl', file: 'catalog/product 5 (red).htm' });
  });

  it('lists an in-scope page reached only through a redirect', async () => {
    const site = await sitemapSite();
    const root = `${site.origin}/info/about.asp`; // links old-terms.asp, which redirects to terms.asp
    const { rows, totals } = await planRows([root]);
    const out = path.join(dir, 'out');
    await cli(['crawl', root, '-o', out, '-q']);
    const manifest = await readManifest(out);
    expect(manifest.pages.map((/** @type {any} */ p) => [p.url, p.file])).toContainEqual([`${site.origin}/info/terms.asp`, 'info/terms.asp.html']);
    expect(totals.pagesInScope).toBe(2);
    expect(rows.find((row) => row.url === `${site.origin}/info/terms.asp`)).toMatchObject({ decision: 'crawl', file: 'info/terms.asp.html' });
  });
});

describe('preview rows and totals match the crawl', () => {
  it('gives an excluded root one row, "excluded", and does not count it as not crawled', async () => {
    const site = await sitemapSite();
    const { rows, totals } = await planRows([site.catalog, '-x', '/catalog/index.asp']);
    expect(rows.filter((row) => row.url === site.catalog)).toEqual([
      { type: 'url', url: site.catalog, decision: 'excluded', pattern: '/catalog/index.asp', reason: 'exclude /catalog/index.asp', from: null },
    ]);
    expect(totals.notCrawled).toBe(0);
  });

  it('counts the in-scope URLs left out by --limit / --max-pages the same way as crawl (each URL once)', async () => {
    const s = await shop({ products: 25, count: 10 });
    const options = { roots: [s.url], include: ['/st/dir.asp', '/st/product.asp'] };
    const { totals } = await preview({ ...options, limit: 5 });
    expect(totals.notCrawled).toBe(7); // products 5-10 and dir.asp?Start=11
    const result = await crawl({ ...options, maxPages: 5, out: path.join(dir, 'out') });
    // product 5 is linked from dir.asp and from product 4: still one URL.
    expect(result.notCrawled).toBe(totals.notCrawled);
  });
});

describe('preview --why knows what crawl knows', () => {
  it('knows that a URL listed in a --sitemap is in scope, as the plan does', async () => {
    const site = await sitemapSite();
    const { rows } = await planRows(['--sitemap', site.url, '--retries', '0']);
    expect(rows.find((row) => row.url === site.product(2))).toMatchObject({ decision: 'crawl', pattern: 'listed' });
    const why = await cli(['preview', '--sitemap', site.url, '--json', '--why', site.product(2)]);
    expect(why.code).toBe(0);
    expect(JSON.parse(why.stdout)).toMatchObject({ decision: 'crawl', pattern: 'listed', file: 'catalog/product2.htm' });
  });

  it('knows --max-depth and --max-url-length, as the plan does, and fetches nothing for them', async () => {
    /** @type {string[]} */
    const hits = [];
    const long = `/l/${'x'.repeat(100)}.html`;
    const origin = await serve((req, res) => {
      hits.push(String(req.url));
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(req.url === '/' ? `<a href="/d/1/2/p.html">deep</a> <a href="/d/1/q.html">shallower</a> <a href="${long}">long</a>` : '<p>page</p>');
    });
    const args = [`${origin}/`, '--max-depth', '2', '--max-url-length', '100', '--retries', '0'];
    const { rows } = await planRows(args);
    for (const [path, decision] of [['/d/1/2/p.html', 'dynamic'], ['/d/1/q.html', 'crawl'], [long, 'dynamic']]) {
      expect(rows.find((row) => row.url === origin + path), path).toMatchObject({ decision });
      hits.length = 0;
      const why = JSON.parse((await cli(['preview', ...args, '--json', '--why', origin + path])).stdout);
      expect(why.decision, path).toBe(decision);
      // A URL it fetches, and the roots, read for a form that submits to it.
      expect(hits, path).toEqual(decision === 'crawl' ? [path, '/'] : []);
    }
    const deep = JSON.parse((await cli(['preview', ...args, '--json', '--why', `${origin}/d/1/2/p.html`])).stdout);
    expect(deep.reason).toBe(`matches include pattern ${origin}/, but 3 directories below the root's, deeper than --max-depth 2: links to it stay live`);
    // A root is admitted as it is, however deep.
    const root = JSON.parse((await cli(['preview', `${origin}/d/1/2/p.html`, '--max-depth', '1', '--json', '--why', `${origin}/d/1/2/p.html`])).stdout);
    expect(root).toMatchObject({ decision: 'crawl', pattern: 'root', file: 'd/1/2/p.html' });
  });

  it('gives the file the crawl writes when the roots span several origins', async () => {
    const a = await shop({ products: 3 });
    const b = await sitemapSite();
    const args = [a.url, b.catalog, '-i', '/st/dir.asp', '/st/product.asp', '/catalog/', '--retries', '0'];
    const target = `${a.origin}/st/product.asp?SKUSetID=2`;
    const { rows } = await planRows(args);
    const planned = rows.find((row) => row.url === target);
    expect(planned.file).toBe(`127.0.0.1_${new URL(a.origin).port}/st/product2.htm`);
    const why = JSON.parse((await cli(['preview', ...args, '--json', '--why', target])).stdout);
    expect(why.file).toBe(planned.file);
  });
});
