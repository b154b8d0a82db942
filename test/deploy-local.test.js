// @ts-check
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, readdir, readlink, realpath, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deploy, publish, verify } from '../lib/index.js';
import { useTestDir } from './helpers/fixtures.js';
import { generationIn, writeTree } from './helpers/deploy-tree.js';
import { formatManifest } from '../lib/output/manifest/index.js';

/** @type {string} */
let dir;
const t = useTestDir('prerender-publish-', (d) => { dir = d; });
const out = () => path.join(dir, 'out');
const www = () => path.join(dir, 'www');
/** @param {string} root */
const currentOf = async (root) => path.basename(await readlink(path.join(root, 'current')));
/** A time one second later per call (release ids are unique per second), and never in the past. */
let clock = Date.now();
const later = () => new Date((clock = Math.max(clock + 1000, Date.now() + 1000)));

describe('prerender verify', () => {
  it('passes a tree that matches its manifest (and its .gz siblings); the state directory is not looked at', async () => {
    await writeTree(out(), { pages: 3, gzip: true, size: 3000 });
    const { code, stdout } = await t.cli(['verify', 'out']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^OK: .*7 files .* of 3 pages/);
  });

  it('passes what a real crawl writes (pages with price slots, .gz siblings, sitemap), and publish takes it', async () => {
    const shop = await t.shop({ products: 30, count: 30 });
    const crawled = await t.cli(['crawl', shop.url, '-i', '/st/dir.asp', '/st/product.asp', '-o', 'out', '--precompress', 'gzip', '--write-sitemap', '--site-url', 'https://static.example/', '-q']);
    expect(crawled.code).toBe(0);
    const report = await verify(out());
    expect(report.unlisted).toEqual([]);
    expect(report.files).toBeGreaterThan(report.pages + 2); // the pages, some .gz, the manifest and sitemap.xml
    expect(report.ok).toBe(true);
    const published = await t.cli(['publish', 'out', '--to', 'www', '--json']);
    expect(published.code).toBe(0);
    const result = JSON.parse(published.stdout);
    expect(result.targets[0].status).toBe('switched');
    expect(result.files).toBe(report.files);
    expect(await readdir(path.join(www(), 'current'))).toContain('sitemap.xml');
  });

  it('reports changed, missing and unlisted files, and a .gz that is not its page; exit 1', async () => {
    await writeTree(out(), { pages: 4, gzip: true, size: 3000 });
    await writeFile(path.join(out(), 'p/page1.html'), 'tampered');
    await rm(path.join(out(), 'p/page2.html'));
    await writeFile(path.join(out(), 'p/extra.html'), 'not listed');
    const { gzipSync } = await import('node:zlib');
    await writeFile(path.join(out(), 'p/page3.html.gz'), gzipSync('something else'));
    const { code, stdout } = await t.cli(['verify', 'out', '--json']);
    expect(code).toBe(1);
    const report = JSON.parse(stdout);
    expect(report.ok).toBe(false);
    expect(report.changed.map((/** @type {any} */ p) => p.file)).toEqual(['p/page1.html', 'p/page3.html.gz']);
    expect(report.missing.map((/** @type {any} */ p) => p.file)).toEqual(['p/page2.html']);
    expect(report.unlisted.map((/** @type {any} */ p) => p.file)).toEqual(['p/extra.html', 'p/page2.html.gz']); // the .gz of a page gone is no longer listed
    const text = await t.cli(['verify', 'out']);
    expect(text.stdout).toMatch(/MISMATCH[\s\S]*1 missing:\n {2}p\/page2\.html/);
  });

  it('refuses a manifest entry that escapes OUT and a link pointing outside it; publish sends nothing', async () => {
    const pages = await writeTree(out(), { pages: 2 });
    await writeFile(path.join(dir, 'secret.txt'), 'outside');
    await symlink(path.join(dir, 'secret.txt'), path.join(out(), 'p/leak.html'));
    await writeFile(path.join(out(), 'prerender-manifest.json'), formatManifest({
      roots: ['http://shop.test/'], scope: {}, placeholderMode: 'filter',
      pages: [...pages, { ...pages[0], url: 'http://shop.test/x', file: '../secret.txt' }, { ...pages[0], url: 'http://shop.test/y', file: 'p/leak.html' }],
    }));
    const report = await verify(out());
    expect(report.unsafe.map((p) => p.file).sort()).toEqual(['../secret.txt', 'p/leak.html']);
    const { code, stderr } = await t.cli(['publish', 'out', '--to', 'www']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/nothing was sent/);
    await expect(stat(www())).rejects.toThrow();
  });
});

