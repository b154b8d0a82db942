// @ts-check
import { execFileSync, spawnSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { deploy } from '../../lib/index.js';
import { listEntries, LocalTarget } from '../../lib/deploy/local.js';
import { checkHashes } from '../../lib/deploy/verify.js';
import { SshTarget } from '../../lib/deploy/ssh.js';
import { BIN, runCli, runNode } from '../helpers/cli.js';
import { generationIn, writeTree } from '../helpers/deploy-tree.js';
import { SSHD, startSshd } from '../helpers/sshd.js';

/**
 * Publish and deploy under faults on the target: links planted in the live
 * release, a full disk, a stalled proxy, a cut connection, locks of both
 * kinds. ssh cases run against a real sshd on 127.0.0.1 (skipped outside CI
 * when sshd is missing; in CI, CI=true, they must run).
 */

const IN_CI = process.env.CI === 'true';
const RELAY = fileURLToPath(new URL('../helpers/tcp-relay.js', import.meta.url));
const noSshd = !SSHD && !IN_CI;
if (noSshd) console.warn('ssh fault tests skipped: sshd is not installed (apt-get install openssh-server); in CI they run');

/** @type {Awaited<ReturnType<typeof startSshd>> | null} */
let sshd = null;
/** @type {string} */
let sshdDir;
beforeAll(async () => {
  if (noSshd) return;
  sshdDir = await mkdtemp(path.join(os.tmpdir(), 'prerender-fault-sshd-'));
  sshd = await startSshd(sshdDir);
}, 30_000);
afterAll(async () => {
  await sshd?.close();
  if (sshdDir) await rm(sshdDir, { recursive: true, force: true });
});

/** @type {string} */
let dir;
/** @type {(() => void)[]} run after each test, before its directory is removed */
let unmounts = [];
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-deploy-fault-'));
  unmounts = [];
});
afterEach(async () => {
  vi.restoreAllMocks();
  for (const unmount of unmounts) unmount();
  await rm(dir, { recursive: true, force: true });
});

/** Root can mount a small tmpfs (as in CI); elsewhere the disk-full cases are skipped. */
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
if (!canMount) console.warn('disk-full deploy tests skipped: mounting a tmpfs needs root; in CI they run');

/**
 * A small tmpfs at DIR/NAME, unmounted after the test.
 * @param {string} name
 * @param {string} options e.g. "size=2m"
 */
function smallDisk(name, options) {
  const at = path.join(dir, name);
  execFileSync('mkdir', ['-p', at]);
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', at]);
  unmounts.push(() => execFileSync('umount', ['-l', at]));
  return at;
}

/**
 * Write into `file` until the disk is full, to the last page.
 * @param {string} file
 */
async function fill(file) {
  const { open } = await import('node:fs/promises');
  const handle = await open(file, 'a');
  try {
    for (const size of [1 << 16, 4096, 512]) {
      for (let i = 0; i < 100_000; i++) {
        const written = await handle.write(Buffer.alloc(size, 120)).catch(() => null);
        if (!written) break;
      }
    }
  } finally {
    await handle.close().catch(() => {});
  }
}

let clock = 0;
/** A run time one second past the last one: each run a release id of its own. */
const later = () => new Date((clock = Math.max(clock + 1000, Date.now() + 1000)));

/**
 * A target of each kind: where its releases are, and the options a run needs.
 * @param {'local' | 'ssh'} kind
 */
function targetOf(kind) {
  const root = path.join(dir, 'www');
  if (kind === 'local') return { root, name: root, options: {} };
  const server = /** @type {NonNullable<typeof sshd>} */ (sshd);
  return { root, name: server.url(root), options: { sshKey: server.userKey, sshOption: server.sshOption } };
}

/**
 * Polls `probe` until it gives a value (bounded: 30 s of 20 ms polls).
 * @template T
 * @param {() => Promise<T | undefined>} probe
 * @returns {Promise<T>}
 */
