// @ts-check
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cp, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { startChangingSite } from '../fixtures/changing-site.js';
import { listFiles, readManifest, tempDirs } from './crawl-helpers.js';
import { runCli, runNode } from './helpers/cli.js';
import { fileURLToPath } from 'node:url';
import { crawl } from '../lib/index.js';
import { snapshot } from '../bench/lib/same-output/snapshot.js';

/**
 * `crawl --changed`: a re-crawl of an origin that sends no validators, told
 * which URLs changed. Only those (with --with-referrers, the pages linking
 * to them) and the new pages they link to are asked for; the rest is
 * carried from the state. The oracle is a full re-crawl of the same changed
 * origin from a copy of the same OUT: trees, manifests and states come out
 * byte for byte the same (the stored copies' fetch times aside).
 */

/** @type {Awaited<ReturnType<typeof startChangingSite>>} */
let site;
const dirs = tempDirs();
const fresh = async () => {
  site = await startChangingSite({ products: 20 });
  site.setValidators('none');
};
beforeAll(fresh);
afterAll(async () => {
  await site.close();
  await dirs.cleanup();
});
afterEach(async () => {
  await site.close();
  await fresh();
});

/**
 * @param {string} out
 * @param {Record<string, unknown>} [extra]
 */
const crawlInto = (out, extra = {}) => crawl({ roots: [site.root], exclude: ['/cart.asp'], out, retries: 0, threads: 1, ...extra });

/**
 * @param {string} dir
 * @param {string[]} urls
 */
async function listFile(dir, urls) {
  const file = path.join(dir, 'changed.txt');
  await writeFile(file, `# from the catalogue\n${urls.join('\n')}\n`);
  return file;
}

/** The paths the origin was asked for since its counters were reset, sorted. */
const asked = () => [...site.log].sort();

/**
 * A snapshot of OUT as bench/same-output.js takes it: the stored copies' fetch times blanked with the other run-to-run fields.
 * @param {string} out
 */
const shapeOf = (out) => snapshot(out);

/**
 * A first crawl into one OUT, copied to a second: the --changed run goes into the
 * first, a full re-crawl of the same changed origin (the oracle) into the second.
 */
async function twoCopies() {
  return twoCopiesWith({});
}

/** @param {Record<string, unknown>} options of every crawl of the test */
async function twoCopiesWith(options) {
  const dir = await dirs.make();
  const out = path.join(dir, 'out');
  const oracle = path.join(dir, 'oracle');
  const first = await crawlInto(out, options);
  expect(first.failed).toBe(0);
  await cp(out, oracle, { recursive: true });
  return { dir, out, oracle };
}

