// @ts-check
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGitweb } from '../fixtures/gitweb.js';
import { startMediaWiki } from '../fixtures/mediawiki.js';
import { readManifest } from './crawl-helpers.js';
import { splitMissingRequisites } from '../lib/engine/errors-list.js';
import { useTestDir } from './helpers/fixtures.js';
import { HAVE_REDIS, startRedis } from './helpers/redis.js';

/**
 * What got in a user's way on two real server-rendered apps (issue 43), on
 * fixtures in their shape: gitweb (";"-separated queries) and MediaWiki
 * (path-info titles, a missing favicon).
 */

/** @type {Awaited<ReturnType<typeof startGitweb>>} */
let gitweb;
/** @type {Awaited<ReturnType<typeof startMediaWiki>>} */
let wiki;
/** @type {string} */
let dir;
const { cli } = useTestDir('prerender-real-apps-', (made) => { dir = made; });

beforeAll(async () => {
  gitweb = await startGitweb();
  wiki = await startMediaWiki();
});
afterAll(async () => {
  await gitweb?.close();
  await wiki?.close();
});
beforeEach(() => {
  gitweb.reset();
  wiki.reset();
});

/** `preview --json`, parsed. @param {string[]} argv */
async function plan(argv) {
  const result = await cli(['preview', ...argv, '--json']);
  const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line));
  return { ...result, rows: lines.slice(0, -1), totals: lines.at(-1) };
}

describe('--name on gitweb: query parameters split on ";"', () => {
  it('names each commit page from {query.h}, none falls back', async () => {
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', gitweb.url('/gitweb.cgi'), '-o', out, '--json', '--name', '/gitweb.cgi?p=repo.git;a=commit;h=*', 'commit/{query.h}.html']);
    expect(result.code, result.stderr).toBe(0);
    expect((await readdir(path.join(out, 'commit'))).sort()).toEqual(gitweb.commits.map((h) => `${h}.html`).sort());
    const manifest = await readManifest(out);
    expect(manifest.warnings ?? []).toEqual([]);
  });
});

describe('--name on MediaWiki: safe path placeholders, and preview shows every fallback', () => {
  it('{rest} keeps every title under wiki/, parents and all', async () => {
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', wiki.url('/index.php/Main_Page'), '-i', '/index.php/', '-o', out, '-q', '--name', '/index.php/*', '/wiki/{rest}.html']);
    expect(result.code, result.stderr).toBe(0);
    const files = Object.values((await readManifest(out)).pages).map((page) => /** @type {any} */ (page).file).sort();
    expect(files).toEqual(['wiki/Category_Group_A/B/C.html', 'wiki/Guide/Install.html', 'wiki/Main_Page.html', 'wiki/What_.html', 'wiki/Übersicht.html']);
  });

  it('preview counts and lists the --name fallbacks the crawl warns about', async () => {
    const argv = [wiki.url('/index.php/Main_Page'), '-i', '/index.php/', '--name', '/index.php/*', '/wiki/{query.title}.html'];
    const { totals, rows } = await plan(argv);
    expect(totals.unsafeNames).toBe(5);
    expect(totals.nameFallbacks[0]).toMatchObject({ code: 'NAME_RULE' });
    expect(rows.filter((row) => row.decision === 'crawl').every((row) => /unsafe name from --name rule/.test(row.reason))).toBe(true);
    const text = await cli(['preview', ...argv]);
    expect(text.stdout).toMatch(/unsafe names refused: 5 \(these pages get their default name/);
    const out = path.join(dir, 'out');
    await cli(['crawl', ...argv, '-o', out, '-q']);
    const warnings = (await readManifest(out)).warnings.filter((/** @type {any} */ warning) => warning.code === 'NAME_RULE');
    expect(warnings.length).toBe(totals.unsafeNames);
  });
});

describe('preview --why speaks of forms only when a form submits to the URL', () => {
  it('gitweb: the search form\'s action is said, a commit page is not', async () => {
    const args = ['preview', gitweb.url('/gitweb.cgi'), '--json', '--why'];
    const action = JSON.parse((await cli([...args, gitweb.url('/gitweb.cgi')])).stdout);
    expect(action.asFormAction).toMatch(/^a form on \S+\/gitweb.cgi submits to it; as a form action it is never crawled/);
    const commit = JSON.parse((await cli([...args, gitweb.url(`/gitweb.cgi?p=repo.git;a=commit;h=${gitweb.commits[0]}`)])).stdout);
    expect(commit.decision).toBe('crawl');
    expect(commit.asFormAction).toBeUndefined();
    const text = await cli(['preview', gitweb.url('/gitweb.cgi'), '--why', gitweb.url(`/gitweb.cgi?p=repo.git;a=commit;h=${gitweb.commits[0]}`)]);
    expect(text.stdout).not.toMatch(/form action/);
  });
});