async function waitFor(probe) {
  for (let i = 0; i < 1500; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('waited 30 s in vain');
}

/** @param {string} root */
const currentOf = async (root) => path.basename(await readlink(path.join(root, 'current')));

/**
 * Every file under a directory, with its bytes (links not followed).
 * @param {string} root
 * @returns {Promise<Record<string, string>>}
 */
async function snapshot(root) {
  /** @type {Record<string, string>} */
  const files = {};
  for (const name of await readdir(root, { recursive: true })) {
    const info = await lstat(path.join(root, name));
    if (info.isFile()) files[name] = await readFile(path.join(root, name), 'utf8');
    else if (info.isSymbolicLink()) files[name] = `-> ${await readlink(path.join(root, name))}`;
  }
  return files;
}

/**
 * What an intruder does to a release: its p/ replaced by a link to a
 * directory elsewhere, and leak.html, a link to a secret file.
 * @param {string} release
 */
async function plantLinks(release) {
  const outside = path.join(dir, 'outside');
  await mkdir(outside, { recursive: true });
  await writeFile(path.join(outside, 'page0.html'), 'not part of any release\n');
  await writeFile(path.join(outside, 'keep.txt'), 'keep me\n');
  await writeFile(path.join(dir, 'secret.txt'), 'secret\n');
  await rm(path.join(release, 'p'), { recursive: true });
  await symlink(outside, path.join(release, 'p'));
  await symlink(path.join(dir, 'secret.txt'), path.join(release, 'leak.html'));
  return { outside, before: await snapshot(outside) };
}

describe.each(/** @type {const} */ (['local', 'ssh']))('a link planted in the live release (%s)', (kind) => {
  const skip = kind === 'ssh' && noSshd;

  it.skipIf(skip)('is never written through: the next release is built from OUT alone, with DEPLOY_REBUILT', async () => {
    const out = path.join(dir, 'out');
    const target = targetOf(kind);
    await writeTree(out, { pages: 6 });
    const first = await deploy(out, [target.name], { ...target.options, now: later() });
    expect(first.ok).toBe(true);
    const { outside, before } = await plantLinks(path.join(target.root, 'releases', first.id));

    await writeTree(out, { pages: 6, generation: (i) => (i === 0 ? 2 : 1) });
    const second = await deploy(out, [target.name], { ...target.options, now: later() });
    // Nothing outside the target was removed or written.
    expect(await snapshot(outside)).toEqual(before);
    expect(await readFile(path.join(dir, 'secret.txt'), 'utf8')).toBe('secret\n');
    const result = second.targets[0];
    expect(result.error).toBeUndefined();
    expect(result.status).toBe('switched');
    expect(result.warnings).toEqual([{ code: 'DEPLOY_REBUILT', message: expect.stringMatching(new RegExp(`^releases/${first.id}: (p|leak\\.html) is a symbolic link.*built from OUT alone`)) }]);
    expect(result.sent.files).toBe(7); // every file, none linked from the planted release
    // The new release holds OUT's files only, as real files.
    const release = path.join(target.root, 'releases', second.id);
    expect((await readdir(release)).sort()).toEqual(['p', 'prerender-manifest.json']);
    expect((await lstat(path.join(release, 'p'))).isDirectory()).toBe(true);
    expect(generationIn(await readFile(path.join(release, 'p/page0.html'), 'utf8'))).toBe(2);
    expect(await currentOf(target.root)).toBe(second.id);
  }, 60_000);

  it.skipIf(skip)('a release whose files are not its record (one added, one gone, names with spaces and UTF-8) is rebuilt too', async () => {
    const out = path.join(dir, 'out');
    const target = targetOf(kind);
    await writeTree(out, { pages: 4 });
    const first = await deploy(out, [target.name], { ...target.options, now: later() });
    const release = path.join(target.root, 'releases', first.id);
    await writeFile(path.join(release, 'p', 'extra page é.html'), 'added by hand\n');
    const same = await deploy(out, [target.name], { ...target.options, dryRun: true });
    expect(same.targets[0].warnings.map((w) => w.code)).toEqual(['DEPLOY_REBUILT']);
    await rm(path.join(release, 'p', 'extra page é.html'));
    // Sound again: nothing to do.
    const clean = await deploy(out, [target.name], { ...target.options, now: later() });
    expect(clean.targets[0]).toMatchObject({ status: 'up-to-date', warnings: [] });
    await rm(path.join(release, 'p', 'page1.html'));
    const healed = await deploy(out, [target.name], { ...target.options, now: later() });
    expect(healed.targets[0]).toMatchObject({ status: 'switched', sent: { files: 5 }, warnings: [{ code: 'DEPLOY_REBUILT' }] });
    expect(healed.targets[0].warnings[0].message).toMatch(/its record|missing/);
    expect(await readdir(path.join(target.root, 'current', 'p'))).toContain('page1.html');
  }, 120_000);

  it.skipIf(skip)('planted after the check, during the deploy: refused (DEPLOY_UNSAFE_TARGET), nothing written through it', async () => {
    const out = path.join(dir, 'out');
    const target = targetOf(kind);
    await writeTree(out, { pages: 6 });
    const first = await deploy(out, [target.name], { ...target.options, now: later() });
    expect(first.ok).toBe(true);
    /** @type {Awaited<ReturnType<typeof plantLinks>> | null} */
    let planted = null;
    // The links appear right after the target's state was read (and found sound).
    const Target = kind === 'local' ? LocalTarget : SshTarget;
    const state = Target.prototype.state;
    vi.spyOn(Target.prototype, 'state').mockImplementation(async function (/** @type {boolean | undefined} */ withFiles) {
      const answer = await state.call(this, withFiles);
      planted ??= await plantLinks(path.join(target.root, 'releases', first.id));
      return answer;
    });
    await writeTree(out, { pages: 6, generation: (i) => (i === 0 ? 2 : 1) });
    const second = await deploy(out, [target.name], { ...target.options, now: later() });
    vi.restoreAllMocks();
    expect(planted).not.toBeNull();
    const { outside, before } = /** @type {NonNullable<typeof planted>} */ (planted);
    expect(await snapshot(outside)).toEqual(before);
    expect(second.targets[0].status).toBe('failed');
    expect(second.targets[0].error?.code).toBe('DEPLOY_UNSAFE_TARGET');
    expect(await currentOf(target.root)).toBe(first.id);

    // The next run finds the links with its check, and rebuilds.
    const third = await deploy(out, [target.name], { ...target.options, now: later() });
    expect(third.targets[0].status).toBe('switched');
    expect(third.targets[0].warnings.map((w) => w.code)).toEqual(['DEPLOY_REBUILT']);
    expect(await snapshot(outside)).toEqual(before);
  }, 60_000);
});

describe.skipIf(noSshd)('deploy --verify all over ssh', () => {
  it('lists the links and special files of the new release (planted while it is built); nothing is switched', async () => {
    const out = path.join(dir, 'out');
    const target = targetOf('ssh');
    const server = /** @type {NonNullable<typeof sshd>} */ (sshd);
    await writeTree(out, { pages: 4 });
    const first = await deploy(out, [target.name], { ...target.options, now: later() });
    expect(first.ok).toBe(true);
    await writeTree(out, { pages: 40, size: 20_000, generation: 2 });
    // The files stop 200 kB into the stream until the test has planted its entries.
    const go = path.join(dir, 'go');
    const proxy = `ProxyCommand=${process.execPath} ${RELAY} ${server.port} hold=200000:${go}`;
    const running = deploy(out, [target.name], { sshKey: server.userKey, sshOption: [...server.sshOption, proxy], verify: 'all', now: later() });
    const releases = path.join(target.root, 'releases');
    // Its record is written once the copy of the current release was checked for links.
    const record = await waitFor(async () => (await readdir(releases)).find((name) => /^\.tmp-.*\.json$/.test(name)));
    const tmp = path.join(releases, record.slice(0, -5));
    await symlink('/etc/passwd', path.join(tmp, 'leak.html'));
    await symlink('/etc', path.join(tmp, 'etcdir'));
    execFileSync('mkfifo', [path.join(tmp, 'p', 'fifo')]);
    await writeFile(go, '');
    const second = await running;
    const result = second.targets[0];
    expect(result.verify?.failures).toEqual([
      { file: 'etcdir', reason: 'a symbolic link on the target, never part of a release' },
      { file: 'leak.html', reason: 'a symbolic link on the target, never part of a release' },
      { file: 'p/fifo', reason: 'not a regular file on the target (fifo, socket, device)' },
    ]);
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('DEPLOY_VERIFY');
    expect(await currentOf(target.root)).toBe(first.id);
    expect((await readdir(releases)).filter((name) => name.includes(second.id))).toEqual([]);
  }, 60_000);
});

describe('deploy --verify all on a local target', () => {
  it('lists links (never followed) and special files as the ssh side does', async () => {
    const release = path.join(dir, 'release');
    await mkdir(path.join(release, 'p'), { recursive: true });
    await writeFile(path.join(release, 'p', 'a.html'), 'a');
    await symlink('/etc', path.join(release, 'etcdir'));
    await symlink('/etc/passwd', path.join(release, 'leak.html'));
    execFileSync('mkfifo', [path.join(release, 'p', 'fifo')]);
    const entries = await listEntries(release);
    expect(entries).toEqual({ files: ['p/a.html'], links: expect.arrayContaining(['etcdir', 'leak.html']), others: ['p/fifo'] });
    const files = new Map([['p/a.html', { sha256: 'x', bytes: 1, mtimeMs: 0 }]]);
    expect(checkHashes(['p/a.html'], files, new Map([['p/a.html', 'x']]), true, entries)).toEqual([
      { file: 'etcdir', reason: 'a symbolic link on the target, never part of a release' },
      { file: 'leak.html', reason: 'a symbolic link on the target, never part of a release' },
      { file: 'p/fifo', reason: 'not a regular file on the target (fifo, socket, device)' },
    ]);
  });
});

describe.skipIf(!canMount && !IN_CI)('a full disk on a local target (real tmpfs)', () => {
  it('runs for real in CI', () => {
    expect(canMount).toBe(true);
  });

  it('a publish that fills the disk leaves nothing behind, says so in one line; the next one fits', async () => {
    const out = path.join(dir, 'out');
    const www = smallDisk('www', 'size=2m');
    await writeTree(out, { pages: 10, size: 20_000 });
    const first = await deploy(out, [www], { now: later() });
    expect(first.ok).toBe(true);
    await writeTree(out, { pages: 30, size: 100_000, generation: 2 });
    const full = await deploy(out, [www], { now: later() });
    const result = full.targets[0];
    expect(result.status).toBe('failed');
    expect(result.error).toEqual({ code: 'DEPLOY_DISK_FULL', message: `the disk is full (ENOSPC) while building releases/${full.id}, which was removed (current is untouched): free space on it, then run again` });
    expect((await readdir(path.join(www, 'releases'))).sort()).toEqual([first.id, `${first.id}.json`]);
    expect(await readdir(www)).not.toContain('.prerender-lock');
    expect(await currentOf(www)).toBe(first.id);
    await rm(out, { recursive: true });
    await writeTree(out, { pages: 10, size: 20_000, generation: 3 });
    const next = await deploy(out, [www], { now: later() });
    expect(next.targets[0].status).toBe('switched');
  }, 60_000);

  it('a killed run\'s release filling the disk: the next publish removes it under the lock, and goes on', async () => {
    const out = path.join(dir, 'out');
    const www = smallDisk('www', 'size=2m');
    await writeTree(out, { pages: 10, size: 20_000 });
    const first = await deploy(out, [www], { now: later() });
    expect(first.ok).toBe(true);
    const leftover = path.join(www, 'releases', '.tmp-20000101T000000Z-deadbeef');
    await mkdir(leftover);
    await fill(path.join(leftover, 'half-written.html'));
    await writeTree(out, { pages: 10, size: 20_000, generation: 2 });
    const next = await deploy(out, [www], { now: later() });
    expect(next.targets[0].error).toBeUndefined();
    expect(next.targets[0].status).toBe('switched');
    expect((await readdir(path.join(www, 'releases'))).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
  }, 60_000);

  it('still stuck: the lock cannot be made, and the message names the directory to delete; nothing is left', async () => {
    const out = path.join(dir, 'out');
    const www = smallDisk('www', 'size=2m,nr_inodes=64');
    await writeTree(out, { pages: 4 });
    const first = await deploy(out, [www], { now: later() });
    expect(first.ok).toBe(true);
    // No inode left: a killed run's release holds them all.
    const leftover = path.join(www, 'releases', '.tmp-20000101T000000Z-deadbeef');
    await mkdir(leftover);
    for (let i = 0; i < 100; i++) {
      if (await writeFile(path.join(leftover, `f${i}`), '').then(() => false, () => true)) break;
    }
    await writeTree(out, { pages: 4, generation: 2 });
    const stuck = await deploy(out, [www], { now: later() });
    expect(stuck.targets[0].error).toEqual({ code: 'DEPLOY_DISK_FULL', message: `the disk is full (ENOSPC), so the lock ${www}/.prerender-lock cannot be made: delete ${leftover} (left by a failed run), or free space on it, then run again` });
    await rm(leftover, { recursive: true });

    // Full of something else: the lock is made, the owner line cannot be written; nothing stays.
    await fill(path.join(www, 'filler'));
    const still = await deploy(out, [www], { now: later() });
    expect(still.targets[0].error).toEqual({ code: 'DEPLOY_DISK_FULL', message: 'the disk is full (ENOSPC), even with what failed runs left removed: free space on it, then run again' });
    expect(await readdir(www)).not.toContain('.prerender-lock');
    await rm(path.join(www, 'filler'));
    expect((await deploy(out, [www], { now: later() })).targets[0].status).toBe('switched');
  }, 60_000);
});

describe.skipIf(noSshd)('a ProxyCommand that stalls', () => {
  it('the deploy fails and exits, while the stalled proxy still holds the master\'s stderr', async () => {
    const out = path.join(dir, 'out');
    const target = targetOf('ssh');
    const server = /** @type {NonNullable<typeof sshd>} */ (sshd);
    await writeTree(out, { pages: 40, size: 20_000 });
    const pidFile = path.join(dir, 'relay.pid');
    /** @type {number | null} */
    let relay = null;
    try {
      const run = await runNode([BIN, 'deploy', out, target.name, '--ssh-key', server.userKey, '--ssh-option', ...server.sshOption,
        `ProxyCommand=${process.execPath} ${RELAY} ${server.port} stall=200000:${pidFile}`, 'ServerAliveInterval=1', 'ServerAliveCountMax=2'], { cwd: dir, limitMs: 45_000 });
      relay = Number(await readFile(pidFile, 'utf8'));
      expect(run.timedOut).toBe(false);
      expect(run.code).toBe(1);
      // The proxy is stalled, not gone: the deploy did not wait for it.
      expect(() => process.kill(/** @type {number} */ (relay), 0)).not.toThrow();
      await expect(lstat(path.join(target.root, 'current'))).rejects.toThrow();
    } finally {
      relay ??= Number(await readFile(pidFile, 'utf8').catch(() => '0'));
      if (relay) process.kill(relay, 'SIGKILL');
    }
  }, 60_000);
});

describe.skipIf(noSshd)('ssh deploy errors: one line that says what happened', () => {
  /** @param {string} text */
  const linesOf = (text) => text.split('\n').filter(Boolean);

  it.skipIf(!canMount && !IN_CI)('the target\'s disk is full: one line, the label once, on stdout and stderr; --verbose adds a few', async () => {
    const out = path.join(dir, 'out');
    const server = /** @type {NonNullable<typeof sshd>} */ (sshd);
    const remote = smallDisk('www', 'size=200k');
    await writeTree(out, { pages: 20, size: 20_000 });
    const args = ['deploy', out, server.url(remote), '--ssh-key', server.userKey, '--ssh-option', ...server.sshOption];
    const run = await runCli(args, { cwd: dir });
    expect(run.code).toBe(1);
    const said = `${server.url(remote)}: the target's disk is full while sending and checking the release: free space on it, then run again`;
    expect(linesOf(run.stderr)).toEqual([`prerender: ${said}`]);
    expect(linesOf(run.stdout).filter((line) => line.startsWith(server.url(remote) + ':'))).toEqual([said]);
    expect(run.stdout).not.toMatch(/tar:/);
    const verbose = await runCli([...args, '--verbose', '--json'], { cwd: dir });
    const detail = linesOf(verbose.stderr).slice(1);
    expect(detail.length).toBeGreaterThan(0);
    expect(detail.length).toBeLessThanOrEqual(6);
    expect(detail.join('\n')).toMatch(/No space left on device/);
    expect(JSON.parse(verbose.stdout).targets[0].error).toMatchObject({ code: 'DEPLOY_DISK_FULL', detail: expect.stringMatching(/No space left/) });
  }, 60_000);

  it('a cut link: "the connection was lost", the label once', async () => {
    const out = path.join(dir, 'out');
    const server = /** @type {NonNullable<typeof sshd>} */ (sshd);
    const target = targetOf('ssh');
    await writeTree(out, { pages: 40, size: 20_000 });
    const run = await runCli(['deploy', out, target.name, '--json', '--ssh-key', server.userKey, '--ssh-option', ...server.sshOption,
      `ProxyCommand=${process.execPath} ${RELAY} ${server.port} cut=200000`], { cwd: dir });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).targets[0].error).toMatchObject({ code: 'DEPLOY_CONNECTION_LOST', message: 'the connection was lost while sending and checking the release' });
    expect(linesOf(run.stderr)).toEqual([`prerender: ${target.name}: the connection was lost while sending and checking the release`]);
  }, 60_000);

  it('the ssh master killed mid-transfer: "the connection was lost"; no command runs after it', async () => {
    const out = path.join(dir, 'out');
    const server = /** @type {NonNullable<typeof sshd>} */ (sshd);
    const target = targetOf('ssh');
    await writeTree(out, { pages: 40, size: 20_000 });
    /** @type {SshTarget[]} */
    const seen = [];
    const stage = SshTarget.prototype.stage;
    vi.spyOn(SshTarget.prototype, 'stage').mockImplementation(function (/** @type {any} */ plan) {
      seen.push(this);
      return stage.call(this, plan);
    });
    const go = path.join(dir, 'go');
    const proxy = `ProxyCommand=${process.execPath} ${RELAY} ${server.port} hold=200000:${go}`;
    const running = deploy(out, [target.name], { sshKey: server.userKey, sshOption: [...server.sshOption, proxy], now: later() });
    await waitFor(async () => (await readdir(path.join(target.root, 'releases')).catch(() => [])).find((name) => /^\.tmp-.*\.json$/.test(name)));
    seen[0].master?.kill('SIGKILL');
    await writeFile(go, '');
    const result = await running;
    expect(result.targets[0].error).toMatchObject({ code: 'DEPLOY_CONNECTION_LOST', message: 'the connection was lost while sending and checking the release' });
    await expect(lstat(path.join(target.root, 'current'))).rejects.toThrow();
    // Its lock was removed through a new connection: another machine's run is not held off.
    await expect(lstat(path.join(target.root, '.prerender-lock'))).rejects.toThrow();
  }, 60_000);
});

