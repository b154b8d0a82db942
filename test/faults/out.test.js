// @ts-check
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { crawl } from '../../lib/index.js';
import { LockedError, OutputError } from '../../lib/errors.js';
import { MANIFEST_NAME } from '../../lib/output/manifest/schema.js';
import { parseManifest } from '../../lib/output/manifest/read.js';
import { leftovers, listFilesIfAny, readManifest } from '../crawl-helpers.js';
import { BIN, runCli, runNode } from '../helpers/cli.js';
import { useFixtureSite } from '../helpers/fixtures.js';
import { memoryTarget } from '../helpers/memory-target.js';

/**
 * The output directory under faults: a second crawl, stale locks, links and
 * reserved names planted in OUT, a full or read-only disk, an OUT that cannot
 * be created. Each test states what the user gets: exit code, message, what
 * is in OUT and what is not.
 */

/** @type {import('../helpers/fixtures.js').FixtureSite} */
let site;
const dirs = useFixtureSite((started) => { site = started; });

/** Root can mount a small tmpfs; anyone else gets the injected failing target instead. */
const canMount = (() => {
  if (process.getuid?.() !== 0) return false;
  const probe = path.join(os.tmpdir(), `prerender-mount-probe-${process.pid}`);
  try {
    execFileSync('mkdir', ['-p', probe]);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    execFileSync('rm', ['-rf', probe]);
  }
})();

/**
 * A tmpfs of `size` at a new directory, unmounted by the returned function.
 * @param {string} size e.g. '96k'
 * @param {string[]} [extra] more mount options, e.g. ['ro']
 */
async function smallDisk(size, extra = []) {
  const dir = await dirs.make('prerender-disk-');
  execFileSync('mount', ['-t', 'tmpfs', '-o', ['size=' + size, ...extra].join(','), 'tmpfs', dir]);
  return { dir, unmount: () => execFileSync('umount', ['-l', dir]) };
}

/** @param {string[]} argv */
async function cli(argv) {
  return runCli(argv, { cwd: await dirs.make('prerender-cwd-') });
}

it('runs the disk tests for real in CI (root mounts a small tmpfs)', () => {
  if (process.env.CI === 'true') expect(canMount).toBe(true);
});

