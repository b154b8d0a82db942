// @ts-check
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, vi } from 'vitest';
import { SSHD, startSshd } from './sshd.js';

/**
 * What the deploy fault tests (test/faults/deploy-*.test.js) share: a real
 * sshd per file, a directory per test, small tmpfs disks (root only),
 * targets of both kinds, an intruder's links. Call useDeployFaults() at the
 * top of a file; `dir` and `sshd` are live bindings.
 */

export const IN_CI = process.env.CI === 'true';
export const RELAY = fileURLToPath(new URL('./tcp-relay.js', import.meta.url));
export const noSshd = !SSHD && !IN_CI;
if (noSshd) console.warn('ssh fault tests skipped: sshd is not installed (apt-get install openssh-server); in CI they run');

/** @type {Awaited<ReturnType<typeof startSshd>> | null} */
export let sshd = null;
/** @type {string} the test's own directory */
export let dir;
/** @type {(() => void)[]} run after each test, before its directory is removed */
let unmounts = [];

/** The hooks: the sshd of the file, a directory per test. */
export function useDeployFaults() {
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
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-deploy-fault-'));
    unmounts = [];
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const unmount of unmounts) unmount();
    // A server-side tar of a deploy that was cut off may still be writing its last entries: ENOTEMPTY is retried.
    await rm(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  });
}

/** Root can mount a small tmpfs (as in CI); elsewhere the disk-full cases are skipped. */
export const canMount = (() => {
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
export function smallDisk(name, options) {
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
export async function fill(file) {
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
export const later = () => new Date((clock = Math.max(clock + 1000, Date.now() + 1000)));

/**
 * A target of each kind: where its releases are, and the options a run needs.
 * @param {'local' | 'ssh'} kind
 */
export function targetOf(kind) {
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
export async function waitFor(probe) {
  for (let i = 0; i < 1500; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('waited 30 s in vain');
}

/** @param {string} root */
export const currentOf = async (root) => path.basename(await readlink(path.join(root, 'current')));

/**
 * Every file under a directory, with its bytes (links not followed).
 * @param {string} root
 * @returns {Promise<Record<string, string>>}
 */
export async function snapshot(root) {
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
export async function plantLinks(release) {
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
