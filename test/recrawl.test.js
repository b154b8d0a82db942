// @ts-check
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import zlib from 'node:zlib';
import path from 'node:path';
import { startChangingSite } from '../fixtures/changing-site.js';
import { listFiles, readManifest, serveSite, snapshotTree, tempDirs } from './crawl-helpers.js';
import { runCli, runNode } from './helpers/cli.js';
import { fileURLToPath } from 'node:url';
import { Crawler } from '../lib/index.js';

/**
 * Re-crawling into the same OUT: what a second run fetches, writes, keeps and
 * removes, counted at the origin and on disk.
 */

/** @type {Awaited<ReturnType<typeof startChangingSite>>} */
let site;
const dirs = tempDirs();
beforeAll(async () => { site = await startChangingSite({ products: 20 }); });
afterAll(async () => {
  await site.close();
  await dirs.cleanup();
});
/** Every test gets a fresh site. */
afterEach(async () => {
  await site.close();
  site = await startChangingSite({ products: 20 });
});

/**
 * @param {string} out
 * @param {string[]} [extra]
 */
async function crawl(out, extra = []) {
  const result = await runCli(['crawl', site.root, '-x', '/cart.asp', '-o', out, '--json', '--retries', '0', ...extra], { cwd: path.dirname(out) });
  return { ...result, summary: result.stdout ? JSON.parse(result.stdout) : null };
}

/**
 * The pages a killed run's journal holds (each URL once).
 * @param {string} out
 */
async function journalPages(out) {
  const lines = (await readFile(path.join(out, '.prerender', 'journal.ndjson'), 'utf8')).split('\n').slice(1);
  const urls = lines.filter((line) => line.startsWith('{"url"')).map((line) => JSON.parse(line)).filter((entry) => entry.state === 'done').map((entry) => entry.url);
  return [...new Set(urls)];
}

/** @param {Buffer} bytes */
function gunzipOf(bytes) {
  return zlib.gunzipSync(bytes).toString();
}

/**
 * mtime and inode of every file of the tree: a file written again gets a new inode (temp + rename).
 * @param {string} out
 */
async function fileIds(out) {
  /** @type {Record<string, string>} */
  const ids = {};
  for (const file of await listFiles(out)) {
    const info = await stat(path.join(out, file));
    ids[file] = `${info.ino}:${info.mtimeMs}`;
  }
  return ids;
}

/**
 * The files whose identity changed between two snapshots.
 * @param {Record<string, string>} before
 * @param {Record<string, string>} after
 */
const rewritten = (before, after) => Object.keys(after).filter((file) => before[file] !== undefined && before[file] !== after[file]).sort();