describe('two crawls on one OUT', () => {
  it('the second exits 2 and names the first; the first finishes with an intact tree', async () => {
    const out = path.join(await dirs.make(), 'out');
    site.closeGate();
    const first = crawl({ roots: [site.url('/slow/index.asp?n=3')], out, retries: 0 });
    try {
      // The first holds the lock as soon as it has made OUT.
      // (and its staging log, which a refused run must leave alone)
      const held = async () => { const files = await listFilesIfAny(path.join(out, '.prerender')); return files.includes('lock') && files.includes('blobs.log'); };
      for (let i = 0; i < 3000 && !(await held()); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await held()).toBe(true);
      const second = await cli(['crawl', site.url('/infodir/about.asp'), '-o', out, '--retries', '0']);
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(new RegExp(`another prerender crawl \\(pid ${process.pid} on .+\\) is writing to ${out.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      expect(second.stderr.trim().split('\n')).toHaveLength(1);
      const api = await crawl({ roots: [site.url('/infodir/about.asp')], out, retries: 0 }).catch((error) => error);
      expect(api).toBeInstanceOf(LockedError);
      expect(api.code).toBe('LOCKED');
      expect(await held()).toBe(true);
    } finally {
      site.openGate();
    }
    const result = await first;
    expect(result.failed).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.pages.map((page) => page.url)).toContain(site.url('/slow/index.asp?n=3'));
    for (const page of manifest.pages) expect((await readFile(path.join(out, page.file))).length).toBe(page.bytes);
    expect(await leftovers(out)).toEqual([]);
  });

  it('takes over a lock whose process is gone', async () => {
    const out = path.join(await dirs.make(), 'out');
    await mkdir(path.join(out, '.prerender'), { recursive: true });
    // A pid that was alive and is not any more.
    const dead = await runNode(['-e', 'process.stdout.write(String(process.pid))'], { cwd: os.tmpdir() });
    await writeFile(path.join(out, '.prerender', 'lock'), JSON.stringify({ pid: Number(dead.stdout), host: os.hostname(), startedAt: '2026-01-01T00:00:00.000Z' }));
    const { code } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', out, '--retries', '0', '-q']);
    expect(code).toBe(0);
    expect((await readManifest(out)).pages.length).toBeGreaterThan(0);
    expect(await leftovers(out)).toEqual([]);
  });

  it('keeps off a lock held on another host, and says how to clear it', async () => {
    const out = path.join(await dirs.make(), 'out');
    await mkdir(path.join(out, '.prerender'), { recursive: true });
    await writeFile(path.join(out, '.prerender', 'lock'), JSON.stringify({ pid: 1, host: 'elsewhere.invalid', startedAt: '2026-01-01T00:00:00.000Z' }));
    const { code, stderr } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', out]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/pid 1 on elsewhere\.invalid/);
    expect(stderr).toMatch(/if it is gone, remove .*\.prerender\/lock/);
    expect(site.log).toEqual([]);
  });
});

describe('names prerender uses for itself', () => {
  it('a page cannot take the manifest, its directory or the state directory, in any case', async () => {
    const target = memoryTarget();
    const names = ['/prerender-manifest.json', 'PRERENDER-MANIFEST.JSON', '/.prerender/lock', '/.Prerender/x.html', '/.prerender-manifest.json.tmp'];
    const loader = {
      /** @param {string} url */
      async load(url) {
        const n = Number(new URL(url).searchParams.get('n') ?? -1);
        if (n < 0) {
          const links = names.map((_, i) => `<a href="/p?n=${i}">${i}</a><a href="/.prerender-manifest.json.tmp?n=${i}">t</a>`).join('');
          return { url, status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from(links) };
        }
        const headers = { 'content-type': 'application/json', ...(new URL(url).pathname === '/p' ? { 'x-builder-filename': names[n] } : {}) };
        return { url, status: 200, headers, body: Buffer.from(`{"page":${n}}`) };
      },
      async close() {},
    };
    const out = await dirs.make();
    const result = await crawl({ roots: ['http://shop.test/'], loader, target, out });
    expect(result.failed).toBe(0);
    const manifest = parseManifest(/** @type {Buffer} */ (target.files.get(MANIFEST_NAME)).toString());
    expect(manifest.pages).toHaveLength(1 + names.length * 2);
    for (const file of target.files.keys()) {
      if (file === MANIFEST_NAME) continue;
      expect(file.toLowerCase()).not.toBe(MANIFEST_NAME);
      expect(file.toLowerCase().startsWith('.prerender/')).toBe(false);
    }
  });
});

describe('links planted in OUT', () => {
  it('a state directory that is a link out of OUT is refused before anything is fetched', async () => {
    const root = await dirs.make();
    const elsewhere = path.join(root, 'elsewhere');
    const out = path.join(root, 'out');
    await mkdir(elsewhere);
    await mkdir(out);
    await symlink(elsewhere, path.join(out, '.prerender'));
    const { code, stderr } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', out]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/refusing to use .*\.prerender: it is a symbolic link/);
    expect(await readdir(elsewhere)).toEqual([]);
    expect(site.log).toEqual([]);
  });

  it('an OUT in another crawl\'s state directory is refused before anything is fetched', async () => {
    const root = await dirs.make();
    for (const out of [path.join(root, 'site', '.prerender'), path.join(root, 'site', '.prerender', 'x')]) {
      const { code, stderr } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', out]);
      expect(code).toBe(2);
      expect(stderr).toContain(`refusing to use ${out} as the output directory: it is in a crawl's state directory (.prerender)`);
    }
    expect(await readdir(root)).toEqual([]);
    // Nor through a link.
    await mkdir(path.join(root, 'other', '.prerender'), { recursive: true });
    await symlink(path.join(root, 'other', '.prerender'), path.join(root, 'link'));
    const linked = await cli(['crawl', site.url('/infodir/about.asp'), '-o', path.join(root, 'link')]);
    expect(linked.code).toBe(2);
    expect(linked.stderr).toContain('it leads into a crawl\'s state directory');
    expect(await readdir(path.join(root, 'other', '.prerender'))).toEqual([]);
    expect(site.log).toEqual([]);
  });

  it('a manifest that is a link out of OUT is replaced, never written through', async () => {
    const root = await dirs.make();
    const victim = path.join(root, 'victim.txt');
    const out = path.join(root, 'out');
    await mkdir(out);
    await writeFile(victim, 'keep me');
    await symlink(victim, path.join(out, MANIFEST_NAME));
    const { code } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', out, '-q', '--retries', '0']);
    expect(code).toBe(0);
    expect(await readFile(victim, 'utf8')).toBe('keep me');
    expect((await readManifest(out)).pages.length).toBeGreaterThan(0);
  });
});

describe('an OUT that cannot be used', () => {
  it('-o under /proc fails at once with exit 2 and one clear line', async () => {
    const result = await runNode([BIN, 'crawl', site.url('/infodir/about.asp'), '-o', '/proc/nope/out'], { cwd: os.tmpdir(), limitMs: 60_000 });
    expect(result.timedOut).toBe(false);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^prerender: cannot create the output directory \/proc\/nope/);
    expect(result.stderr).not.toMatch(/looks like a bug/);
    expect(site.log).toEqual([]);
  });

  it.runIf(canMount)('a read-only OUT is named as such, exit 2, before any request', async () => {
    const disk = await smallDisk('64k', ['ro']);
    try {
      const { code, stderr, stdout } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', disk.dir, '--json']);
      expect(code).toBe(2);
      expect(stderr).toMatch(/read-only \(EROFS\)/);
      expect(stderr).not.toMatch(/looks like a bug/);
      expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'OUTPUT', cause: 'EROFS' } });
      expect(site.log).toEqual([]);
    } finally {
      disk.unmount();
    }
  });

  it.runIf(canMount)('a read-only OUT whose state directory can be written is found before any request, not at the commit', async () => {
    const disk = await smallDisk('256k');
    const stateDir = path.join(disk.dir, '.prerender');
    await mkdir(stateDir);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', stateDir]);
    try {
      execFileSync('mount', ['-o', 'remount,ro', disk.dir]);
      const { code, stderr } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', disk.dir]);
      expect(code).toBe(2);
      expect(stderr).toContain(`cannot write in ${disk.dir}`);
      expect(stderr).toMatch(/read-only \(EROFS\)/);
      expect(site.log).toEqual([]);
      expect(await readdir(stateDir)).toEqual([]);
    } finally {
      execFileSync('umount', ['-l', stateDir]);
      disk.unmount();
    }
  });
});