describe.skipIf(noSshd)('one lock for local and ssh runs on one web root', () => {
  /** A pid of this host that has just exited: the owner of a lock left by a killed run. */
  const deadPid = () => /** @type {number} */ (spawnSync(process.execPath, ['-e', '']).pid);
  const setup = async () => {
    const out = path.join(dir, 'out');
    const target = targetOf('ssh');
    const server = /** @type {NonNullable<typeof sshd>} */ (sshd);
    await writeTree(out, { pages: 3 });
    const first = await deploy(out, [target.name], { ...target.options, now: later() });
    expect(first.ok).toBe(true);
    await writeTree(out, { pages: 3, generation: 2 });
    const sshArgs = ['--ssh-key', server.userKey, '--ssh-option', ...server.sshOption];
    const lock = path.join(target.root, '.prerender-lock');
    return { out, target, server, sshArgs, lock };
  };

  it('an ssh deploy\'s lock stops a local publish and rollback, naming it; once its owner is gone, a local publish takes it over', async () => {
    const { out, target, server, lock } = await setup();
    const ssh = new SshTarget({ user: server.user, host: '127.0.0.1', port: server.port, path: target.root }, target.options);
    try {
      await ssh.lock();
      const holds = `another prerender publish, deploy or rollback (pid ${process.pid} on ${os.hostname()}`;
      const publish = await runCli(['publish', out, '--to', target.root], { cwd: dir });
      expect(publish.stderr).toContain(holds);
      expect(publish.code).toBe(2);
      const rollback = await runCli(['rollback', '--to', target.root], { cwd: dir });
      expect(rollback.stderr).toContain(holds);
      expect(rollback.code).toBe(2);
    } finally {
      await ssh.close(); // its lock stays, as after a killed deploy
    }
    await writeFile(path.join(lock, 'owner'), JSON.stringify({ pid: deadPid(), host: os.hostname(), startedAt: new Date().toISOString() }) + '\n');
    const publish = await runCli(['publish', out, '--to', target.root], { cwd: dir });
    expect(publish.stderr).toBe('');
    expect(publish.code).toBe(0);
    await expect(lstat(lock)).rejects.toThrow();
  }, 60_000);

  it('a local publish\'s lock stops an ssh deploy; one a dead local run left (a file, as earlier versions made) is taken over', async () => {
    const { out, target, sshArgs, lock } = await setup();
    const local = new LocalTarget(target.root);
    await local.lock();
    try {
      const held = await runCli(['deploy', out, target.name, ...sshArgs], { cwd: dir });
      expect(held.stderr).toContain(`another prerender publish, deploy or rollback (pid ${process.pid} on ${os.hostname()}`);
      expect(held.code).toBe(2);
    } finally {
      await local.unlock();
    }
    await writeFile(lock, JSON.stringify({ pid: deadPid(), host: os.hostname(), startedAt: new Date().toISOString() }));
    const deployed = await runCli(['deploy', out, target.name, ...sshArgs], { cwd: dir });
    expect(deployed.stderr).toBe('');
    expect(deployed.code).toBe(0);
    await expect(lstat(lock)).rejects.toThrow();
  }, 60_000);

  it.skipIf(!canMount && !IN_CI)('ssh on a disk a killed run filled: its leftovers are removed under the lock, whose owner is then written', async () => {
    const out = path.join(dir, 'out');
    const server = /** @type {NonNullable<typeof sshd>} */ (sshd);
    const remote = smallDisk('www', 'size=2m');
    const options = { sshKey: server.userKey, sshOption: server.sshOption };
    await writeTree(out, { pages: 3 });
    expect((await deploy(out, [server.url(remote)], { ...options, now: later() })).ok).toBe(true);
    const leftover = path.join(remote, 'releases', '.tmp-20000101T000000Z-deadbeef');
    await mkdir(leftover);
    await fill(path.join(leftover, 'half-written.html'));
    await writeTree(out, { pages: 3, generation: 2 });
    const next = await deploy(out, [server.url(remote)], { ...options, now: later() });
    expect(next.targets[0].error).toBeUndefined();
    expect(next.targets[0].status).toBe('switched');
    // The lock had its owner: the switch removed it.
    await expect(lstat(path.join(remote, '.prerender-lock'))).rejects.toThrow();
  }, 60_000);

  it('a lock without an owner is held on both sides, with how to remove it', async () => {
    const { out, target, sshArgs, lock } = await setup();
    await mkdir(lock);
    const publish = await runCli(['publish', out, '--to', target.root], { cwd: dir });
    expect(publish.code).toBe(2);
    expect(publish.stderr).toContain(`(a run that is starting, or one killed before it wrote its owner) holds ${target.root}`);
    expect(publish.stderr).toContain(`(if it is gone, remove ${lock})`);
    const deployed = await runCli(['deploy', out, target.name, ...sshArgs], { cwd: dir });
    expect(deployed.code).toBe(2);
    expect(deployed.stderr).toMatch(/\(a run that is starting, or one killed before it wrote its owner\) holds ssh:.* If it is gone for good, remove the lock: ssh -p \d+ \S+ rm -r \S+\.prerender-lock/);
  }, 60_000);
});