describe('SIGKILL during a re-crawl, then the same crawl again', () => {
  it('resumes it: nothing is written, and the pages the journal holds are not asked for again', async () => {
    const kill = fileURLToPath(new URL('../fixtures/kill-crawl.js', import.meta.url));
    const out = path.join(await dirs.make(), 'out');
    const args = ['-i', '/', '-c', '2']; // with crawl()'s -x /cart.asp: the options of kill-crawl.js
    expect((await crawl(out, args)).code).toBe(0);
    const before = await fileIds(out);
    // The killed re-crawl asks ahead on its HTTP thread; it dies once its journal holds 5 pages.
    const killed = await runNode([kill, site.root, out, 'journaled', '5', JSON.stringify({ exclude: ['/cart.asp'] })], { cwd: path.dirname(out), limitMs: 60_000 });
    expect(killed.signal).toBe('SIGKILL');
    const journaled = await journalPages(out);
    expect(journaled.length).toBeGreaterThanOrEqual(5);
    site.resetCounters();
    const again = await crawl(out, args);
    expect(again.code).toBe(0);
    expect(again.summary.resumed).toBe(journaled.length);
    expect(again.summary.churn).toMatchObject({ new: 0, changed: 0, removed: 0, failed: 0, filesWritten: 0 });
    expect(rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
    expect((await readManifest(out)).pages).toHaveLength(21);
    // Each page the journal does not hold is asked for once (those in flight or answered ahead at the kill among them).
    expect(site.counters.requests).toBe(21 - journaled.length);
    expect(site.counters.requests).toBe(site.counters.conditional);
  });
});

describe('directories emptied by removals', () => {
  it('go with the last file a crawl removes from them; one with a file no crawl wrote stays', async () => {
    let second = false;
    const own = await serveSite((req, res) => {
      if (second && req.url !== '/') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(req.url === '/' ? (second ? '<p>home</p>' : '<a href="/d/deep/x">x</a><a href="/e/y">y</a>') : `<p>${req.url}</p>`);
    });
    try {
      const root = `${own.base}/`;
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', root, '-o', out, '--json', '--retries', '0', '--prune-max', '100%'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      expect(await listFiles(out)).toEqual(expect.arrayContaining(['d/deep/x.html', 'e/y.html']));
      await writeFile(path.join(out, 'e', 'notes.txt'), 'mine');
      second = true;
      const again = await run();
      expect(JSON.parse(again.stdout).churn.removed).toBe(2);
      const { existsSync } = await import('node:fs');
      expect(existsSync(path.join(out, 'd'))).toBe(false);
      expect(await readFile(path.join(out, 'e', 'notes.txt'), 'utf8')).toBe('mine');
      expect(existsSync(path.join(out, 'e', 'y.html'))).toBe(false);
    } finally {
      await own.close();
    }
  });
});

describe('a page that cannot be written', () => {
  it('leaves the run incomplete: nothing is removed, and the exit status says so', async () => {
    let second = false;
    const own = await serveSite((req, res) => {
      const links = second ? '<a href="/a">a</a><a href="/shop/x">x</a>' : '<a href="/a">a</a><a href="/old">old</a>';
      if (req.url === '/old' && second) return res.writeHead(404).end();
      if (!['/', '/a', '/old', '/shop/x'].includes(req.url ?? '')) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      // /a links to /old: written in a first pass as if /old were removed, again once it is kept.
      res.end(req.url === '/' ? links : req.url === '/a' ? '<p>a</p><a href="/old">old</a>' : `<p>${req.url}</p>`);
    });
    try {
      const root = `${own.base}/`;
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', root, '-o', out, '--json', '--retries', '0', '--prune-max', '100%'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      expect(await listFiles(out)).toContain('old.html');
      const linking = await readFile(path.join(out, 'a.html'), 'utf8');
      // A file no crawl wrote where the new page's directory must go: the page cannot be written.
      await writeFile(path.join(out, 'shop'), 'a file in the way');
      second = true;
      const again = await run();
      expect(again.code).toBe(1);
      const summary = JSON.parse(again.stdout);
      expect(summary.complete).toBe(false);
      expect(summary.failures.map((/** @type {{ url: string }} */ failure) => failure.url)).toContain(`${root}shop/x`);
      // /old answers 404 now: a complete run would remove its file; this one keeps it.
      expect(await listFiles(out)).toContain('old.html');
      expect(await readFile(path.join(out, 'shop'), 'utf8')).toBe('a file in the way');
      const state = (await readFile(path.join(out, '.prerender', 'state.ndjson'), 'utf8')).split('\n')[0];
      expect(JSON.parse(state).complete).toBe(false);
      // Only the last write pass is committed: /a links to the file kept, and the tree is its manifest.
      expect(await readFile(path.join(out, 'a.html'), 'utf8')).toBe(linking);
      await rm(path.join(out, 'shop')); // a file no crawl wrote: unlisted for verify
      const verified = await runCli(['verify', out], { cwd: path.dirname(out) });
      expect(verified.stdout + verified.stderr).not.toMatch(/changed|missing/);
      expect(verified.code).toBe(0);
    } finally {
      await own.close();
    }
  });
  it('a --prune-max refusal made before the run turned incomplete is not left in the manifest', async () => {
    let second = false;
    const own = await serveSite((req, res) => {
      if (['/old', '/gone'].includes(req.url ?? '') && second) return res.writeHead(404).end();
      if (!['/', '/old', '/gone', '/shop/x'].includes(req.url ?? '')) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(req.url === '/' ? (second ? '<a href="/shop/x">x</a>' : '<a href="/old">old</a><a href="/gone">gone</a>') : `<p>${req.url}</p>`);
    });
    try {
      const root = `${own.base}/`;
      const out = path.join(await dirs.make(), 'out');
      // The default --prune-max (10 %): two pages gone of three is a refusal, in the first write pass.
      const run = () => runCli(['crawl', root, '-o', out, '--json', '--retries', '0'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      await writeFile(path.join(out, 'shop'), 'a file in the way');
      second = true;
      const again = await run();
      expect(again.code).toBe(1);
      const summary = JSON.parse(again.stdout);
      expect(summary.complete).toBe(false);
      expect(await listFiles(out)).toEqual(expect.arrayContaining(['old.html', 'gone.html']));
      // Nothing is removed because the run is incomplete; --force would not change that, so no refusal is listed.
      const manifest = JSON.parse(await readFile(path.join(out, 'prerender-manifest.json'), 'utf8'));
      expect(manifest.warnings.map((/** @type {{ code: string }} */ warning) => warning.code)).not.toContain('PRUNE_REFUSED');
      expect(summary.pruneRefused ?? false).toBe(false);
    } finally {
      await own.close();
    }
  });
});

describe('a 304 that sends new validators', () => {
  it('updates them: the next run asks with those, and the manifest lists them', async () => {
    let generation = 1;
    /** @type {(string | undefined)[]} */
    const asked = [];
    const own = await serveSite((req, res) => {
      if (req.url !== '/') return res.writeHead(404).end();
      asked.push(req.headers['if-none-match']);
      const validators = { etag: `"g${generation}"`, 'last-modified': new Date(Date.UTC(2026, 0, generation)).toUTCString() };
      // The body never changes: any validator the crawl had is still good, and answered with the newest.
      if (req.headers['if-none-match']) return res.writeHead(304, validators).end();
      res.writeHead(200, { 'content-type': 'text/html', ...validators }).end('<p>home</p>');
    });
    try {
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', `${own.base}/`, '-o', out, '--json'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      generation = 3;
      expect(JSON.parse((await run()).stdout).churn.notModified).toBe(1);
      const [page] = (await readManifest(out)).pages;
      expect(page).toMatchObject({ etag: '"g3"', lastModified: new Date(Date.UTC(2026, 0, 3)).toUTCString() });
      expect((await run()).code).toBe(0);
      expect(asked).toEqual([undefined, '"g1"', '"g3"']);
    } finally {
      await own.close();
    }
  });
});

describe('a page that turns into a redirect to another page', () => {
  /** @param {{ failing: boolean }} how */
  async function redirectingSite(how) {
    const site = { phase: 1, failing: how.failing };
    const own = await serveSite((req, res) => {
      const page = (/** @type {string} */ body) => res.writeHead(200, { 'content-type': 'text/html' }).end(body);
      if (req.url === '/') return page('<a href="/a.asp">a</a><a href="/b.asp">b</a><a href="/c.asp">c</a>');
      if (req.url === '/b.asp' && site.phase === 2) return res.writeHead(301, { location: '/d.asp' }).end();
      if (req.url === '/c.asp' && site.phase === 2 && site.failing) return res.writeHead(500).end();
      if (['/a.asp', '/b.asp', '/c.asp', '/d.asp'].includes(req.url ?? '')) return page(`<p>${req.url}</p><a href="/b.asp">b</a>`);
      res.writeHead(404).end();
    });
    return { ...own, site };
  }

  it('is not gone (no --prune-max refusal): links lead to its target\'s file, and its old file goes', async () => {
    const own = await redirectingSite({ failing: false });
    try {
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', `${own.base}/`, '-o', out, '--json', '--retries', '0'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      own.site.phase = 2;
      const again = await run();
      expect(again.code).toBe(0);
      const summary = JSON.parse(again.stdout);
      expect(summary.pruneRefused).toBe(false);
      expect(await readFile(path.join(out, 'index.html'), 'utf8')).toContain('href="d.asp.html"');
      expect(await readFile(path.join(out, 'a.asp.html'), 'utf8')).toContain('href="d.asp.html"');
      expect(await listFiles(out)).not.toContain('b.asp.html');
      const manifest = await readManifest(out);
      expect(manifest.pages.map((/** @type {{ url: string }} */ page) => page.url)).not.toContain(`${own.base}/b.asp`);
      expect(manifest.redirects.map((/** @type {{ url: string }} */ redirect) => redirect.url)).toEqual([`${own.base}/b.asp`]);
    } finally {
      await own.close();
    }
  });

  it('pages that redirect off the crawl (a login page) count as gone: --prune-max holds', async () => {
    let phase = 1;
    const pages = ['/p0', '/p1', '/p2', '/p3'];
    const own = await serveSite((req, res) => {
      if (req.url === '/') return res.writeHead(200, { 'content-type': 'text/html' }).end(pages.map((page) => `<a href="${page}">p</a>`).join(''));
      if (!pages.includes(req.url ?? '')) return res.writeHead(404).end();
      if (phase === 2) return res.writeHead(302, { location: 'http://127.0.0.1:1/login' }).end();
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<p>${req.url}</p>`);
    });
    try {
      const out = path.join(await dirs.make(), 'out');
      const run = (/** @type {string[]} */ extra = []) => runCli(['crawl', `${own.base}/`, '-o', out, '--json', ...extra], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      phase = 2;
      const refused = await run();
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout).pruneRefused).toBe(true);
      expect(await listFiles(out)).toEqual(expect.arrayContaining(['p0.html', 'p3.html']));
      const forced = await run(['--force']);
      expect(JSON.parse(forced.stdout).churn.removed).toBe(4);
      expect(await listFiles(out)).not.toContain('p0.html');
    } finally {
      await own.close();
    }
  });

  /**
   * A complete crawl, then one where b.asp redirects to d.asp and c.asp fails: incomplete.
   * @param {Awaited<ReturnType<typeof redirectingSite>>} own
   */
  async function incompleteRedirect(own) {
    const out = path.join(await dirs.make(), 'out');
    const run = () => runCli(['crawl', `${own.base}/`, '-o', out, '--json', '--retries', '0', '--prune-max', '100%'], { cwd: path.dirname(out) });
    expect((await run()).code).toBe(0);
    own.site.phase = 2;
    expect((await run()).code).toBe(1); // c.asp: 500, kept stale
    expect(await readFile(path.join(out, 'index.html'), 'utf8')).toContain('href="d.asp.html"');
    return { out, run };
  }

  it('a page again after an incomplete run carried it while it redirected: links lead to its file again', async () => {
    const own = await redirectingSite({ failing: true });
    try {
      const { out, run } = await incompleteRedirect(own);
      own.site.phase = 1; // b.asp a page again, c.asp answers
      const back = await run();
      expect(back.code).toBe(0);
      expect(await readFile(path.join(out, 'index.html'), 'utf8')).toContain('href="b.asp.html"');
      expect(await readFile(path.join(out, 'a.asp.html'), 'utf8')).toContain('href="b.asp.html"');
    } finally {
      await own.close();
    }
  });

  it('in an incomplete run its old file stays (pages not reached may link to it) and goes with the next complete one', async () => {
    const own = await redirectingSite({ failing: true });
    try {
      const { out, run } = await incompleteRedirect(own);
      expect(await listFiles(out)).toEqual(expect.arrayContaining(['b.asp.html', 'd.asp.html']));
      // Listed, stale, as a page not reached is: the tree is its manifest.
      const manifest = await readManifest(out);
      expect(manifest.pages.find((/** @type {{ url: string }} */ page) => page.url === `${own.base}/b.asp`)).toMatchObject({ file: 'b.asp.html', stale: true });
      expect((await runCli(['verify', out], { cwd: path.dirname(out) })).code).toBe(0);
      // A second incomplete run keeps it as well.
      expect((await run()).code).toBe(1);
      expect(await listFiles(out)).toContain('b.asp.html');
      // The state keeps its entry: c.asp answers again, and the complete run removes it.
      own.site.failing = false;
      const complete = await run();
      expect(complete.code).toBe(0);
      expect(await listFiles(out)).not.toContain('b.asp.html');
      expect(await readFile(path.join(out, 'a.asp.html'), 'utf8')).toContain('href="d.asp.html"');
    } finally {
      await own.close();
    }
  });
});

describe('the staging log of a site that is never complete', () => {
  it('stays about the size of the pages kept: compacted after each run, not only after a complete one', async () => {
    let round = 0;
    const pages = Array.from({ length: 12 }, (_, i) => `/p${i}`);
    const own = await serveSite((req, res) => {
      if (req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(`${pages.map((page) => `<a href="${page}">${page}</a>`).join('')}<a href="/broken">broken</a>`);
      }
      if (req.url === '/broken') return res.writeHead(500).end(); // fails on every run: no run is complete
      const etag = `"${req.url}-${round}"`;
      if (req.headers['if-none-match'] === etag) return res.writeHead(304, { etag }).end();
      res.writeHead(200, { 'content-type': 'text/html', etag });
      // 200 KB a page, new bytes on every run.
      res.end(`<p>${req.url} round ${round}</p>${'<p>catalogue text of some length</p>'.repeat(5600)}`);
    });
    try {
      const root = `${own.base}/`;
      const out = path.join(await dirs.make(), 'out');
      const sizes = [];
      for (round = 0; round < 5; round++) {
        const result = await new Crawler({ roots: [root], out, retries: 0 }).run();
        expect(result.complete).toBe(false);
        expect(result.failed).toBe(1);
        sizes.push((await stat(path.join(out, '.prerender', 'blobs.log'))).size);
      }
      // About 2.4 MB of bodies a run: the log never holds more than two runs' worth.
      expect(Math.max(...sizes)).toBeLessThan(2 * sizes[0] + 1024 * 1024 + 64 * 1024);
      expect(sizes[4]).toBeLessThan(3 * sizes[0]);
      // And what it keeps is enough: a run with nothing changed writes nothing.
      round--;
      const again = await new Crawler({ roots: [root], out, retries: 0 }).run();
      expect(again.churn).toMatchObject({ notModified: 12, sameBytes: 1, filesWritten: 0 });
      // A run cut short keeps the pages it did not reach, with their staged bytes: the next one reuses them.
      const cut = await new Crawler({ roots: [root], out, retries: 0, maxPages: 2 }).run();
      expect(cut.kept).toBeGreaterThan(5);
      const after = await new Crawler({ roots: [root], out, retries: 0 }).run();
      expect(after.churn).toMatchObject({ notModified: 12, sameBytes: 1, new: 0, changed: 0, filesWritten: 0 });
    } finally {
      await own.close();
    }
  });
});

describe('a second crawl at 0% churn', () => {
  it('makes only conditional requests and writes no file', async () => {
    const out = path.join(await dirs.make(), 'out');
    const first = await crawl(out);
    expect(first.code).toBe(0);
    expect(first.summary.churn).toMatchObject({ new: 21, filesWritten: 21 });
    const before = await fileIds(out);
    site.resetCounters();
    const second = await crawl(out);
    expect(second.code).toBe(0);
    expect(site.counters.requests).toBe(21);
    expect(site.counters.conditional).toBe(21);
    expect(site.counters.notModified).toBe(21);
    expect(second.summary.churn).toMatchObject({ new: 0, changed: 0, notModified: 21, sameBytes: 0, removed: 0, stale: 0, failed: 0, filesWritten: 0, bytesWritten: 0 });
    // 21 pages are too few for the re-crawl's HTTP thread, whose start costs more than they do: the main thread
    // asks. threads.test.js has a re-crawl of 153 pages that uses it.
    expect(first.summary.threads.revalidated).toBe(0);
    expect(second.summary.threads.revalidated).toBe(0);
    const after = await fileIds(out);
    expect(rewritten(before, after).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    expect((await readManifest(out)).pages).toHaveLength(21);
  });

  it('with --threads 0 the same, with every request in the main thread', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out, ['--threads', '0']);
    const before = await fileIds(out);
    site.resetCounters();
    const second = await crawl(out, ['--threads', '0']);
    expect(second.code).toBe(0);
    expect(site.counters).toMatchObject({ requests: 21, conditional: 21, notModified: 21 });
    expect(second.summary.threads.revalidated).toBe(0);
    expect(second.summary.churn).toMatchObject({ notModified: 21, filesWritten: 0 });
    expect(rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
  });

  it('an origin without validators: every page fetched in full, no file written', async () => {
    site.setValidators('none');
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const before = await fileIds(out);
    site.resetCounters();
    const second = await crawl(out);
    expect(site.counters.conditional).toBe(0);
    expect(second.summary.churn).toMatchObject({ notModified: 0, sameBytes: 21, filesWritten: 0 });
    // The same bytes have the same links: no page was tokenised again (the last scans were taken).
    expect(second.summary.threads).toMatchObject({ inMain: 0, inWorkers: 0 });
    expect(rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
  });

  it('Last-Modified alone is enough for conditional requests', async () => {
    site.setValidators('last-modified');
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    site.resetCounters();
    const second = await crawl(out);
    expect(site.counters.notModified).toBe(21);
    expect(second.summary.churn.filesWritten).toBe(0);
  });
});

describe('a second crawl with changes', () => {
  it('rewrites exactly the changed pages, and the pages whose links now lead elsewhere', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const before = await fileIds(out);
    site.change(3);
    site.change(7);
    site.rename(12, 'renamed-12.htm'); // product 11 and the home link to it
    const second = await crawl(out);
    expect(second.code).toBe(0);
    const after = await fileIds(out);
    expect(rewritten(before, after)).toEqual(['index.html', 'p/p11.htm', 'p/p3.htm', 'p/p7.htm', 'prerender-manifest.json']);
    expect(Object.keys(after)).toContain('p/renamed-12.htm');
    expect(Object.keys(after)).not.toContain('p/p12.htm');
    expect(second.summary.churn).toMatchObject({ changed: 2, sameBytes: 1, notModified: 18, removed: 0, filesWritten: 5 });
    expect(await readFile(path.join(out, 'p/p11.htm'), 'utf8')).toContain('href="renamed-12.htm"');
  });

  it('a page gone (404 or 410) is removed after a complete crawl; a new page is added', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    await writeFile(path.join(out, 'robots.txt'), 'User-agent: *\n');
    site.remove(5);
    site.gone(6);
    site.add(21);
    const second = await crawl(out);
    const files = await listFiles(out);
    expect(files).not.toContain('p/p5.htm');
    expect(files).not.toContain('p/p6.htm');
    expect(files).toContain('p/p21.htm');
    expect(files).toContain('robots.txt');
    expect(second.summary.churn).toMatchObject({ new: 1, removed: 2, failed: 0 });
    const manifest = await readManifest(out);
    expect(manifest.pages.map((page) => page.url)).not.toContain(site.product(5));
    // Product 4 still links to product 5: a broken link, listed with it and exit 1, as a first
    // crawl of this site says (product 6 is linked from no page fetched: just gone).
    expect(second.code).toBe(1);
    expect(manifest.errors).toEqual([expect.objectContaining({ url: site.product(5), status: 404, code: 'HTTP_STATUS', referrers: [site.product(4)] })]);
    const third = await crawl(out);
    expect(third.code).toBe(1);
    expect((await readManifest(out)).errors.map((error) => error.url)).toEqual([site.product(5)]);
    // The broken link stays (product 5 has no file now, so it counts as failed), and does not
    // keep the crawl from being complete: a page gone since is still removed.
    site.gone(7);
    const fourth = await crawl(out);
    expect(fourth.summary.churn).toMatchObject({ removed: 1, failed: 1, stale: 0 });
    expect(await listFiles(out)).not.toContain('p/p7.htm');
    expect(fourth.stdout).not.toMatch(/Nothing was removed/);
  });

  it('nothing is removed after an incomplete crawl, and the summary says why', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    site.remove(5);
    const second = await crawl(out, ['--max-pages', '10']);
    expect(await listFiles(out)).toContain('p/p5.htm');
    expect(second.summary.churn.removed).toBe(0);
    const human = await runCli(['crawl', site.root, '-x', '/cart.asp', '-o', out, '--retries', '0', '--max-pages', '10'], { cwd: path.dirname(out) });
    expect(human.stdout).toMatch(/Nothing was removed, since this crawl was not complete \(--max-pages cut it short\)/);
    // The next complete crawl removes it.
    const third = await crawl(out);
    expect(third.summary.churn.removed).toBe(1);
    expect(await listFiles(out)).not.toContain('p/p5.htm');
  });

  it('a --max-depth cut is incomplete too: nothing removed, and the summary and --json say so', async () => {
    await site.close();
    site = await startChangingSite({ products: 20, deep: true });
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    expect(await listFiles(out)).toContain('a/b/deep.asp.html');
    site.remove(5);
    const cut = await crawl(out, ['--max-depth', '1']);
    expect(cut.summary).toMatchObject({ complete: false });
    expect(cut.summary.tooDeep).toBeGreaterThan(0);
    expect(cut.summary.kept).toBe(2); // the deep page, and product 5 (its 404 is a broken link; its file stays)
    expect(await listFiles(out)).toEqual(expect.arrayContaining(['p/p5.htm', 'a/b/deep.asp.html']));
    const human = await runCli(['crawl', site.root, '-x', '/cart.asp', '-o', out, '--retries', '0', '--max-depth', '1'], { cwd: path.dirname(out) });
    expect(human.stdout).toMatch(/Nothing was removed, since this crawl was not complete \(--max-depth cut it short\)/);
    const whole = await crawl(out);
    expect(whole.summary).toMatchObject({ complete: true, tooDeep: 0, kept: 0 });
    expect(whole.summary.churn.removed).toBe(1);
  });

  it('an incomplete crawl links the pages it did not reach to the files they keep, so that the next crawl ends with the clean tree', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    /** @type {Record<string, string>} */
    const clean = {};
    for (const file of await listFiles(out)) if (file !== 'prerender-manifest.json') clean[file] = await readFile(path.join(out, file), 'utf8');
    // Nothing changed on the site; this run stops after 5 pages (the home page among them).
    const limited = await crawl(out, ['--max-pages', '5']);
    expect(limited.summary.notCrawled).toBeGreaterThan(0);
    expect(await readFile(path.join(out, 'index.html'), 'utf8')).toBe(clean['index.html']);
    // The manifest says what OUT holds: the pages not reached are listed, marked stale.
    const manifest = await readManifest(out);
    expect(manifest.pages.map((page) => page.file).sort()).toEqual(Object.keys(clean).sort());
    expect(manifest.pages.filter((page) => page.stale)).toHaveLength(Object.keys(clean).length - 5);
    expect((await runCli(['verify', out], { cwd: path.dirname(out) })).code).toBe(0);
    const next = await crawl(out);
    expect(next.code).toBe(0);
    /** @type {Record<string, string>} */
    const after = {};
    for (const file of await listFiles(out)) if (file !== 'prerender-manifest.json') after[file] = await readFile(path.join(out, file), 'utf8');
    expect(after).toEqual(clean);
  });

  it('a new page never takes over a file no crawl wrote: it gets another name, with a warning', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    await writeFile(path.join(out, 'p/p21.htm'), 'mine');
    await writeFile(path.join(out, 'robots.txt'), 'User-agent: *');
    site.add(21);
    const second = await crawl(out);
    expect(second.code).toBe(0);
    expect(await readFile(path.join(out, 'p/p21.htm'), 'utf8')).toBe('mine');
    const manifest = await readManifest(out);
    const page = manifest.pages.find((entry) => entry.url === site.product(21));
    expect(page?.file).toBe('p/p21-2.htm');
    expect(await readFile(path.join(out, 'p/p21-2.htm'), 'utf8')).toContain('Product 21');
    expect(manifest.warnings.find((warning) => warning.code === 'NAME_COLLISION')?.message).toMatch(/a file no crawl wrote/);
    // The pages the last crawl wrote keep their names.
    expect(manifest.pages.find((entry) => entry.url === site.product(3))?.file).toBe('p/p3.htm');
    expect(await readFile(path.join(out, 'robots.txt'), 'utf8')).toBe('User-agent: *');
  });

  it('a page renamed onto a file no crawl wrote gets another name; the file stays as it was', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    await writeFile(path.join(out, 'p/mine.htm'), 'mine');
    site.rename(3, 'mine.htm');
    site.change(3);
    const second = await crawl(out);
    expect(second.code).toBe(0);
    expect(await readFile(path.join(out, 'p/mine.htm'), 'utf8')).toBe('mine');
    const manifest = await readManifest(out);
    expect(manifest.pages.find((entry) => entry.url === site.product(3))?.file).toBe('p/mine-2.htm');
    expect(await readFile(path.join(out, 'p/mine-2.htm'), 'utf8')).toContain('Product 3');
    expect(manifest.warnings.find((warning) => warning.code === 'NAME_COLLISION')?.message).toMatch(/a file no crawl wrote/);
    // The others keep their names.
    expect(manifest.pages.find((entry) => entry.url === site.product(4))?.file).toBe('p/p4.htm');
  });

  it('a --name rule added since the last crawl names the pages that answer 304 too: the tree of a first crawl with it', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    site.resetCounters();
    const renamed = await crawl(out, ['--name', '/', 'home.html']);
    expect(renamed.code).toBe(0);
    // Fetched again in full: a 304 would have kept the file the old rules gave (threads.test.js: no HTTP thread either).
    expect(site.counters.conditional).toBe(0);
    expect(renamed.summary.threads.revalidated).toBe(0);
    const files = await listFiles(out);
    expect(files).toContain('home.html');
    expect(files).not.toContain('index.html');
    const fresh = path.join(await dirs.make(), 'out');
    await crawl(fresh, ['--name', '/', 'home.html']);
    expect(await snapshotTree(out)).toEqual(await snapshotTree(fresh));
    // And the next run is a re-crawl again: conditional requests, nothing written.
    site.resetCounters();
    const again = await crawl(out, ['--name', '/', 'home.html']);
    expect(site.counters.notModified).toBe(21);
    expect(again.summary.churn.filesWritten).toBe(0);
  });

  it('an interrupted crawl is resumed only by a run with the same --name rules: with others its pages would keep the names they wanted', async () => {
    /** @param {string} out @param {object} [more] */
    const interrupted = async (out, more = {}) => {
      const controller = new AbortController();
      const crawler = new Crawler({ roots: [site.root], exclude: ['/cart.asp'], out, retries: 0, signal: controller.signal, ...more });
      crawler.on('page', () => setImmediate(() => controller.abort()));
      expect((await crawler.run()).interrupted).toBe(true);
    };
    const same = path.join(await dirs.make(), 'out');
    await interrupted(same);
    expect((await new Crawler({ roots: [site.root], exclude: ['/cart.asp'], out: same, retries: 0 }).run()).resumed).toBeGreaterThan(0);
    const other = path.join(await dirs.make(), 'out');
    await interrupted(other);
    const renamed = await new Crawler({ roots: [site.root], exclude: ['/cart.asp'], out: other, retries: 0, name: [['/', 'home.html']] }).run();
    expect(renamed.resumed).toBe(0);
    expect(await listFiles(other)).toContain('home.html');
  });

  it('a first crawl interrupted after writing some files, then resumed: the files it wrote are kept as they are', async () => {
    const out = path.join(await dirs.make(), 'out');
    const controller = new AbortController();
    const crawler = new Crawler({ roots: [site.root], exclude: ['/cart.asp'], out, retries: 0, concurrency: 1, signal: controller.signal });
    let pages = 0;
    crawler.on('page', () => { if (++pages === 8) controller.abort(); });
    expect((await crawler.run()).interrupted).toBe(true);
    const before = await fileIds(out);
    const bytesBefore = await snapshotTree(out);
    expect(Object.keys(before).filter((file) => file.startsWith('p/')).length).toBeGreaterThan(3);
    // Worker threads from the first page: the pages the interrupted run fetched but did not
    // write are written while this one crawls (early.js), and those it wrote are not.
    const resumed = await new Crawler({ roots: [site.root], exclude: ['/cart.asp'], out, retries: 0, concurrency: 1, threadsFrom: 0, threads: 1, early: 'always' }).run();
    expect(resumed.failed).toBe(0);
    expect(resumed.resumed).toBeGreaterThan(0);
    expect(resumed.threads.early).toBeGreaterThan(0);
    // Written again: only the files whose bytes change (pages linking to pages the interrupted run did not reach).
    const again = rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json');
    const bytesAfter = await snapshotTree(out);
    expect(again.filter((file) => bytesAfter[file] === bytesBefore[file])).toEqual([]);
    expect(again.length).toBeLessThan(3); // the home page and the last product reached
    // And the tree is a clean crawl's.
    const clean = path.join(await dirs.make(), 'clean');
    await crawl(clean);
    expect(await snapshotTree(out)).toEqual(await snapshotTree(clean));
  });

  it('a run that renames but does not reach every page keeps the old files, and the next complete one removes them', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    site.fail(3, 500);
    const incomplete = await crawl(out, ['--name', '/', 'home.html']);
    expect(incomplete.code).toBe(1);
    // The last copy of the failing page is kept (its staged body is still there), marked stale.
    expect(incomplete.summary.churn).toMatchObject({ stale: 1, failed: 0 });
    const files = await listFiles(out);
    // Pages not reached may link to the old file: it stays until a complete crawl.
    expect(files).toEqual(expect.arrayContaining(['home.html', 'index.html']));
    site.restore(3);
    site.resetCounters();
    const complete = await crawl(out, ['--name', '/', 'home.html']);
    expect(complete.code).toBe(0);
    // Not every page had its new name yet: fetched in full again.
    expect(site.counters.conditional).toBe(0);
    const fresh = path.join(await dirs.make(), 'out');
    await crawl(fresh, ['--name', '/', 'home.html']);
    expect(await snapshotTree(out)).toEqual(await snapshotTree(fresh));
    // Without the rule again: the old name is the page's own, not a file no crawl wrote.
    const back = await crawl(out);
    expect(back.code).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.warnings.map((warning) => warning.code)).not.toContain('NAME_COLLISION');
    const plain = path.join(await dirs.make(), 'out');
    await crawl(plain);
    expect(await snapshotTree(out)).toEqual(await snapshotTree(plain));
  });

  it('--prune-max refuses a larger removal (exit 1, nothing removed); --force removes', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    for (const n of [2, 4, 6, 8, 10]) site.remove(n);
    const refused = await crawl(out);
    expect(refused.code).toBe(1);
    expect(refused.summary.pruneRefused).toBe(true);
    expect(await listFiles(out)).toContain('p/p2.htm');
    const kept = await readManifest(out);
    expect(kept.warnings.map((warning) => warning.code)).toContain('PRUNE_REFUSED');
    // The pages kept are still listed (stale): the manifest says what OUT holds.
    expect(kept.pages.find((page) => page.file === 'p/p2.htm')).toMatchObject({ stale: true });
    expect((await runCli(['verify', out], { cwd: path.dirname(out) })).code).toBe(0);
    const forced = await crawl(out, ['--force']);
    expect(forced.code).toBe(1); // the products before them still link to them (see above)
    expect(forced.summary.churn.removed).toBe(5);
    expect(await listFiles(out)).not.toContain('p/p2.htm');
  });

  it('a server error keeps the last good file, marked stale; exit 1; nothing removed', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const good = await readFile(path.join(out, 'p/p9.htm'));
    site.fail(9, 500);
    site.remove(15);
    const second = await crawl(out);
    expect(second.code).toBe(1);
    expect(second.summary.churn).toMatchObject({ stale: 1, removed: 0 });
    expect(await readFile(path.join(out, 'p/p9.htm'))).toEqual(good);
    const manifest = await readManifest(out);
    expect(manifest.pages.find((page) => page.url === site.product(9))).toMatchObject({ file: 'p/p9.htm', stale: true });
    expect(manifest.warnings.map((warning) => warning.code)).toContain('STALE');
    expect(await listFiles(out)).toContain('p/p15.htm');
  });

  it('a compressed answer cut short keeps the last good file, marked stale, as any truncated body does', async () => {
    let cut = false;
    const own = await serveSite((req, res) => {
      if (req.url !== '/') return res.writeHead(404).end();
      const whole = zlib.gzipSync('<p>home, with a body long enough to cut in half</p>');
      // An ETag: the re-crawl's request goes through its HTTP thread, whose answer carries the failure back.
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', etag: cut ? '"b"' : '"a"' }).end(cut ? whole.subarray(0, whole.length >> 1) : whole);
    });
    try {
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', `${own.base}/`, '-o', out, '--json', '--retries', '0'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      const good = await readFile(path.join(out, 'index.html'));
      cut = true;
      const again = await run();
      expect(again.code).toBe(1);
      expect(JSON.parse(again.stdout).churn).toMatchObject({ stale: 1, failed: 0 });
      expect(await readFile(path.join(out, 'index.html'))).toEqual(good);
      expect((await readManifest(out)).warnings.map((/** @type {{ code: string }} */ warning) => warning.code)).toEqual(['STALE']);
    } finally {
      await own.close();
    }
  });

  it('a run that ended with a failure is not resumed: the next one asks for every page again and sees what changed', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    site.fail(9, 500);
    const failed = await crawl(out);
    expect(failed.code).toBe(1);
    expect(failed.summary.churn.stale).toBe(1);
    site.restore(9);
    site.change(3);
    site.resetCounters();
    const before = await readFile(path.join(out, 'p/p3.htm'), 'utf8');
    const next = await crawl(out);
    expect(next.code).toBe(0);
    expect(next.summary.resumed).toBe(0);
    expect(site.counters.requests).toBeGreaterThanOrEqual(21);
    // Changed: product 3, and the home page, which lists product 9 again.
    expect(next.summary.churn).toMatchObject({ changed: 2, stale: 0, failed: 0 });
    expect(await readFile(path.join(out, 'p/p3.htm'), 'utf8')).not.toBe(before);
    const manifest = await readManifest(out);
    expect(manifest.pages.find((page) => page.url === site.product(9))?.stale).toBeFalsy();
  });

  it('--full fetches and writes everything again', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const before = await fileIds(out);
    site.resetCounters();
    const second = await crawl(out, ['--full']);
    expect(site.counters.conditional).toBe(0);
    expect(second.summary.churn.filesWritten).toBe(21);
    expect(rewritten(before, await fileIds(out))).toHaveLength(22);
  });

  it('--full with a 500: the last copy is kept, stale, and its links followed, as without it', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    site.fail(3, 500);
    const full = await crawl(out, ['--full']);
    expect(full.code).toBe(1);
    expect(full.summary).toMatchObject({ stale: 1, failed: 0, pages: 21 });
    expect(full.summary.churn).toMatchObject({ stale: 1, failed: 0 });
    expect((await readManifest(out)).warnings.map((/** @type {{ code: string }} */ w) => w.code)).toContain('STALE');
  });
});

describe('--ignore', () => {
  it('a pattern with non-ASCII letters matches them in a UTF-8 page and in a Latin-1 one', async () => {
    let stamp = 1;
    const own = await serveSite((req, res) => {
      const text = `<p>Page générée le 12:0${stamp}</p>`;
      if (req.url === '/') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<a href="/latin">l</a>${text}`);
      if (req.url === '/latin') return res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' }).end(Buffer.from(text, 'latin1'));
      res.writeHead(404).end();
    });
    try {
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', `${own.base}/`, '-o', out, '--json', '--ignore', 'Page générée le [0-9:]+'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      stamp = 2;
      const again = await run();
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout).churn).toMatchObject({ sameBytes: 2, changed: 0, filesWritten: 0 });
    } finally {
      await own.close();
    }
  });

  it('a page that differs only in an ignored span counts as unchanged and is not written again', async () => {
    site.setValidators('none');
    site.setStamping(true);
    const out = path.join(await dirs.make(), 'out');
    await crawl(out, ['--ignore', '<!-- generated at request \\d+ -->']);
    const before = await fileIds(out);
    const second = await crawl(out, ['--ignore', '<!-- generated at request \\d+ -->']);
    expect(second.summary.churn).toMatchObject({ sameBytes: 21, filesWritten: 0 });
    expect(rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
    site.change(4);
    const third = await crawl(out, ['--ignore', '<!-- generated at request \\d+ -->']);
    expect(third.summary.churn).toMatchObject({ changed: 1, filesWritten: 1 });
  });

  it('a page kept for the pattern is written from its new bytes once the pattern is dropped (the state keeps the bytes its file was made from)', async () => {
    site.setValidators('none');
    site.setStamping(true);
    const out = path.join(await dirs.make(), 'out');
    const pattern = ['--ignore', '<!-- generated at request \\d+ -->'];
    await crawl(out, pattern);
    // The stamp gone from the site: the same but for the ignored span, the files are kept.
    site.setStamping(false);
    const kept = await crawl(out, pattern);
    expect(kept.summary.churn).toMatchObject({ sameBytes: 21, filesWritten: 0 });
    // Without the pattern, the site's bytes (the same as the last run fetched) are not the files'.
    const dropped = await crawl(out);
    expect(dropped.code).toBe(0);
    expect(dropped.summary.churn).toMatchObject({ changed: 20, filesWritten: 20 });
    const stamped = [];
    for (const file of await listFiles(out)) if ((await readFile(path.join(out, file), 'latin1')).includes('generated at request')) stamped.push(file);
    expect(stamped).toEqual([]);
    // And from then on, unchanged.
    expect((await crawl(out)).summary.churn).toMatchObject({ changed: 0, filesWritten: 0 });
  });

  it('the bytes a kept page\'s file was made from stay in the staging log through its compaction', async () => {
    let round = 0;
    let failing = false;
    const pages = Array.from({ length: 12 }, (_, i) => `/p${i}`);
    const own = await serveSite((req, res) => {
      if (failing && req.url === '/p3') return res.writeHead(503).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      if (req.url === '/') return res.end(pages.map((page) => `<a href="${page}">${page}</a>`).join(''));
      // 200 KB a page, with a stamp that changes on every run (ignored).
      res.end(`<p>${req.url}</p><!-- stamp ${round} -->${'<p>catalogue text of some length</p>'.repeat(5600)}`);
    });
    try {
      const root = `${own.base}/`;
      const out = path.join(await dirs.make(), 'out');
      const crawlIt = () => new Crawler({ roots: [root], out, retries: 0, ignore: ['<!-- stamp \\d+ -->'] }).run();
      for (round = 0; round < 3; round++) expect((await crawlIt()).churn.filesWritten).toBe(round === 0 ? 13 : 0);
      // The files are the first run's; the log was compacted since (it held three runs' bodies).
      failing = true;
      const result = await crawlIt();
      expect(result).toMatchObject({ stale: 1, failed: 0 });
      expect(result.churn).toMatchObject({ stale: 1, failed: 0, filesWritten: 0 });
    } finally {
      await own.close();
    }
  });

  it('without it, the same pages are all written again', async () => {
    site.setValidators('none');
    site.setStamping(true);
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const second = await crawl(out);
    expect(second.summary.churn).toMatchObject({ changed: 20, filesWritten: 20 });
  });

  it('adding or changing a pattern on an unchanged site writes no file', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    site.setValidators('none'); // every page fetched in full, and judged with the pattern
    const before = await fileIds(out);
    const added = await crawl(out, ['--ignore', 'zzz']);
    expect(added.code).toBe(0);
    expect(added.summary.churn.filesWritten).toBe(0);
    const changed = await crawl(out, ['--ignore', 'yyy']);
    expect(changed.summary.churn.filesWritten).toBe(0);
    expect(rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
  });

  it('the first run with a pattern added or changed already counts such pages unchanged (the last bodies are judged again)', async () => {
    site.setValidators('none');
    site.setStamping(true);
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const before = await fileIds(out);
    const added = await crawl(out, ['--ignore', 'request \\d+']);
    expect(added.summary.churn).toMatchObject({ changed: 0, sameBytes: 21, filesWritten: 0 });
    // Another span: the hashes the last run stored (without the number only) no longer compare.
    const changed = await crawl(out, ['--ignore', '<!-- generated [^>]*-->']);
    expect(changed.summary.churn).toMatchObject({ changed: 0, sameBytes: 21, filesWritten: 0 });
    expect(rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
    site.change(4);
    const third = await crawl(out, ['--ignore', '<!-- generated [^>]*-->']);
    expect(third.summary.churn).toMatchObject({ changed: 1, filesWritten: 1 });
  });

  it('pages kept on a 304 while the patterns changed are judged with the new ones next time', async () => {
    site.setValidators('last-modified');
    site.setStamping(true);
    const out = path.join(await dirs.make(), 'out');
    await crawl(out, ['--ignore', 'request \\d+']);
    // Every product answers 304 (its Last-Modified is its version): its last hash is carried over, made with the old pattern.
    const carried = await crawl(out, ['--ignore', '<!-- generated [^>]*-->']);
    expect(carried.summary.churn.notModified).toBe(21);
    site.setValidators('none');
    const next = await crawl(out, ['--ignore', '<!-- generated [^>]*-->']);
    expect(next.summary.churn).toMatchObject({ changed: 0, sameBytes: 21, filesWritten: 0 });
  });

  it('a pattern that is not a regular expression is a usage error', async () => {
    const result = await crawl(path.join(await dirs.make(), 'out'), ['--ignore', '(unclosed']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--ignore must be a regular expression/);
  });
});

/**
 * Overwrite the bytes of one staged blob in OUT/.prerender/blobs.log (its frame: 6-byte length, 32-byte sha256, the bytes).
 * @param {string} out
 * @param {string} id
 * @param {(bytes: Buffer) => void} damage
 */
async function damageBlob(out, id, damage) {
  const file = path.join(out, '.prerender', 'blobs.log');
  const log = await readFile(file);
  const at = log.indexOf(Buffer.from(id, 'hex'));
  if (at < 6) throw new Error(`blob ${id} not found in the log`);
  const length = log.readUIntBE(at - 6, 6);
  damage(log.subarray(at + 32, at + 32 + length));
  await writeFile(file, log);
}

/** @param {string} out */
async function storedPages(out) {
  const lines = (await readFile(path.join(out, '.prerender', 'state.ndjson'), 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line));
  return lines.filter((line) => typeof line.url === 'string');
}

/**
 * A tree's snapshot with its manifest's warnings left out.
 * @param {Record<string, string>} tree
 */
function withoutWarnings(tree) {
  const manifest = JSON.parse(tree['prerender-manifest.json']);
  delete manifest.warnings;
  return { ...tree, 'prerender-manifest.json': manifest };
}

describe('a damaged staging log', () => {
  it('a page whose stored links do not match their hash is fetched in full: nothing is lost, nothing removed', async () => {
    const out = path.join(await dirs.make(), 'out');
    expect((await crawl(out)).code).toBe(0);
    const before = await snapshotTree(out);
    const home = (await storedPages(out)).find((page) => page.url === site.root);
    // Zeros over the home page's links: read as they are, the page would link to nothing, and every product be gone.
    await damageBlob(out, home.scan, (bytes) => bytes.fill(0));
    site.resetCounters();
    const again = await crawl(out, ['--prune-max', '100%']);
    expect(again.code).toBe(0);
    expect(again.summary.churn.removed).toBe(0);
    expect(again.summary.churn.filesWritten).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.warnings.filter((/** @type {{ code: string }} */ warning) => warning.code === 'STAGED_DAMAGED').map((/** @type {{ url: string }} */ warning) => warning.url)).toEqual([site.root]);
    expect(withoutWarnings(await snapshotTree(out))).toEqual(withoutWarnings(before));
    // Fetched again without validators: one request more than the pages, the home page's.
    expect(site.counters.requests - site.counters.conditional).toBe(1);
    // Its links are staged anew: the next run takes them, with no warning.
    site.resetCounters();
    const third = await crawl(out, ['--prune-max', '100%']);
    expect(third.code).toBe(0);
    expect(third.summary.warnings).toBe(0);
    expect(site.counters.requests).toBe(site.counters.conditional);
    expect(await snapshotTree(out)).toEqual(before);
  });

  it('pages that share one damaged scan are each fetched in full, none fails for the blob the first forgot', async () => {
    const own = await serveSite((req, res) => {
      const pages = ['/p0', '/p1', '/p2', '/p3', '/p4', '/p5'];
      res.setHeader('etag', `"${req.url}"`);
      if (req.headers['if-none-match'] === `"${req.url}"`) return res.writeHead(304).end();
      if (req.url === '/') return res.writeHead(200, { 'content-type': 'text/html' }).end(pages.map((page) => `<a href="${page}">${page}</a>`).join(''));
      // The same links on every product page: one scan, stored once.
      if (pages.includes(req.url ?? '')) return res.writeHead(200, { 'content-type': 'text/html' }).end(`<h1>${req.url}</h1><a href="/">home</a>`);
      res.writeHead(404).end();
    });
    try {
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', `${own.base}/`, '-o', out, '--json', '--retries', '0', '--prune-max', '100%'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      const products = (await storedPages(out)).filter((page) => page.url !== `${own.base}/`);
      expect(new Set(products.map((page) => page.scan)).size).toBe(1);
      await damageBlob(out, products[0].scan, (bytes) => bytes.fill(0));
      const again = await run();
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ failed: 0, complete: true, churn: { removed: 0 } });
      const warned = (await readManifest(out)).warnings.filter((/** @type {{ code: string }} */ warning) => warning.code === 'STAGED_DAMAGED');
      // Each page that read it before the first staged it again (all, or some: timing decides).
      expect(warned.length).toBeGreaterThanOrEqual(1);
      expect(warned.length).toBeLessThanOrEqual(6);
    } finally {
      await own.close();
    }
  });

  it('a killed crawl\'s page whose staged links are damaged is fetched again on resume, not taken from the journal', async () => {
    const kill = fileURLToPath(new URL('../fixtures/kill-crawl.js', import.meta.url));
    const clean = path.join(await dirs.make(), 'clean');
    const args = ['-i', '/', '-c', '2']; // with crawl()'s -x /cart.asp: the options of kill-crawl.js
    expect((await crawl(clean, args)).code).toBe(0);
    const out = path.join(await dirs.make(), 'out');
    const killed = await runNode([kill, site.root, out, 'journaled', '5', JSON.stringify({ exclude: ['/cart.asp'] })], { cwd: path.dirname(out), limitMs: 60_000 });
    expect(killed.signal).toBe('SIGKILL');
    const journaled = (await readFile(path.join(out, '.prerender', 'journal.ndjson'), 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line));
    // The home page is done first: it is in any journal with pages.
    const home = journaled.find((entry) => entry.url === site.root);
    expect(home?.scan).toBeDefined();
    const pages = await journalPages(out);
    expect(pages.length).toBeGreaterThanOrEqual(5);
    await damageBlob(out, home.scan, (bytes) => bytes.fill(0));
    site.resetCounters();
    const again = await crawl(out, args);
    expect(again.code).toBe(0);
    expect(again.summary.resumed).toBe(pages.length - 1);
    expect(site.log).toContain('/');
    const warned = (await readManifest(out)).warnings.filter((/** @type {{ code: string }} */ warning) => warning.code === 'STAGED_DAMAGED');
    expect(warned.map((/** @type {{ url: string }} */ warning) => warning.url)).toEqual([site.root]);
    expect(withoutWarnings(await snapshotTree(out))).toEqual(withoutWarnings(await snapshotTree(clean)));
  });

  it('an origin without validators: a page of the same bytes whose stored links are damaged is scanned again', async () => {
    site.setValidators('none');
    const out = path.join(await dirs.make(), 'out');
    expect((await crawl(out)).code).toBe(0);
    const before = await snapshotTree(out);
    const home = (await storedPages(out)).find((page) => page.url === site.root);
    await damageBlob(out, home.scan, (bytes) => bytes.fill(0));
    const again = await crawl(out, ['--prune-max', '100%']);
    expect(again.code).toBe(0);
    expect(again.summary.churn).toMatchObject({ removed: 0, filesWritten: 0 });
    const warned = (await readManifest(out)).warnings.filter((/** @type {{ code: string }} */ warning) => warning.code === 'STAGED_DAMAGED');
    expect(warned.map((/** @type {{ url: string }} */ warning) => warning.url)).toEqual([site.root]);
    expect(withoutWarnings(await snapshotTree(out))).toEqual(withoutWarnings(before));
    const third = await crawl(out, ['--prune-max', '100%']);
    expect(third.summary.warnings).toBe(0);
  });

  it('a log of garbage the size of the old one: every page fetched again, the tree as it was', async () => {
    const out = path.join(await dirs.make(), 'out');
    expect((await crawl(out)).code).toBe(0);
    const before = await snapshotTree(out);
    for (const page of await storedPages(out)) if (page.scan) await damageBlob(out, page.scan, (bytes) => { for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + 7) & 0xff; });
    const again = await crawl(out, ['--force']);
    expect(again.code).toBe(0);
    expect(again.summary.churn.removed).toBe(0);
    expect(again.summary.churn.filesWritten).toBe(0);
    expect(withoutWarnings(await snapshotTree(out))).toEqual(withoutWarnings(before));
  });
});