describe('prerender publish, releases, rollback', () => {
  it('builds releases/ID, hard-links unchanged files, switches current, and drops files of pages gone with the switch', async () => {
    await writeTree(out(), { pages: 5, gzip: true, size: 3000 });
    const first = await publish(out(), www(), { now: later() });
    expect(first.ok).toBe(true);
    expect(first.id).toMatch(/^\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    expect(await readlink(path.join(www(), 'current'))).toBe(`releases/${first.id}`);
    expect((await readdir(path.join(www(), 'current'))).sort()).toEqual(['p', 'prerender-manifest.json']); // never .prerender

    await rm(path.join(out(), 'p/page4.html'));
    await rm(path.join(out(), 'p/page4.html.gz'));
    // A re-crawl: page 0 changed, the others' files left as they were.
    const pages = await writeTree(out(), { pages: 4, gzip: true, size: 3000, generation: (i) => (i === 0 ? 2 : 1) });
    expect(pages).toHaveLength(4);
    const second = await publish(out(), www(), { now: later() });
    const result = second.targets[0];
    expect(result.status).toBe('switched');
    // page0 changed, and page3 now links to page0: both with their .gz, and the manifest.
    expect(result.churn).toMatchObject({ changed: { files: 5 }, unchanged: { files: 4 }, removed: { files: 2 }, new: { files: 0 } });
    // Unchanged by content: hard links to the previous release, though writeTree wrote them again.
    expect(result.sent.files).toBe(5);
    const a = await stat(path.join(www(), 'releases', first.id, 'p/page1.html.gz'));
    const b = await stat(path.join(www(), 'releases', second.id, 'p/page1.html.gz'));
    expect(b.ino).toBe(a.ino);
    expect(b.size).toBe(a.size);
    expect(await readdir(path.join(www(), 'current/p'))).not.toContain('page4.html');
    expect(await readdir(path.join(www(), 'releases', first.id, 'p'))).toContain('page4.html');

    // Publishing the same tree again, unchanged: every file is a hard link to the current release.
    const same = await publish(out(), www(), { now: later() });
    expect(same.targets[0].status).toBe('up-to-date');
    await writeFile(path.join(out(), 'prerender-manifest.json'), (await readFile(path.join(out(), 'prerender-manifest.json'), 'utf8')).replace(/"generatedAt": "[^"]+"/, '"generatedAt": "2030-01-01T00:00:00.000Z"'));
    const third = await publish(out(), www(), { now: later() });
    expect(third.targets[0].churn).toMatchObject({ changed: { files: 1 }, unchanged: { files: 8 } });
    expect(third.targets[0].sent.files).toBe(1);
    const c = await stat(path.join(www(), 'releases', third.id, 'p/page2.html'));
    const d = await stat(path.join(www(), 'releases', second.id, 'p/page2.html'));
    expect(c.ino).toBe(d.ino);
  });

  it('publish, rollback, publish of the same tree: switches to the kept release, says so, sends nothing', async () => {
    await writeTree(out(), { pages: 3, generation: 1 });
    const first = await publish(out(), www(), { now: later() });
    await writeTree(out(), { pages: 3, generation: 2 });
    const second = await publish(out(), www(), { now: later() });
    expect((await t.cli(['rollback', '--to', 'www'])).code).toBe(0);
    expect(await currentOf(www())).toBe(first.id);
    const again = await t.cli(['publish', 'out', '--to', 'www']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`release ${second.id} holds this very tree (the same manifest): switched to it, nothing sent`);
    expect(await currentOf(www())).toBe(second.id);
    expect((await readdir(path.join(www(), 'releases'))).filter((name) => !name.endsWith('.json')).sort()).toEqual([first.id, second.id]);
    const json = JSON.parse((await t.cli(['publish', 'out', '--to', 'www', '--json'])).stdout);
    expect(json.targets[0]).toMatchObject({ status: 'up-to-date' });
    await t.cli(['rollback', '--to', 'www']);
    const result = await publish(out(), www(), { now: later() });
    expect(result.targets[0]).toMatchObject({ status: 'switched', reused: second.id, current: second.id, sent: { files: 0, bytes: 0 } });
    expect(result.ok).toBe(true);
  });

  it('lists releases, rolls back to the previous one or to --release, and keeps --keep releases but never the current one', async () => {
    /** @type {string[]} */
    const ids = [];
    for (let generation = 1; generation <= 3; generation++) {
      await writeTree(out(), { pages: 2, generation });
      ids.push((await publish(out(), www(), { now: later() })).id);
    }
    const listed = await t.cli(['releases', '--to', 'www', '--json']);
    expect(JSON.parse(listed.stdout).releases.map((/** @type {any} */ r) => [r.id, r.current, r.pages])).toEqual([[ids[0], false, 2], [ids[1], false, 2], [ids[2], true, 2]]);
    const text = await t.cli(['releases', '--to', 'www']);
    expect(text.stdout).toMatch(new RegExp(`\\*\\s+${ids[2]}`));

    expect((await t.cli(['rollback', '--to', 'www'])).code).toBe(0);
    expect(await currentOf(www())).toBe(ids[1]);
    expect(generationIn(await readFile(path.join(www(), 'current/p/page0.html'), 'utf8'))).toBe(2);
    expect((await t.cli(['rollback', '--to', 'www', '--release', ids[0]])).code).toBe(0);
    expect(await currentOf(www())).toBe(ids[0]);
    const missing = await t.cli(['rollback', '--to', 'www', '--release', '20000101T000000Z-00000000']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no complete release/);
    const none = await t.cli(['rollback', '--to', 'www']);
    expect(none.stderr).toMatch(/no release older than the current one/);

    // keep 1: only the new release stays (current moved to it).
    await writeTree(out(), { pages: 2, generation: 4 });
    const fourth = await publish(out(), www(), { now: later(), keep: 1, switch: 'each' });
    expect(fourth.targets[0].pruned.sort()).toEqual([...ids].sort());
    const left = (await readdir(path.join(www(), 'releases'))).filter((name) => !name.endsWith('.json')).sort();
    expect(left).toEqual([fourth.id]);
  });

  it('an interrupted publish never changes current; the next run removes what it left', async () => {
    await writeTree(out(), { pages: 3 });
    const first = await publish(out(), www(), { now: later() });
    await writeTree(out(), { pages: 300, generation: 2 });
    const controller = new AbortController();
    const pending = publish(out(), www(), { now: later(), signal: controller.signal });
    controller.abort();
    const aborted = await pending;
    expect(aborted.targets[0].status).toBe('failed');
    expect(aborted.targets[0].error?.code).toBe('ABORTED');
    expect(await currentOf(www())).toBe(first.id);
    const again = await publish(out(), www(), { now: later() });
    expect(again.targets[0].status).toBe('switched');
    expect((await readdir(path.join(www(), 'releases'))).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
  });

  it('deploys to a target named in the config file, and refuses a "current" that is a real directory', async () => {
    await writeTree(out(), { pages: 2 });
    await writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ targets: { production: { url: 'www' } }, keep: 2 }));
    const ok = await t.cli(['deploy', 'out', 'production']);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/production \(.*www\)/);
    expect(ok.stdout).toMatch(/Switched: production/);
    await mkdir(path.join(dir, 'www2/current'), { recursive: true });
    const refused = await deploy(out(), [path.join(dir, 'www2')]);
    expect(refused.targets[0].error?.code).toBe('DEPLOY_CURRENT_NOT_LINK');
    const bad = await t.cli(['deploy', 'out', 'production', '--keep', 'x']);
    expect(bad.code).toBe(2);
  });
});