describe('preview: dynamic targets on a query-routed app', () => {
  it('gitweb: /gitweb.cgi is split by a=', async () => {
    const { totals } = await plan([gitweb.url('/gitweb.cgi'), '-i', '/gitweb.cgi?p=repo.git;a=summary']);
    const paths = totals.dynamicByPath.map((/** @type {{ path: string }} */ group) => group.path);
    expect(paths).toEqual(expect.arrayContaining(['/gitweb.cgi?a=commit', '/gitweb.cgi?a=shortlog', '/gitweb.cgi?a=tree', '/gitweb.cgi?a=rss']));
    expect(paths).not.toContain('/gitweb.cgi');
  });
});

describe('--requisite-errors: a requisite the site lacks is no failure by default', () => {
  it('MediaWiki\'s /favicon.ico answers 404: --assets exits 0 and says so; fail exits 1', async () => {
    const argv = ['crawl', wiki.url('/index.php/Main_Page'), '-i', '/index.php/', '--assets', '--retries', '0'];
    const warned = await cli([...argv, '-o', path.join(dir, 'a')]);
    expect(warned.code, warned.stdout).toBe(0);
    expect(warned.stdout).toMatch(/1 requisite the site lacks \(HTTP 404\/410\), listed in the manifest's errors but not counted as failed[^\n]*\n {2}\S+\/favicon.ico {2}HTTP 404/);
    expect(warned.stdout).not.toMatch(/failed:/);
    const manifest = await readManifest(path.join(dir, 'a'));
    expect(manifest.errors).toMatchObject([{ url: wiki.url('/favicon.ico'), status: 404, kind: 'requisite' }]);
    const planned = await plan(argv.slice(1));
    expect(planned.code).toBe(0);
    expect(planned.totals.failed).toBe(0);
    expect(planned.rows.find((row) => row.url === wiki.url('/favicon.ico'))?.reason).toMatch(/not counted as failed with --requisite-errors warn/);
    const failed = await cli([...argv, '-o', path.join(dir, 'b'), '--requisite-errors', 'fail']);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/1 failed:\n {2}\S+\/favicon.ico/);
  });

  it.each([
    ['a page that answers 404 stays a failure', { url: 'http://w/gone', status: 404, message: 'HTTP 404', referrers: [] }, 'warn', true],
    ['a requisite that answers 500 stays a failure', { url: 'http://w/x.css', status: 500, message: 'HTTP 500', kind: 'requisite', referrers: [] }, 'warn', true],
    ['a requisite that answers 410 is missing, not failed', { url: 'http://w/x.css', status: 410, message: 'HTTP 410', kind: 'requisite', referrers: [] }, 'warn', false],
    ['with fail, a requisite that answers 404 is a failure', { url: 'http://w/favicon.ico', status: 404, message: 'HTTP 404', kind: 'requisite', referrers: [] }, 'fail', true],
  ])('%s', (_, error, mode, fails) => {
    const { failures, missing } = splitMissingRequisites([/** @type {any} */ (error)], /** @type {'warn' | 'fail'} */ (mode));
    expect(failures.length).toBe(fails ? 1 : 0);
    expect(missing.length).toBe(fails ? 0 : 1);
  });
});

describe('--include-regex on gitweb: exactly a=tree, not a=tree;h=', () => {
  it('crawls the pages the regex anchors, and no other', async () => {
    const out = path.join(dir, 'out');
    const result = await cli(['crawl', gitweb.url('/gitweb.cgi'), '-o', out, '-q', '--include-regex', '[?;]a=(summary|tree)$']);
    expect(result.code, result.stderr).toBe(0);
    const urls = Object.values((await readManifest(out)).pages).map((page) => /** @type {any} */ (page).url).sort();
    expect(urls).toEqual([gitweb.url('/gitweb.cgi'), gitweb.url('/gitweb.cgi?p=repo.git;a=summary'), gitweb.url('/gitweb.cgi?p=repo.git;a=tree')]);
  });
});