describe('the state file', () => {
  it('without the stored bodies (blobs.log lost), pages are fetched in full, never answered 304 with nothing to keep', async () => {
    const { rm } = await import('node:fs/promises');
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    await rm(path.join(out, '.prerender', 'blobs.log'));
    await rm(path.join(out, '.prerender', 'blobs.idx'));
    site.resetCounters();
    const second = await crawl(out);
    expect(second.code).toBe(0);
    expect(site.counters.conditional).toBe(0);
    expect(second.summary.failed).toBe(0);
    expect(second.summary.churn.filesWritten).toBe(0); // same bytes: nothing written all the same
  });

  it('a state cut short (or empty) is refused, never taken for a crawl of fewer pages; --full starts over', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const stateFile = path.join(out, '.prerender', 'state.ndjson');
    const lines = (await readFile(stateFile, 'utf8')).split('\n').filter(Boolean);
    expect(JSON.parse(lines[0]).sealed).toBe(true);
    expect(JSON.parse(lines[lines.length - 1])).toEqual({ end: lines.length - 2 });
    const before = await fileIds(out);
    for (const cut of [lines.slice(0, 1), lines.slice(0, 5), lines.slice(0, -1)]) {
      await writeFile(stateFile, cut.join('\n') + '\n');
      const refused = await crawl(out);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/state\.ndjson is cut short \(\d+ of its lines, no end line\); crawl with --full to start over/);
      expect(refused.summary.error.code).toBe('STATE_VERSION');
    }
    await writeFile(stateFile, '');
    expect((await crawl(out)).stderr).toMatch(/state\.ndjson is empty; crawl with --full/);
    expect(await fileIds(out)).toEqual(before); // nothing touched, no -2 copies
    const full = await crawl(out, ['--full']);
    expect(full.code).toBe(0);
    expect(full.summary.warnings).toBe(0);
    expect((await crawl(out)).summary.churn.notModified).toBe(21);
  });

  it('a page line of the wrong shape (JSON, line count kept) is refused, never read as a crawl without that page', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const stateFile = path.join(out, '.prerender', 'state.ndjson');
    const lines = (await readFile(stateFile, 'utf8')).split('\n').filter(Boolean);
    const before = await fileIds(out);
    const page = JSON.parse(lines[3]);
    for (const bad of [{}, { url: 5 }, { url: page.url }, { ...page, state: 'gone' }, { ...page, status: '200' }, { url: page.url, state: 'redirect', status: 301 }]) {
      await writeFile(stateFile, [...lines.slice(0, 3), JSON.stringify(bad), ...lines.slice(4)].join('\n') + '\n');
      const refused = await crawl(out);
      expect(refused.code, JSON.stringify(bad)).toBe(2);
      expect(refused.stderr).toMatch(/state\.ndjson cannot be read \(line 4 is not a page of a state\); crawl with --full to start over/);
    }
    expect(await fileIds(out)).toEqual(before);
  });

  it('a directory in place of the state is one clear line, exit 2; --full removes it and starts over', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    const stateFile = path.join(out, '.prerender', 'state.ndjson');
    await rm(stateFile);
    await mkdir(path.join(stateFile, 'x'), { recursive: true });
    const failed = await crawl(out);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/cannot use .*state\.ndjson: it is a directory/);
    expect(failed.stderr).not.toMatch(/looks like a bug/);
    expect((await crawl(out, ['--full'])).code).toBe(0);
    expect((await crawl(out)).code).toBe(0);
  });

  it('--full after a state it cannot read still removes the files of pages gone: the last manifest lists them', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    expect(await listFiles(out)).toContain('p/p20.htm');
    await writeFile(path.join(out, '.prerender', 'state.ndjson'), '{"format":"prerender-state","version":99}\n');
    site.remove(20);
    expect((await crawl(out)).code).toBe(2);
    const full = await crawl(out, ['--full', '--prune-max', '100%']);
    // Product 19 still links to it: a broken link, exit 1 (as a clean crawl of the site gives).
    expect(full.code).toBe(1);
    expect(full.summary.churn.removed).toBe(1);
    expect(await listFiles(out)).not.toContain('p/p20.htm');
    const verified = await runCli(['verify', out], { cwd: path.dirname(out) });
    expect(verified.code).toBe(0);
  });

  it('an OUT with a manifest and no state (an older prerender\'s tree): its files are the crawl\'s, those of pages gone removed, a hand-placed file kept', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    await rm(path.join(out, '.prerender'), { recursive: true });
    await writeFile(path.join(out, 'robots.txt'), 'User-agent: *\n');
    site.remove(20);
    site.resetCounters();
    const again = await crawl(out, ['--prune-max', '100%']);
    expect(again.code).toBe(1); // product 19 links to it
    // Nothing to revalidate against: every page fetched in full and written, as in a first crawl.
    expect(site.counters.conditional).toBe(0);
    expect(again.summary.churn).toMatchObject({ removed: 1, filesWritten: 20 });
    const files = await listFiles(out);
    expect(files).not.toContain('p/p20.htm');
    expect(files).toContain('robots.txt');
    expect(files.filter((file) => /-2\./.test(file))).toEqual([]);
    // The default --prune-max holds too: a manifest of another site is not a reason to empty OUT.
    await rm(path.join(out, '.prerender'), { recursive: true });
    for (let n = 1; n <= 10; n++) site.remove(n);
    const refused = await crawl(out);
    expect(refused.code).toBe(1);
    expect(refused.summary.pruneRefused).toBe(true);
    expect(await listFiles(out)).toContain('p/p1.htm');
  });

  it('a manifest of another site, or entries no crawl writes, are not taken for this crawl\'s files', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    await rm(path.join(out, '.prerender'), { recursive: true });
    const manifestFile = path.join(out, 'prerender-manifest.json');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8'));
    // Entries without a file or status, or with a name no crawl gives: passed over, not a crash.
    manifest.pages.push({ url: `${site.origin}/odd`, status: 200 }, { url: `${site.origin}/odd2`, file: 'x.html' }, { url: `${site.origin}/odd3`, status: 200, file: '../x.html' });
    await writeFile(manifestFile, JSON.stringify(manifest));
    site.remove(20);
    const again = await crawl(out, ['--prune-max', '100%']);
    expect(again.summary.churn.removed).toBe(1);
    // Another site's tree: the crawl of this one is a first crawl there, and removes nothing of it.
    await rm(path.join(out, '.prerender'), { recursive: true });
    const other = JSON.parse(await readFile(manifestFile, 'utf8'));
    other.roots = ['http://other.example/'];
    other.pages = other.pages.map((/** @type {{ url: string }} */ page) => ({ ...page, url: page.url.replace(site.origin, 'http://other.example') }));
    await writeFile(manifestFile, JSON.stringify(other));
    site.remove(19);
    const first = await crawl(out, ['--prune-max', '100%']);
    expect(first.summary.churn.removed).toBe(0);
    expect(await listFiles(out)).toContain('p/p19.htm');
    // A crawl of --urls alone: whose site it is is not known before the list is read, so it is a first crawl too.
    await rm(path.join(out, '.prerender'), { recursive: true });
    site.remove(18);
    const list = path.join(path.dirname(out), 'urls.txt');
    await writeFile(list, `${site.root}\n`);
    const listed = await runCli(['crawl', '--urls', list, '-x', '/cart.asp', '-o', out, '--json', '--retries', '0', '--prune-max', '100%'], { cwd: path.dirname(out) });
    expect(JSON.parse(listed.stdout).churn.removed).toBe(0);
    expect(await listFiles(out)).toContain('p/p18.htm');
  });

  it('a state of another version is refused with exit 2; --full starts over', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl(out);
    await writeFile(path.join(out, '.prerender', 'state.ndjson'), '{"format":"prerender-state","version":99}\n');
    const refused = await crawl(out);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/state version 99; this prerender reads version 1: crawl with --full/);
    const full = await crawl(out, ['--full']);
    expect(full.code).toBe(0);
    expect((await crawl(out)).summary.churn.notModified).toBe(21);
  });
});