describe('publish under load', () => {
  it('a static server reading current answers every request from one whole release while publishes run', async () => {
    const PAGES = 40;
    await writeTree(out(), { pages: PAGES, size: 2000 });
    /** @type {Map<string, number>} release id -> generation */
    const generations = new Map();
    generations.set((await publish(out(), www(), { now: later() })).id, 1);
    // A plain static server: current resolved once per request, the file read from that release.
    const server = http.createServer(async (req, res) => {
      try {
        const root = await realpath(path.join(www(), 'current'));
        const file = path.join(root, decodeURIComponent(new URL(String(req.url), 'http://x').pathname));
        if (!file.startsWith(root + path.sep)) throw new Error('outside');
        res.setHeader('x-release', path.basename(root));
        await new Promise((resolve, reject) => createReadStream(file).on('error', reject).on('end', resolve).pipe(res));
      } catch {
        res.statusCode = 500;
        res.end();
      }
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    t.defer(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }));
    const base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    t.defer(async () => agent.destroy());
    /** @param {string} file */
    const get = (file) => new Promise((resolve, reject) => {
      http.get(`${base}/${file}`, { agent }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk) => { body += chunk; }).on('end', () => resolve({ status: res.statusCode, release: String(res.headers['x-release']), body }));
      }).on('error', reject);
    });

    let publishing = true;
    let failures = 0;
    let pairs = 0;
    let samePairs = 0;
    const readers = Array.from({ length: 6 }, async (_, reader) => {
      for (let i = reader; publishing || i < reader + 20; i++) {
        const index = i % PAGES;
        const page = /** @type {{ status: number, release: string, body: string }} */ (await get(`p/page${index}.html`));
        const link = /href="(page\d+\.html)"/.exec(page.body)?.[1];
        const linked = /** @type {{ status: number, release: string, body: string }} */ (await get(`p/${link}`));
        for (const answer of [page, linked]) {
          if (answer.status !== 200) failures++;
          // Every page of a release is of that release's generation: never a mix.
          expect(generationIn(answer.body)).toBe(generations.get(answer.release));
        }
        pairs++;
        if (page.release === linked.release) {
          samePairs++;
          expect(generationIn(linked.body)).toBe(generationIn(page.body));
        }
      }
    });
    for (let generation = 2; generation <= 7; generation++) {
      await writeTree(out(), { pages: PAGES, size: 2000, generation });
      const now = later();
      const { releaseId } = await import('../lib/deploy/release.js');
      const { createHash } = await import('node:crypto');
      const id = releaseId(createHash('sha256').update(await readFile(path.join(out(), 'prerender-manifest.json'))).digest('hex'), now);
      generations.set(id, generation);
      const result = await publish(out(), www(), { now, keep: 3 });
      expect(result.id).toBe(id);
      expect(result.ok).toBe(true);
    }
    publishing = false;
    await Promise.all(readers);
    expect(failures).toBe(0);
    expect(pairs).toBeGreaterThan(100);
    expect(samePairs).toBeGreaterThan(0);
  });
});