describe('a full disk', () => {
  it.runIf(canMount)('ends the run with exit 2, one line, a --json summary and no temp files (full while staging)', async () => {
    // 300 KB of pages do not fit in 96 KB.
    const disk = await smallDisk('96k');
    try {
      const out = path.join(disk.dir, 'out');
      const { code, stderr, stdout } = await cli(['crawl', site.url('/big/index.asp?n=20&kb=15'), '-o', out, '--json', '--retries', '0']);
      expect(code).toBe(2);
      expect(stderr).toMatch(/^prerender: cannot .*: the disk is full \(ENOSPC\)/);
      expect(stderr).not.toMatch(/\n\s+at /);
      expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'OUTPUT', cause: 'ENOSPC' } });
      expect(await listFilesIfAny(out)).toEqual([]);
    } finally {
      disk.unmount();
    }
  });

  it.runIf(canMount)('ends the run the same way when the disk fills while writing pages (staging fitted)', async () => {
    const disk = await smallDisk('480k');
    try {
      const out = path.join(disk.dir, 'out');
      const { code, stderr, stdout } = await cli(['crawl', site.url('/big/index.asp?n=20&kb=15'), '-o', out, '--json', '--retries', '0']);
      expect(code).toBe(2);
      expect(stderr).toMatch(/^prerender: cannot write .*: the disk is full \(ENOSPC\)/);
      expect(stderr).not.toMatch(/staging log/);
      expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'OUTPUT', cause: 'ENOSPC' }, stats: { fetched: 21 } });
      expect(await listFilesIfAny(out)).toEqual([]);
    } finally {
      disk.unmount();
    }
  });

  it('a target that reports a full disk ends the run instead of failing page after page', async () => {
    const target = memoryTarget({ failOn: (file) => file === 'b.html' });
    const failing = {
      ...target,
      /** @param {string} file @param {import('../../lib/output/target.js').OutputData} data */
      async write(file, data) {
        if (file === 'b.html') throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        return target.write(file, data);
      },
    };
    const loader = {
      /** @param {string} url */
      async load(url) {
        return { url, status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from('<a href="/a">a</a><a href="/b">b</a><a href="/c">c</a>') };
      },
      async close() {},
    };
    const error = await crawl({ roots: ['http://shop.test/'], loader, target: failing, out: await dirs.make() }).catch((e) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect(error.message).toMatch(/the disk is full \(ENOSPC\)/);
    expect(target.commits).toBe(0);
    expect(target.files.size).toBe(0);
  });
});
