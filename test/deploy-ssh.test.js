// @ts-check
import { spawn } from 'node:child_process';
import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, readlink, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../lib/index.js';
import { BIN, runCli } from './helpers/cli.js';
import { writeTree } from './helpers/deploy-tree.js';
import { SSHD, startSshd } from './helpers/sshd.js';

/**
 * ssh targets against a real sshd on 127.0.0.1, started here with a
 * throwaway host key and user key (the server side runs sh, cp, tar and
 * sha256sum). Outside CI they are skipped when sshd is missing; in CI
 * (CI=true) a missing one fails.
 */

const IN_CI = process.env.CI === 'true';
const skip = !SSHD && !IN_CI;
if (skip) console.warn('ssh deploy tests skipped: sshd is not installed (apt-get install openssh-server); in CI they run');
const RELAY = fileURLToPath(new URL('./helpers/tcp-relay.js', import.meta.url));

describe.skipIf(skip)('deploy over ssh (real sshd)', () => {
  /** @type {string} */
  let dir;
  /** @type {Awaited<ReturnType<typeof startSshd>>} */
  let sshd;
  let n = 0;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-ssh-test-'));
    sshd = await startSshd(path.join(dir, 'sshd'));
  });
  afterAll(async () => {
    await sshd?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  /** A fresh OUT and remote directory per test. */
  const fresh = () => {
    n++;
    return { out: path.join(dir, `out${n}`), remote: path.join(dir, `remote${n}`) };
  };
  const options = () => ({ sshKey: sshd.userKey, sshOption: sshd.sshOption });
  /** @param {string} remote */
  const currentOf = async (remote) => path.basename(await readlink(path.join(remote, 'current')));

  it('deploys a release, then only what changed, with unchanged files hard-linked; known-hosts checking stays on', async () => {
    const { out, remote } = fresh();
    await writeTree(out, { pages: 20, gzip: true, size: 4000 });
    const first = await deploy(out, [sshd.url(remote)], options());
    expect(first.targets[0].error).toBeUndefined();
    expect(first.targets[0]).toMatchObject({ status: 'switched', kind: 'ssh', verify: { ok: true } });
    expect(first.targets[0].churn?.new.files).toBe(41);
    expect(await currentOf(remote)).toBe(first.id);
    expect(await readFile(path.join(remote, 'current/p/page3.html'), 'utf8')).toBe(await readFile(path.join(out, 'p/page3.html'), 'utf8'));
    await expect(lstat(path.join(remote, 'current/.prerender'))).rejects.toThrow();

    await writeTree(out, { pages: 20, gzip: true, size: 4000, generation: (i) => (i < 2 ? 2 : 1) });
    // Files whose bytes did not change keep their times, as crawl leaves them.
    const firstRelease = path.join(remote, 'releases', first.id);
    for (let i = 2; i < 20; i++) {
      for (const file of [`p/page${i}.html`, `p/page${i}.html.gz`]) {
        const { mtime } = await stat(path.join(firstRelease, file));
        await utimes(path.join(out, file), mtime, mtime);
      }
    }
    const second = await deploy(out, [sshd.url(remote)], { ...options(), now: new Date(Date.now() + 1000) });
    const target = second.targets[0];
    expect(target.status).toBe('switched');
    expect(target.churn).toMatchObject({ changed: { files: 5 }, unchanged: { files: 36 }, new: { files: 0 }, removed: { files: 0 } });
    expect(target.sent.files).toBe(5);
    const a = await stat(path.join(firstRelease, 'p/page9.html'));
    const b = await stat(path.join(remote, 'releases', second.id, 'p/page9.html'));
    expect(b.ino).toBe(a.ino);
    expect(await currentOf(remote)).toBe(second.id);

    // Without our known_hosts the host is unknown: refused, nothing switched.
    const refused = await deploy(out, [sshd.url(remote)], { sshKey: sshd.userKey, sshOption: ['UserKnownHostsFile=/dev/null', 'GlobalKnownHostsFile=/dev/null'] });
    expect(refused.ok).toBe(false);
    expect(refused.targets[0].error?.message).toMatch(/Host key verification failed|cannot connect/);
    expect(await currentOf(remote)).toBe(second.id);
  });

  it('--dry-run prints what would be sent, removed and switched, and sends nothing', async () => {
    const { out, remote } = fresh();
    await writeTree(out, { pages: 4 });
    const cli = await runCli(['deploy', out, sshd.url(remote), '--dry-run', '--ssh-key', sshd.userKey, '--ssh-option', ...sshd.sshOption], { cwd: dir });
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/would send 5 files/);
    expect(cli.stdout).toMatch(/p\/page2\.html/);
    expect(cli.stdout).toMatch(/would switch current from \(none\)/);
    expect(cli.stdout).toMatch(/Nothing was sent, removed or switched/);
    await expect(stat(remote)).rejects.toThrow(); // not even created
  });

  it('--verify all catches a file of the previous release tampered on the server, and keeps current', async () => {
    const { out, remote } = fresh();
    await writeTree(out, { pages: 6, size: 2000 });
    const first = await deploy(out, [sshd.url(remote)], options());
    expect(first.ok).toBe(true);
    // On the server, a file of the current release is altered, same size and time.
    const victim = path.join(remote, 'releases', first.id, 'p/page4.html');
    const before = await stat(victim);
    const text = await readFile(victim, 'utf8');
    await writeFile(victim, text.replace('next', 'NEXT'));
    await utimes(victim, before.atime, before.mtime);
    await writeTree(out, { pages: 6, size: 2000, generation: (i) => (i === 0 ? 2 : 1) });
    for (let i = 1; i < 6; i++) {
      const { mtime } = await stat(path.join(remote, 'releases', first.id, `p/page${i}.html`));
      await utimes(path.join(out, `p/page${i}.html`), mtime, mtime);
    }
    // By default only the files sent are hashed again: page4 is a link to the
    // tampered inode and goes unseen (the dry run shows it is not sent).
    const plan = await deploy(out, [sshd.url(remote)], { ...options(), dryRun: true });
    expect(plan.targets[0].plan?.send).toEqual(['p/page0.html', 'prerender-manifest.json']);
    const second = await deploy(out, [sshd.url(remote)], { ...options(), verify: 'all', now: new Date(Date.now() + 1000) });
    expect(second.ok).toBe(false);
    expect(second.targets[0].status).toBe('failed');
    expect(second.targets[0].verify?.failures.map((f) => f.file)).toEqual(['p/page4.html']);
    expect(second.targets[0].error?.code).toBe('DEPLOY_VERIFY');
    expect(await currentOf(remote)).toBe(first.id);
    expect((await readdir(path.join(remote, 'releases'))).filter((name) => name.includes(second.id))).toEqual([]);
  });

  it('two targets, one cut off mid-transfer: neither switches; the summary says so; exit 1', async () => {
    const { out, remote } = fresh();
    const remote2 = remote + '-b';
    await writeTree(out, { pages: 150, size: 40_000 });
    const configDir = path.join(dir, `cfg${n}`);
    await import('node:fs/promises').then((fs) => fs.mkdir(configDir));
    await writeFile(path.join(configDir, 'prerender.config.json'), JSON.stringify({
      sshKey: sshd.userKey,
      sshOption: sshd.sshOption,
      targets: {
        good: sshd.url(remote),
        flaky: { url: sshd.url(remote2), sshOption: [`ProxyCommand=${process.execPath} ${RELAY} ${sshd.port} cut=1500000`] },
      },
    }));
    const cli = await runCli(['deploy', out, 'good', 'flaky', '--json'], { cwd: configDir });
    expect(cli.code).toBe(1);
    const result = JSON.parse(cli.stdout);
    const good = result.targets.find((/** @type {any} */ t) => t.target.startsWith('good'));
    const flaky = result.targets.find((/** @type {any} */ t) => t.target.startsWith('flaky'));
    expect(flaky.status).toBe('failed');
    expect(flaky.error.code).toBe('DEPLOY_CONNECTION_LOST');
    expect(good.status).toBe('ready'); // has the release, verified, not switched
    await expect(lstat(path.join(remote, 'current'))).rejects.toThrow();
    await expect(lstat(path.join(remote2, 'current'))).rejects.toThrow();
    // The flaky target got part of the files, never a release.
    expect((await readdir(path.join(remote2, 'releases'))).some((name) => name.startsWith('.tmp-'))).toBe(true);

    // --switch each: the good one switches; the flaky one still does not.
    const each = await runCli(['deploy', out, 'good', 'flaky', '--switch', 'each'], { cwd: configDir });
    expect(each.code).toBe(1);
    expect(each.stdout).toMatch(/Switched: good .*; current untouched on: flaky .*\(failed\)/);
    expect(await currentOf(remote)).toMatch(/^\d{8}T\d{6}Z-/);
    await expect(lstat(path.join(remote2, 'current'))).rejects.toThrow();
  });

  it('SIGKILL during a deploy leaves current as it was; the next run cleans up and deploys', async () => {
    const { out, remote } = fresh();
    await writeTree(out, { pages: 3 });
    const first = await deploy(out, [sshd.url(remote)], options());
    expect(first.ok).toBe(true);
    await writeTree(out, { pages: 120, size: 30_000, generation: 2 });
    // A slow link (about 1 MB/s) so that the kill lands in the middle of the transfer.
    const child = spawn(process.execPath, [BIN, 'deploy', out, sshd.url(remote), '--ssh-key', sshd.userKey, '--ssh-option', ...sshd.sshOption,
      `ProxyCommand=${process.execPath} ${RELAY} ${sshd.port} rate=1000000`], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Wait (bounded) until the release being built holds some files.
    let seen = false;
    for (let i = 0; i < 4000 && !seen; i++) {
      const names = await readdir(path.join(remote, 'releases')).catch(() => []);
      const tmp = names.find((name) => name.startsWith('.tmp-') && !name.endsWith('.json'));
      if (tmp) seen = (await readdir(path.join(remote, 'releases', tmp, 'p')).catch(() => [])).length > 3;
      if (!seen) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(seen).toBe(true);
    child.kill('SIGKILL');
    await exited;
    expect(await currentOf(remote)).toBe(first.id);
    // Its lock stays, naming a process of this host that is gone: the next run takes it over.
    expect(JSON.parse(await readFile(path.join(remote, '.prerender-lock/owner'), 'utf8')).pid).toBe(child.pid);

    const again = await deploy(out, [sshd.url(remote)], { ...options(), now: new Date(Date.now() + 1000) });
    expect(again.targets[0].error).toBeUndefined();
    expect(again.targets[0].status).toBe('switched');
    expect(await currentOf(remote)).toBe(again.id);
    expect((await readdir(path.join(remote, 'releases'))).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
    await expect(lstat(path.join(remote, '.prerender-lock'))).rejects.toThrow();
    const ssh = ['--ssh-key', sshd.userKey, '--ssh-option', ...sshd.sshOption];
    const list = await runCli(['releases', '--to', sshd.url(remote), '--json', ...ssh], { cwd: dir });
    expect(list.stderr).toBe('');
    const listed = JSON.parse(list.stdout);
    expect(listed.releases.map((/** @type {any} */ r) => [r.id, r.current, r.pages])).toEqual([[first.id, false, 3], [again.id, true, 120]]);
    const back = await runCli(['rollback', '--to', sshd.url(remote), ...ssh], { cwd: dir });
    expect(back.code).toBe(0);
    expect(await currentOf(remote)).toBe(first.id);
    const forth = await runCli(['rollback', '--to', sshd.url(remote), '--release', again.id, ...ssh], { cwd: dir });
    expect(forth.code).toBe(0);
    expect(await currentOf(remote)).toBe(again.id);
  });

  it('a file altered on its way is caught by the sha256 check of the files sent, and the release dropped', async () => {
    const { out, remote } = fresh();
    await writeTree(out, { pages: 5, size: 2000 });
    const first = await deploy(out, [sshd.url(remote)], options());
    expect(first.ok).toBe(true);
    await writeTree(out, { pages: 5, size: 2000, generation: (i) => (i === 0 ? 2 : 1) });
    // An ssh that alters the stream of files (same length: tar cannot tell) on the way to the server.
    const wrapper = path.join(dir, `ssh-alter${n}`);
    await writeFile(wrapper, `#!/bin/sh\ncase "$*" in\n  *"tar -x"*) ${process.execPath} -e 'let d=[];process.stdin.on("data",c=>d.push(c)).on("end",()=>process.stdout.write(Buffer.concat(d).toString("latin1").replace("content=\\"2\\"","content=\\"9\\""),"latin1"))' | ssh "$@"; exit $? ;;\nesac\nexec ssh "$@"\n`);
    await chmod(wrapper, 0o755);
    const second = await deploy(out, [sshd.url(remote)], { ...options(), ssh: wrapper, now: new Date(Date.now() + 1000) });
    expect(second.ok).toBe(false);
    expect(second.targets[0].error?.code).toBe('DEPLOY_VERIFY');
    expect(second.targets[0].verify?.failures).toEqual([{ file: 'p/page0.html', reason: 'sha256 differs on the target after transfer' }]);
    expect(await currentOf(remote)).toBe(first.id);
    expect((await readdir(path.join(remote, 'releases'))).sort()).toEqual([first.id, `${first.id}.json`]);
    await expect(lstat(path.join(remote, '.prerender-lock'))).rejects.toThrow();
    // The same deploy through a plain ssh goes through.
    const third = await deploy(out, [sshd.url(remote)], { ...options(), now: new Date(Date.now() + 2000) });
    expect(third.ok).toBe(true);
  });

  it('a server that runs its own command for the connection (ForceCommand) says nothing: the deploy connects all the same', async () => {
    const { out, remote } = fresh();
    await writeTree(out, { pages: 3 });
    // An ssh that gives the master's session a silent command, as a server's ForceCommand would, and logs each `-O check`.
    const wrapper = path.join(dir, `ssh-silent${n}`);
    const checks = path.join(dir, `ssh-checks${n}`);
    await writeFile(wrapper, `#!/bin/sh
case " $* " in *" -O check "*) echo check >> "${checks}" ;; esac
n=$#; i=0
for a do
  i=$((i + 1)); [ $i -eq 1 ] && set --
  if [ $i -eq $n ]; then case "$a" in *prerender-ssh-ready*) a='cat >/dev/null' ;; esac; fi
  set -- "$@" "$a"
done
exec ssh "$@"
`);
    await chmod(wrapper, 0o755);
    const result = await deploy(out, [sshd.url(remote)], { ...options(), ssh: wrapper });
    expect(result.targets[0].error).toBeUndefined();
    expect(result.ok).toBe(true);
    expect(await currentOf(remote)).toBe(result.id);
    expect((await readFile(checks, 'utf8')).split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(1);
  });

  it('several targets: the files to send are read once (one tar for the targets that lack the same files)', async () => {
    const { out, remote } = fresh();
    const urls = [remote, remote + '-b', remote + '-c'].map((r) => sshd.url(r));
    await writeTree(out, { pages: 8, size: 3000 });
    // A tar that logs each run and the files it was asked to read.
    const log = path.join(dir, `tar-log${n}`);
    const tar = path.join(dir, `tar-log${n}.sh`);
    await writeFile(tar, `#!/bin/sh\n{ echo RUN; cat; } > "${log}.list.$$"\ncat "${log}.list.$$" >> "${log}"\nsed 1d "${log}.list.$$" | exec tar "$@"\n`);
    await chmod(tar, 0o755);
    /** What each tar run read: the file lists. */
    const runs = async () => (await readFile(log, 'utf8')).split('RUN\n').slice(1).map((list) => list.split('\0').filter(Boolean).sort());
    const first = await deploy(out, [urls[0]], { ...options(), tar });
    expect(first.ok).toBe(true);
    await rm(log);

    // The first target lacks page 2 and the manifest; the two new ones lack everything.
    await writeTree(out, { pages: 8, size: 3000, generation: (i) => (i === 2 ? 2 : 1) });
    const second = await deploy(out, urls, { ...options(), tar, now: new Date(Date.now() + 1000) });
    expect(second.targets.map((target) => target.status)).toEqual(['switched', 'switched', 'switched']);
    expect((await runs()).sort((a, b) => a.length - b.length)).toEqual([
      ['p/page2.html', 'prerender-manifest.json'],
      [...Array.from({ length: 8 }, (_, i) => `p/page${i}.html`), 'prerender-manifest.json'],
    ]);
    await rm(log);

    // All three hold the same release: one tar for the three.
    await writeTree(out, { pages: 8, size: 3000, generation: (i) => (i === 2 || i === 5 ? 3 : 1) });
    const third = await deploy(out, urls, { ...options(), tar, now: new Date(Date.now() + 2000) });
    expect(third.targets.map((target) => [target.status, target.sent.files])).toEqual([['switched', 3], ['switched', 3], ['switched', 3]]);
    expect(await runs()).toEqual([['p/page2.html', 'p/page5.html', 'prerender-manifest.json']]);
    for (const r of [remote, remote + '-b', remote + '-c']) {
      expect(await currentOf(r)).toBe(third.id);
      expect(await readFile(path.join(r, 'current/p/page5.html'), 'utf8')).toBe(await readFile(path.join(out, 'p/page5.html'), 'utf8'));
    }
  });

  it('refuses a deploy while another holds the target (exit 2, with how to clear a stale lock)', async () => {
    const { out, remote } = fresh();
    await writeTree(out, { pages: 3 });
    const first = await deploy(out, [sshd.url(remote)], options());
    expect(first.ok).toBe(true);
    await writeTree(out, { pages: 3, generation: 2 });
    // Held by a run on another machine: it cannot be told dead from here.
    await mkdir(path.join(remote, '.prerender-lock'));
    await writeFile(path.join(remote, '.prerender-lock/owner'), JSON.stringify({ pid: 4242, host: 'build-server-7', startedAt: '2026-01-01T00:00:00.000Z' }) + '\n');
    const ssh = ['--ssh-key', sshd.userKey, '--ssh-option', ...sshd.sshOption];
    const refused = await runCli(['deploy', out, sshd.url(remote), ...ssh], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/another prerender publish, deploy or rollback \(pid 4242 on build-server-7, since 2026-01-01T00:00:00.000Z\) holds ssh:\/\/.*; wait for it to end\. If it is gone .*remove the lock: ssh -p \d+ \S+@127\.0\.0\.1 rm -r \S*\.prerender-lock/);
    expect(await currentOf(remote)).toBe(first.id);
    expect(await readdir(path.join(remote, 'releases'))).toHaveLength(2);
    const back = await runCli(['rollback', '--to', sshd.url(remote), ...ssh], { cwd: dir });
    expect(back.code).toBe(2);
    // Cleared as the message says: the deploy goes through and leaves no lock.
    await rm(path.join(remote, '.prerender-lock'), { recursive: true });
    const again = await runCli(['deploy', out, sshd.url(remote), ...ssh], { cwd: dir });
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    await expect(lstat(path.join(remote, '.prerender-lock'))).rejects.toThrow();
  });
  it('a release tree left without its record (a prune killed between the two) is removed by the next deploy, never the current one', async () => {
    const { out, remote } = fresh();
    /** @type {string[]} */
    const ids = [];
    for (let generation = 1; generation <= 2; generation++) {
      await writeTree(out, { pages: 2, generation });
      const result = await deploy(out, [sshd.url(remote)], { ...options(), now: new Date(Date.now() + generation * 1000) });
      expect(result.targets[0].error).toBeUndefined();
      ids.push(result.id);
    }
    const releases = path.join(remote, 'releases');
    // The prune removes the record first, then the tree: killed in between.
    await rm(path.join(releases, `${ids[0]}.json`));
    // And the current release's record lost by hand: its tree is what visitors see. Its link
    // made again by hand too, with a trailing "/" (releases/ID/): still the current one.
    await rm(path.join(releases, `${ids[1]}.json`));
    const link = path.join(remote, 'current');
    const target = await readlink(link);
    await rm(link);
    await symlink(`${target}/`, link);
    await writeTree(out, { pages: 2, generation: 3 });
    const third = await deploy(out, [sshd.url(remote)], { ...options(), now: new Date(Date.now() + 3000) });
    expect(third.targets[0].error).toBeUndefined();
    expect(third.targets[0].status).toBe('switched');
    const names = await readdir(releases);
    expect(names).not.toContain(ids[0]);
    expect(names).toContain(ids[1]); // it was current when the run started
  });
});