describe('publish reads and hashes only what changed; one run per target', () => {
  it('hashes only the files written since the last run; a file rewritten with its size and time restored is still caught', async () => {
    await writeTree(out(), { pages: 30, gzip: true, size: 3000 });
    const first = await publish(out(), www(), { now: later() });
    expect(first.ok).toBe(true);
    expect(first.sourceHashed).toBe(61); // 30 pages, 30 .gz, the manifest
    await writeTree(out(), { pages: 30, gzip: true, size: 3000, generation: (i) => (i === 7 ? 2 : 1) });
    // writeTree wrote every file again (their ctime moved): all are hashed again, and cached.
    const second = await publish(out(), www(), { now: later() });
    expect(second.ok).toBe(true);
    const third = await publish(out(), www(), { now: later() });
    expect(third.targets[0].status).toBe('up-to-date');
    expect(third.sourceHashed).toBe(1); // only the manifest: nothing was written since the last run

    // Same size, same mtime, other bytes: the ctime gives it away.
    const victim = path.join(out(), 'p/page3.html');
    const before = await stat(victim);
    const text = await readFile(victim, 'utf8');
    await writeFile(victim, text.replace('next', 'NEXT'));
    await utimes(victim, before.atime, before.mtime);
    const refused = await t.cli(['publish', 'out', '--to', 'www']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/p\/page3\.html sha256 .* manifest says/);
    // verify never trusts the cache.
    expect((await verify(out())).changed.map((p) => p.file)).toEqual(['p/page3.html']);
  });

  it('--verify all hashes every file of the new release: a file of the previous release altered in place is caught', async () => {
    await writeTree(out(), { pages: 4, size: 2000 });
    const first = await publish(out(), www(), { now: later() });
    const victim = path.join(www(), 'releases', first.id, 'p/page2.html');
    await writeFile(victim, (await readFile(victim, 'utf8')).replace('next', 'NEXT'));
    await writeTree(out(), { pages: 4, size: 2000, generation: (i) => (i === 0 ? 2 : 1) });
    // By default only the copied files are hashed: page2 is a link to the altered inode.
    const plan = await deploy(out(), [www()], { dryRun: true });
    expect(plan.targets[0].plan?.send).toEqual(['p/page0.html', 'prerender-manifest.json']);
    const second = await publish(out(), www(), { now: later(), verify: 'all' });
    expect(second.ok).toBe(false);
    expect(second.targets[0].verify?.failures).toEqual([{ file: 'p/page2.html', reason: 'sha256 differs on the target after transfer' }]);
    expect(await currentOf(www())).toBe(first.id);
    expect((await readdir(path.join(www(), 'releases'))).sort()).toEqual([first.id, `${first.id}.json`]);
  });

  it('refuses a second publish while one holds the target (exit 2, who holds it); takes over the lock of a killed run', async () => {
    await writeTree(out(), { pages: 3 });
    const first = await publish(out(), www(), { now: later() });
    // A live process holds the lock.
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    t.defer(async () => { holder.kill(); });
    const lock = path.join(www(), '.prerender-lock');
    // The lock file of earlier versions (now a directory holding "owner") is read the same way.
    await writeFile(lock, JSON.stringify({ pid: holder.pid, host: os.hostname(), startedAt: new Date().toISOString() }));
    await writeTree(out(), { pages: 3, generation: 2 });
    const refused = await t.cli(['publish', 'out', '--to', 'www']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`another prerender publish, deploy or rollback \\(pid ${holder.pid} on .*\\) holds .*www; wait for it to end`));
    const rolled = await t.cli(['rollback', '--to', 'www']);
    expect(rolled.code).toBe(2);
    expect(await currentOf(www())).toBe(first.id);
    expect((await readdir(path.join(www(), 'releases'))).length).toBe(2); // nothing built

    // Its process is gone (killed): the next publish takes the lock over, and leaves none.
    const gone = new Promise((resolve) => holder.once('exit', resolve));
    holder.kill('SIGKILL');
    await gone;
    const again = await t.cli(['publish', 'out', '--to', 'www', '--json']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(await currentOf(www())).toBe(JSON.parse(again.stdout).id);
    await expect(stat(lock)).rejects.toThrow();
  });
});
