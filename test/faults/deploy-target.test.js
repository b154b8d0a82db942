// @ts-check
import { spawnSync } from 'node:child_process';
import { lstat, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { deploy } from '../../lib/index.js';
import { LocalTarget } from '../../lib/deploy/local.js';
import { SshTarget } from '../../lib/deploy/ssh.js';
import { BIN, runCli, runNode } from '../helpers/cli.js';
import { writeTree } from '../helpers/deploy-tree.js';
import {
  IN_CI, RELAY, canMount, currentOf, dir, fill, later, noSshd, smallDisk, sshd, targetOf, useDeployFaults, waitFor,
} from '../helpers/deploy-faults.js';

/**
 * Deploy targets under faults: a full disk, a stalled proxy, a cut or lost
 * connection, locks of local and ssh runs on one web root. ssh cases run
 * against a real sshd on 127.0.0.1; disk cases on a small real tmpfs (root).
 */
useDeployFaults();

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
  });

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
  });

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
  });
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
  });
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
  });

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
  });

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
  });
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
  });

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
  });

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
  });

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
  });
});