/** A shop with an about page, crawled with --precompress gzip,br: its siblings are there. */
async function precompressedShop() {
  await site.close();
  site = await startChangingSite({ products: 3, about: true });
  const out = path.join(await dirs.make(), 'out');
  expect((await crawl(out, ['--precompress', 'gzip,br'])).code).toBe(0);
  expect(await listFiles(out)).toEqual(expect.arrayContaining(['about.asp.html.gz', 'about.asp.html.br']));
  return out;
}

describe('--precompress', () => {
  it('writes .gz and .br beside files worth it, with their mtime; never for pages with price slots; refreshed and removed with their source', async () => {
    const { gunzipSync, brotliDecompressSync } = await import('node:zlib');
    await site.close();
    site = await startChangingSite({ products: 3, about: true });
    const out = path.join(await dirs.make(), 'out');
    const first = await crawl(out, ['--precompress', 'gzip,br']);
    expect(first.code).toBe(0);
    const about = await readFile(path.join(out, 'about.asp.html'));
    expect(gunzipSync(await readFile(path.join(out, 'about.asp.html.gz')))).toEqual(about);
    expect(brotliDecompressSync(await readFile(path.join(out, 'about.asp.html.br')))).toEqual(about);
    const times = async (/** @type {string} */ file) => (await stat(path.join(out, file), { bigint: true })).mtimeNs;
    expect(await times('about.asp.html.gz')).toBe(await times('about.asp.html')); // to the nanosecond
    expect(await times('about.asp.html.br')).toBe(await times('about.asp.html'));
    const files = await listFiles(out);
    expect(files.filter((file) => file.startsWith('p/') && /\.(gz|br)$/.test(file))).toEqual([]); // price slots: bytes change per request
    expect(files).not.toContain('index.html.gz'); // under 1 KiB

    const before = await fileIds(out);
    const unchanged = await crawl(out, ['--precompress', 'gzip,br']);
    expect(unchanged.summary.churn.filesWritten).toBe(0);
    expect(rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);

    site.changeAbout();
    const changed = await crawl(out, ['--precompress', 'gzip,br']);
    expect(changed.summary.churn.filesWritten).toBe(3);
    expect(gunzipSync(await readFile(path.join(out, 'about.asp.html.gz'))).toString()).toContain('About us (2)');

    site.removeAbout();
    const removed = await crawl(out, ['--precompress', 'gzip,br', '--prune-max', '1']);
    expect(removed.summary.churn.removed).toBe(1);
    expect((await listFiles(out)).filter((file) => file.startsWith('about'))).toEqual([]);
  });

  it('turned on, off and on again for an OUT that has a state: only the siblings are written or removed, no page file', async () => {
    await site.close();
    site = await startChangingSite({ products: 3, about: true });
    const out = path.join(await dirs.make(), 'out');
    expect((await crawl(out)).code).toBe(0);
    const plain = await fileIds(out);

    const on = await crawl(out, ['--precompress', 'gzip,br']);
    expect(on.code).toBe(0);
    expect(rewritten(plain, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
    expect(on.summary.churn).toMatchObject({ notModified: 5, changed: 0, filesWritten: 2 }); // about.asp.html.gz and .br
    const about = await readFile(path.join(out, 'about.asp.html'));
    const { gunzipSync } = await import('node:zlib');
    expect(gunzipSync(await readFile(path.join(out, 'about.asp.html.gz')))).toEqual(about);
    const mtime = async (/** @type {string} */ file) => (await stat(path.join(out, file), { bigint: true })).mtimeNs;
    // Beside a file left as it is: its time, never older (a double holds about a quarter of a microsecond).
    expect(await mtime('about.asp.html.gz')).toBeGreaterThanOrEqual(await mtime('about.asp.html'));
    expect(Number((await mtime('about.asp.html.gz')) - (await mtime('about.asp.html')))).toBeLessThan(2000);

    // The same options again: nothing is tried again (the small pages stay without siblings).
    const withSiblings = await fileIds(out);
    const again = await crawl(out, ['--precompress', 'gzip,br']);
    expect(again.summary.churn.filesWritten).toBe(0);
    expect(rewritten(withSiblings, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);

    const off = await crawl(out);
    expect(off.summary.churn.filesWritten).toBe(0);
    expect((await listFiles(out)).filter((file) => /\.(gz|br)$/.test(file))).toEqual([]);
    expect(rewritten(plain, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);

    const gzipOnly = await crawl(out, ['--precompress', 'gzip']);
    expect(gzipOnly.summary.churn.filesWritten).toBe(1);
    expect((await listFiles(out)).filter((file) => /\.(gz|br)$/.test(file))).toEqual(['about.asp.html.gz']);
    expect((await runCli(['verify', out], { cwd: path.dirname(out) })).code).toBe(0);
  });

  it('a .gz put there by hand beside a page is never overwritten: the warning SIBLING_TAKEN, and the other format is made', async () => {
    await site.close();
    site = await startChangingSite({ products: 3, about: true });
    const out = path.join(await dirs.make(), 'out');
    expect((await crawl(out)).code).toBe(0);
    await writeFile(path.join(out, 'about.asp.html.gz'), 'mine');
    const on = await crawl(out, ['--precompress', 'gzip,br']);
    expect(on.code).toBe(0);
    expect(await readFile(path.join(out, 'about.asp.html.gz'), 'utf8')).toBe('mine');
    expect(await listFiles(out)).toContain('about.asp.html.br');
    const manifest = await readManifest(out);
    expect(manifest.warnings).toEqual([expect.objectContaining({ code: 'SIBLING_TAKEN', url: `${site.root.replace(/\/$/, '')}/about.asp` })]);
    // Changed, the page is written again: its hand-placed .gz still stays.
    site.changeAbout();
    expect((await crawl(out, ['--precompress', 'gzip,br'])).code).toBe(0);
    expect(await readFile(path.join(out, 'about.asp.html.gz'), 'utf8')).toBe('mine');
    expect((await crawl(out)).code).toBe(0);
    expect(await readFile(path.join(out, 'about.asp.html.gz'), 'utf8')).toBe('mine');
    expect(await listFiles(out)).not.toContain('about.asp.html.br');
  });

  it('a site with pages X and X.gz: the page X.gz keeps its own file, X gets no gzip sibling (SIBLING_IS_PAGE), and the tree verifies', async () => {
    const { gzipSync } = await import('node:zlib');
    const filler = (/** @type {string} */ word) => `${'<p>catalogue words about ' + word + ' repeated for size</p>'.repeat(60)}`;
    const pages = {
      '/': ['text/html', '<a href="/b.html">b</a><a href="/b.html.gz">b.gz</a><a href="/data.json">d</a><a href="/data.json.gz">d.gz</a>'],
      '/b.html': ['text/html', `<p>page b</p>${filler('b')}`],
      // As a plain file server sends it (by its extension): its file keeps the URL's name.
      '/b.html.gz': ['application/octet-stream', `<p>a page whose URL ends in .gz</p>${filler('x')}`],
      '/data.json': ['application/json', JSON.stringify({ x: Array.from({ length: 600 }, (_, i) => i) })],
    };
    const own = await serveSite((req, res) => {
      if (req.url === '/data.json.gz') {
        res.writeHead(200, { 'content-type': 'application/gzip' });
        return res.end(gzipSync('{"another":"document"}'));
      }
      const page = /** @type {Record<string, string[]>} */ (pages)[req.url ?? ''];
      if (!page) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': page[0] });
      res.end(page[1]);
    });
    try {
      const root = `${own.base}/`;
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', root, '-o', out, '--precompress', 'gzip,br', '--json'], { cwd: path.dirname(out) });
      for (let round = 0; round < 2; round++) {
        const result = await run();
        expect(result.code).toBe(0);
        expect(await readFile(path.join(out, 'b.html.gz'), 'utf8')).toBe(pages['/b.html.gz'][1]);
        expect(gunzipOf(await readFile(path.join(out, 'data.json.gz')))).toBe('{"another":"document"}');
        expect(await listFiles(out)).toEqual(expect.arrayContaining(['b.html.br', 'data.json.br']));
        const manifest = await readManifest(out);
        const codes = manifest.warnings.filter((/** @type {{ code: string }} */ w) => w.code === 'SIBLING_IS_PAGE').map((/** @type {{ url: string }} */ w) => w.url).sort();
        // Said when the siblings are made (the first run); a page kept as it is makes none again.
        expect(codes).toEqual(round === 0 ? [`${root}b.html`, `${root}data.json`] : []);
        expect((await runCli(['verify', out], { cwd: path.dirname(out) })).code).toBe(0);
      }
      // Without --precompress, the .br siblings go; the pages X.gz stay.
      expect((await runCli(['crawl', root, '-o', out, '--json'], { cwd: path.dirname(out) })).code).toBe(0);
      expect((await listFiles(out)).filter((file) => /\.(gz|br)$/.test(file)).sort()).toEqual(['b.html.gz', 'data.json.gz']);
      expect(await readFile(path.join(out, 'b.html.gz'), 'utf8')).toBe(pages['/b.html.gz'][1]);
    } finally {
      await own.close();
    }
  });

  it('two pages that swap names: each file gets its own page\'s siblings (the other\'s old .gz is the crawl\'s to replace)', async () => {
    const { gunzipSync } = await import('node:zlib');
    let swapped = false;
    const own = await serveSite((req, res) => {
      const name = req.url === '/a' ? (swapped ? 'two.html' : 'one.html') : req.url === '/b' ? (swapped ? 'one.html' : 'two.html') : null;
      res.writeHead(200, { 'content-type': 'text/html', ...(name ? { 'x-builder-filename': name } : {}) });
      res.end(req.url === '/' ? '<a href="/a">a</a><a href="/b">b</a>' : `<p>page ${req.url}</p>${'<p>filler text to compress</p>'.repeat(60)}`);
    });
    try {
      const root = `${own.base}/`;
      const out = path.join(await dirs.make(), 'out');
      const run = () => runCli(['crawl', root, '-o', out, '--precompress', 'gzip', '--json'], { cwd: path.dirname(out) });
      expect((await run()).code).toBe(0);
      swapped = true;
      const again = await run();
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout).warnings).toBe(0); // no SIBLING_TAKEN
      for (const file of ['one.html', 'two.html']) {
        expect(gunzipSync(await readFile(path.join(out, `${file}.gz`))).toString()).toBe(await readFile(path.join(out, file), 'utf8'));
      }
      expect(await readFile(path.join(out, 'one.html'), 'utf8')).toContain('page /b');
    } finally {
      await own.close();
    }
  });

  it('a state whose output key still holds the formats (written before they were kept apart) is used as it is: nothing rewritten', async () => {
    const out = await precompressedShop();
    const stateFile = path.join(out, '.prerender', 'state.ndjson');
    const [first, ...rest] = (await readFile(stateFile, 'utf8')).split('\n');
    const header = JSON.parse(first);
    const key = JSON.parse(header.output);
    header.output = JSON.stringify([...key.slice(0, 5), ['gzip', 'br'], ...key.slice(5)]);
    delete header.precompressed;
    await writeFile(stateFile, [JSON.stringify(header), ...rest].join('\n'));
    const before = await fileIds(out);
    const next = await crawl(out, ['--precompress', 'gzip,br']);
    expect(next.code).toBe(0);
    expect(next.summary.churn.filesWritten).toBe(0);
    expect(rewritten(before, await fileIds(out)).filter((file) => file !== 'prerender-manifest.json')).toEqual([]);
    expect(JSON.parse((await readFile(stateFile, 'utf8')).split('\n')[0]).precompressed).toEqual(['gzip', 'br']);
  });

  it('without --precompress, the siblings of unchanged files go too, also those an incomplete run kept', async () => {
    const out = await precompressedShop();
    // Stops before the about page: its file and siblings are kept as they are.
    const limited = await crawl(out, ['--max-pages', '1']);
    expect(limited.summary.notCrawled).toBeGreaterThan(0);
    expect(await listFiles(out)).toContain('about.asp.html.gz');
    const next = await crawl(out);
    expect(next.code).toBe(0);
    expect((await listFiles(out)).filter((file) => /\.(gz|br)$/.test(file))).toEqual([]);
    expect((await runCli(['verify', out], { cwd: path.dirname(out) })).code).toBe(0);
  });

  it('without --precompress, the siblings a crawl made go (none is left stale beside a new file); a .gz put there by hand stays', async () => {
    const out = await precompressedShop();
    // Not a crawl's: a sibling of a page with price slots (never precompressed), written by hand.
    await writeFile(path.join(out, 'p/p2.htm.gz'), 'mine');

    site.changeAbout();
    const changed = await crawl(out, ['--prune-max', '1']);
    expect(changed.code).toBe(0);
    expect(await readFile(path.join(out, 'about.asp.html'), 'utf8')).toContain('About us (2)');
    expect((await listFiles(out)).filter((file) => /\.(gz|br)$/.test(file))).toEqual(['p/p2.htm.gz']);

    site.remove(2);
    const gone = await crawl(out, ['--prune-max', '1', '--force']);
    expect(gone.summary.churn.removed).toBe(1);
    expect(await listFiles(out)).not.toContain('p/p2.htm');
    expect(await readFile(path.join(out, 'p/p2.htm.gz'), 'utf8')).toBe('mine');
  });
});
