// @ts-check
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { deploy } from '../../lib/index.js';
import { listEntries, LocalTarget } from '../../lib/deploy/local.js';
import { checkHashes } from '../../lib/deploy/verify.js';
import { SshTarget } from '../../lib/deploy/ssh.js';
import { generationIn, writeTree } from '../helpers/deploy-tree.js';
import {
  RELAY, currentOf, dir, later, noSshd, plantLinks, snapshot, sshd, targetOf, useDeployFaults, waitFor,
} from '../helpers/deploy-faults.js';

/**
 * A deploy's releases under faults on the target: links planted in the live
 * release (local and ssh), links and special files in a new one (--verify
 * all). ssh cases run against a real sshd on 127.0.0.1.
 */
useDeployFaults();

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
  });

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
  });

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
  });
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
  });
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