describe('--dedupe: identical pages under two URLs share one file', () => {
  const shortlog = () => gitweb.url('/gitweb.cgi?p=repo.git;a=shortlog');
  const first = () => gitweb.url('/gitweb.cgi?p=repo.git;a=shortlog;pg=0');
  /** @param {any} manifest @param {string} url */
  const fileOf = (manifest, url) => manifest.pages.find((/** @type {any} */ page) => page.url === url)?.file;

  it('gitweb: a=shortlog;pg=0 is an alias of a=shortlog; links lead to it; a re-crawl writes nothing; preview agrees', async () => {
    const out = path.join(dir, 'out');
    const argv = [gitweb.url('/gitweb.cgi'), '--dedupe', '--retries', '0'];
    const result = await cli(['crawl', ...argv, '-o', out, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const manifest = await readManifest(out);
    expect(fileOf(manifest, first())).toBe('gitweb.cgi@p=repo.git;a=shortlog.html');
    expect(fileOf(manifest, shortlog())).toBe('gitweb.cgi@p=repo.git;a=shortlog.html');
    expect((await readdir(out)).filter((name) => name.includes('shortlog;pg=0'))).toEqual([]);
    const page1 = await readFile(path.join(out, 'gitweb.cgi@p=repo.git;a=shortlog;pg=1.html'), 'utf8');
    expect(page1).toContain('<a href="gitweb.cgi@p=repo.git;a=shortlog.html">first</a>');
    expect(manifest.warnings ?? []).toEqual([]);

    const again = JSON.parse((await cli(['crawl', ...argv, '-o', out, '--json'])).stdout);
    expect(again.churn).toMatchObject({ new: 0, changed: 0, filesWritten: 0 });
    expect(await readManifest(out)).toMatchObject({ pages: manifest.pages });

    const { rows } = await plan(argv);
    expect(rows.find((row) => row.url === first())).toMatchObject({ decision: 'crawl', file: 'gitweb.cgi@p=repo.git;a=shortlog.html' });
  });

  it.skipIf(!HAVE_REDIS)('a crawl shared through Redis names the same aliases as one process', async () => {
    const redis = await startRedis();
    try {
      const one = path.join(dir, 'one');
      const shared = path.join(dir, 'shared');
      expect((await cli(['crawl', gitweb.url('/gitweb.cgi'), '--dedupe', '-o', one, '-q'])).code).toBe(0);
      const result = await cli(['crawl', gitweb.url('/gitweb.cgi'), '--dedupe', '-o', shared, '-q', '--frontier', redis.url, '--crawl-id', 'dedupe']);
      expect(result.code, result.stderr).toBe(0);
      const files = async (/** @type {string} */ out) => Object.fromEntries((await readManifest(out)).pages.map((/** @type {any} */ page) => [page.url, page.file]));
      const local = await files(one);
      expect(local[first()]).toBe('gitweb.cgi@p=repo.git;a=shortlog.html');
      expect(await files(shared)).toEqual(local);
    } finally {
      await redis.stop();
    }
  });

  it('without --dedupe, each URL keeps a file of its own', async () => {
    const out = path.join(dir, 'out');
    await cli(['crawl', gitweb.url('/gitweb.cgi'), '-o', out, '-q']);
    expect(fileOf(await readManifest(out), first())).toBe('gitweb.cgi@p=repo.git;a=shortlog;pg=0.html');
  });
});

describe('preview --sample: a plan that fetches the roots and a sample only', () => {
  it('gitweb: at most n pages past the root, two of each shape; the rest planned from the URL', async () => {
    const { rows, totals, code } = await plan([gitweb.url('/gitweb.cgi'), '--sample', '6']);
    expect(code).toBe(0);
    expect(gitweb.total()).toBeLessThanOrEqual(1 + 6);
    const fetchedCommits = gitweb.commits.filter((h) => gitweb.count(`/gitweb.cgi?p=repo.git;a=commit;h=${h}`) > 0);
    expect(fetchedCommits.length).toBeLessThanOrEqual(2);
    const planned = rows.filter((row) => /not fetched \(--sample 6\)/.test(row.reason));
    expect(planned.length).toBe(totals.notFetched);
    expect(planned.length).toBeGreaterThan(0);
    const commit = planned.find((row) => row.url.includes('a=commit;h='));
    expect(commit).toMatchObject({ decision: 'crawl', file: expect.stringMatching(/^gitweb\.cgi@p=repo\.git;a=commit;h=[0-9a-f]{40}\.html$/) });
    expect(gitweb.count(new URL(commit.url).pathname + new URL(commit.url).search)).toBe(0);
    const text = await cli(['preview', gitweb.url('/gitweb.cgi'), '--sample', '6']);
    expect(text.stdout).toMatch(/Sample: \d+ more in-scope URLs found and planned from the URL alone, not fetched \(--sample\)/);
  });

  it('a sample that is not a whole number is a usage error', async () => {
    expect((await cli(['preview', gitweb.url('/gitweb.cgi'), '--sample', '0'])).code).toBe(2);
  });
});