describe('crawl --changed', () => {
  it('a changed, a renamed, a removed and an added product: only they, their referrers and new links are asked for, and OUT is what a full re-crawl makes', async () => {
    const { dir, out, oracle } = await twoCopies();
    site.change(3);
    site.rename(7, 'renamed-7.htm');
    site.remove(12);
    site.add(21); // linked from the home page and from product 20 ("next")
    const list = await listFile(dir, [3, 7, 12, 20, 21].map((n) => site.product(n)));
    site.resetCounters();
    const result = await crawlInto(out, { changed: list, withReferrers: true });
    // The listed pages, and the pages that linked to one of them: home, 2 (to 3), 6 (to 7), 11 (to 12), 19 (to 20).
    expect(asked()).toEqual(['/', ...[11, 12, 19, 2, 20, 21, 3, 6, 7].map((n) => `/p/${n}.asp`)]);
    expect(result.fetched).toBe(9); // the 404 is no page
    expect(result.carried).toEqual({ fresh: 0, listed: 12, dated: 0 });
    expect(result.churn).toMatchObject({ new: 1, changed: 3, removed: 1, failed: 0 });
    expect(result.warnings).toBe(0);
    site.resetCounters();
    const full = await crawlInto(oracle);
    expect(site.counters.requests).toBe(22); // the oracle asks for every page, and product 11's link to the one removed
    expect(full.churn.removed).toBe(1);
    expect(await shapeOf(out)).toEqual(await shapeOf(oracle));
    expect(await listFiles(out)).toContain('p/renamed-7.htm');
  });

  it('carries what is not listed without a request, its file untouched; a link to a renamed page is rewritten in the pages that hold it, and only those are written', async () => {
    const { dir, out } = await twoCopies();
    const before = await inodes(out);
    site.rename(7, 'seven.htm');
    site.change(9); // not listed: not asked for, so not seen
    const list = await listFile(dir, [site.product(7)]);
    site.resetCounters();
    const result = await crawlInto(out, { changed: list });
    expect(asked()).toEqual(['/p/7.asp']);
    expect(result.carried.listed).toBe(20);
    const after = await inodes(out);
    const written = Object.keys(after).filter((file) => before[file] !== after[file]).sort();
    // The home page and product 6 link to product 7: rewritten; product 7 has its new file.
    expect(written).toEqual(['index.html', 'p/p6.htm', 'p/seven.htm', 'prerender-manifest.json']);
    expect(await readFile(path.join(out, 'index.html'), 'utf8')).toContain('p/seven.htm');
    expect(await readFile(path.join(out, 'p', 'p9.htm'), 'utf8')).toContain('version 1');
  });

  it('a list naming URLs out of scope or never crawled: said in warnings, and nothing is lost', async () => {
    const { dir, out } = await twoCopies();
    const files = await listFiles(out);
    const list = await listFile(dir, ['http://elsewhere.invalid/x', `${site.origin}/cart.asp?add=1`, site.product(99)]);
    site.resetCounters();
    const result = await crawlInto(out, { changed: list, withReferrers: true });
    expect(site.counters.requests).toBe(0);
    expect(result.failed).toBe(0);
    expect(result.churn).toMatchObject({ removed: 0, filesWritten: 0 });
    const warnings = (await readManifest(out)).warnings;
    expect(warnings.map((warning) => warning.code).sort()).toEqual(['CHANGED_NOT_CRAWLED', 'CHANGED_OUT_OF_SCOPE']);
    expect(warnings.find((warning) => warning.code === 'CHANGED_OUT_OF_SCOPE')?.message).toMatch(/2 URLs .*elsewhere\.invalid.*cart\.asp/);
    expect(warnings.find((warning) => warning.code === 'CHANGED_NOT_CRAWLED')?.message).toContain('/p/99.asp');
    expect(await listFiles(out)).toEqual(files);
    expect((await readManifest(out)).pages).toHaveLength(21);
  });

  it('a page no longer linked but not listed is kept (listed stale), not removed', async () => {
    const { dir, out } = await twoCopies();
    site.remove(15); // the home page no longer lists it; product 14 still links to it
    const list = await listFile(dir, [site.root]);
    const result = await crawlInto(out, { changed: list });
    // Product 14 is carried with its stored link: product 15 is still reached, and kept as it was.
    expect(result.churn.removed).toBe(0);
    expect(await listFiles(out)).toContain('p/p15.htm');
  });

  it('reads the list from stdin with "-", and --json counts the pages fetched and carried', async () => {
    const { out } = await twoCopies();
    site.change(4);
    site.resetCounters();
    const stdin = Readable.from([`${site.product(4)}\n`]);
    const ran = await runCli(['crawl', site.root, '-x', '/cart.asp', '-o', out, '--json', '--retries', '0', '--changed', '-', '--with-referrers'], { cwd: path.dirname(out), stdin });
    expect(ran.code).toBe(0);
    const summary = JSON.parse(ran.stdout);
    expect(summary).toMatchObject({ fetched: 3, carried: { fresh: 0, listed: 18, dated: 0 } });
    expect(asked()).toEqual(['/', '/p/3.asp', '/p/4.asp']);
    const human = await runCli(['crawl', site.root, '-x', '/cart.asp', '-o', out, '--retries', '0', '--changed', '-'], { cwd: path.dirname(out), stdin: Readable.from([`${site.product(4)}\n`]) });
    expect(human.stdout).toMatch(/Fetched 1 page; carried 20 from the last crawl without a request \(20 not in the --changed list\)/);
  });

  it('killed mid-way, then run again with the same list: resumed, and OUT is what a full re-crawl makes', async () => {
    const scope = { include: ['/'] }; // kill-crawl.js's, so that its journal is resumed
    const { dir, out, oracle } = await twoCopiesWith(scope);
    site.change(3);
    site.change(10);
    const list = await listFile(dir, [site.product(3), site.product(10)]);
    const options = { exclude: ['/cart.asp'], changed: list, withReferrers: true };
    site.resetCounters();
    const kill = fileURLToPath(new URL('../fixtures/kill-crawl.js', import.meta.url));
    const killed = await runNode([kill, site.root, out, 'page', '8', JSON.stringify(options)], { cwd: dir, limitMs: 20_000 });
    expect(killed.signal).toBe('SIGKILL');
    const again = await crawlInto(out, { ...scope, changed: list, withReferrers: true });
    expect(again.resumed).toBeGreaterThan(0);
    // Across both runs, only the listed pages and their referrers were asked for.
    expect(new Set(asked())).toEqual(new Set(['/', '/p/2.asp', '/p/3.asp', '/p/9.asp', '/p/10.asp']));
    await crawlInto(oracle, scope);
    expect(await shapeOf(out)).toEqual(await shapeOf(oracle));
  });

  it('with --with-referrers but no --changed, or --changed with --frontier: a usage error', async () => {
    const out = path.join(await dirs.make(), 'out');
    const ran = await runCli(['crawl', site.root, '-o', out, '--with-referrers'], { cwd: path.dirname(out) });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain('--with-referrers needs --changed');
  });
});

/**
 * The inode and mtime of each file of the tree: a file written again has a new one.
 * @param {string} out
 */
async function inodes(out) {
  /** @type {Record<string, string>} */
  const ids = {};
  for (const file of await listFiles(out)) {
    const info = await stat(path.join(out, file));
    ids[file] = `${info.ino}:${info.mtimeMs}`;
  }
  return ids;
}
