// @ts-check
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_SUMS, checkAll, checkLine, parseCheckFailures } from '../../lib/deploy/ssh-scripts.js';
import { parseHashes } from '../../lib/deploy/verify.js';

/**
 * The server-side check of the files sent (`check_sums` in the stage
 * script): through `openssl dgst` where the server has a usable one, else
 * `sha256sum -c`. Both ways must say the same thing about the same files,
 * in `sha256sum -c --quiet`'s words, which parseCheckFailures reads.
 */

const HAS_OPENSSL = spawnSync('openssl', ['version']).status === 0;
const IN_CI = process.env.CI === 'true';
const sha = (/** @type {string} */ text) => createHash('sha256').update(text).digest('hex');

describe('check_sums (the sha256 check of the files sent, on the server)', () => {
  /** @type {string} */
  let dir;
  /** @type {string} a PATH whose openssl answers nothing useful: the fallback to sha256sum */
  let noOpenssl;
  /** @type {string} a PATH whose openssl notes each call, then is the real one */
  let logged;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-checksums-'));
    noOpenssl = path.join(dir, 'bin');
    await mkdir(noOpenssl);
    await writeFile(path.join(noOpenssl, 'openssl'), '#!/bin/sh\necho "unknown option -r" >&2\nexit 1\n');
    await chmod(path.join(noOpenssl, 'openssl'), 0o755);
    logged = path.join(dir, 'logged');
    await mkdir(logged);
    const real = spawnSync('sh', ['-c', 'command -v openssl'], { encoding: 'utf8' }).stdout.trim() || '/usr/bin/openssl';
    await writeFile(path.join(logged, 'openssl'), `#!/bin/sh\necho "$*" >> ${path.join(dir, 'openssl.log')}\nexec ${real} "$@"\n`);
    await chmod(path.join(logged, 'openssl'), 0o755);
    const release = path.join(dir, 'release');
    await mkdir(path.join(release, 'st'), { recursive: true });
    await writeFile(path.join(release, 'st', 'a.htm'), 'a');
    await writeFile(path.join(release, 'st', 'sp ace.htm'), 'b');
    await writeFile(path.join(release, '-dash.htm'), 'c');
    await writeFile(path.join(release, 'st', 'back\\slash.htm'), 'd');
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * @param {[string, string][]} list file and the sha256 it should have
   * @param {{ fallback?: boolean }} [how]
   */
  const check = async (list, { fallback = false } = {}) => {
    await writeFile(path.join(dir, 'list'), list.map(([file, hash]) => checkLine(file, hash)).join(''));
    const env = { ...process.env, PATH: `${fallback ? noOpenssl : logged}:${process.env.PATH}` };
    // As the stage script runs it: set -e, from inside the release.
    const result = spawnSync('sh', ['-c', `set -e\n${CHECK_SUMS}\nif check_sums ../list ../failed; then echo OK; else echo BAD; fi`], { cwd: path.join(dir, 'release'), env, encoding: 'utf8' });
    return { said: result.stdout.trim(), failures: parseCheckFailures(await readFile(path.join(dir, 'failed'), 'utf8')) };
  };

  const good = /** @type {[string, string][]} */ ([['st/a.htm', sha('a')], ['st/sp ace.htm', sha('b')], ['-dash.htm', sha('c')]]);
  const bad = /** @type {[string, string][]} */ ([['st/a.htm', sha('a')], ['st/sp ace.htm', sha('x')], ['st/gone.htm', sha('a')], ['-dash.htm', sha('c')]]);
  const badFailures = [
    { file: 'st/gone.htm', reason: 'missing on the target after transfer' },
    { file: 'st/sp ace.htm', reason: 'sha256 differs on the target after transfer' },
  ];

  it.skipIf(!HAS_OPENSSL && !IN_CI)('through openssl: every file matched, or exactly the ones that did not', async () => {
    await rm(path.join(dir, 'openssl.log'), { force: true });
    expect(await check(good)).toEqual({ said: 'OK', failures: [] });
    expect(await check(bad)).toEqual({ said: 'BAD', failures: badFailures });
    // The files were hashed by openssl (a gate call, then the files' own calls).
    const calls = (await readFile(path.join(dir, 'openssl.log'), 'utf8')).trim().split('\n');
    expect(calls.filter((line) => line.includes('./st/a.htm'))).toHaveLength(2);
  });

  it('through sha256sum when the server has no usable openssl: the same answers', async () => {
    expect(await check(good, { fallback: true })).toEqual({ said: 'OK', failures: [] });
    expect(await check(bad, { fallback: true })).toEqual({ said: 'BAD', failures: badFailures });
  });

  it('a name sha256sum escapes (a backslash) is checked too (by sha256sum)', async () => {
    const list = /** @type {[string, string][]} */ ([['st/back\\slash.htm', sha('d')], ['st/a.htm', sha('a')]]);
    expect(await check(list)).toEqual({ said: 'OK', failures: [] });
    expect(await check([['st/back\\slash.htm', sha('e')]])).toEqual({ said: 'BAD', failures: [{ file: 'st/back\\slash.htm', reason: 'sha256 differs on the target after transfer' }] });
  });

  it('all_sums (--verify all) hashes every file, by openssl or sha256sum, names escaped where they must be', async () => {
    const sums = async (/** @type {boolean} */ fallback) => {
      await rm(path.join(dir, 'openssl.log'), { force: true });
      const env = { ...process.env, PATH: `${fallback ? noOpenssl : logged}:${process.env.PATH}` };
      const result = spawnSync('sh', ['-c', `set -e\n${CHECK_SUMS}\nall_sums`], { cwd: path.join(dir, 'release'), env, encoding: 'utf8' });
      return Object.fromEntries([...parseHashes(result.stdout, true)].sort());
    };
    const expected = { '-dash.htm': sha('c'), 'st/a.htm': sha('a'), 'st/back\\slash.htm': sha('d'), 'st/sp ace.htm': sha('b') };
    expect(await sums(true)).toEqual(expected);
    if (!HAS_OPENSSL && !IN_CI) return;
    expect(await sums(false)).toEqual(expected);
    expect((await readFile(path.join(dir, 'openssl.log'), 'utf8'))).toContain('./st/a.htm');
  });

  it('all_sums lists links and special files too, whatever their names; checkAll makes each a failure', async () => {
    const odd = path.join(dir, 'odd');
    await mkdir(path.join(odd, 'st'), { recursive: true });
    await writeFile(path.join(odd, 'st', 'a.htm'), 'a');
    await symlink('/etc', path.join(odd, 'etcdir'));
    await symlink('/etc/passwd', path.join(odd, 'st', 'new\nOTHERS\nline.htm'));
    spawnSync('mkfifo', [path.join(odd, 'st', 'fifo')]);
    const files = new Map([['st/a.htm', { sha256: sha('a'), bytes: 1, mtimeMs: 0 }]]);
    for (const fallback of [true, false]) {
      const env = { ...process.env, PATH: `${fallback ? noOpenssl : logged}:${process.env.PATH}` };
      const result = spawnSync('sh', ['-c', `set -e\n${CHECK_SUMS}\nall_sums`], { cwd: odd, env, encoding: 'utf8' });
      expect(checkAll(result.stdout, files)).toEqual([
        { file: 'etcdir', reason: 'a symbolic link on the target, never part of a release' },
        { file: 'st/fifo', reason: 'not a regular file on the target (fifo, socket, device)' },
        { file: 'st/new\nOTHERS\nline.htm', reason: 'a symbolic link on the target, never part of a release' },
      ]);
    }
    // Output cut short (the connection lost before the lists): a failure, never a pass.
    expect(checkAll(`${sha('a')}  ./st/a.htm\n`, files)).toEqual([{ file: '(release)', reason: expect.stringMatching(/did not finish/) }]);
  });
});
