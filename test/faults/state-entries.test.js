// @ts-check
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readManifest } from '../crawl-helpers.js';
import { BIN, runCli, runNode } from '../helpers/cli.js';
import { useFixtureSite } from '../helpers/fixtures.js';

/**
 * What a crawl keeps in OUT/.prerender, each entry replaced by something it cannot use: a directory, a link to a
 * file outside OUT, a named pipe. The crawl names the entry, what it is and what to remove (exit 2, one line,
 * `STATE_ENTRY`) before any request, and opens nothing through it; --full removes it, starts over and exits 0, and
 * the next crawl too.
 */

/** @type {import('../helpers/fixtures.js').FixtureSite} */
let site;
const dirs = useFixtureSite((started) => { site = started; });

/** Every file a crawl keeps in OUT/.prerender, and how the message names it. */
const ENTRIES = [
  ['lock', /the lock of the crawl writing to OUT/],
  ['state.ndjson', /the last crawl's state/],
  ['journal.ndjson', /the journal of an interrupted crawl/],
  ['blobs.log', /the staged pages \(a file\)/],
  ['blobs.idx', /the staged pages' index/],
  ['follow.bin', /the links each page followed/],
];

/**
 * How each entry is replaced, what the message calls it, and whether the refused crawl runs in a process of its own:
 * opening a pipe blocks a thread of the process that opens it, so a crawl that does is killed at a bound.
 * @type {[string, string, (file: string, victim: string) => Promise<void>, boolean][]}
 */
const KINDS = [
  ['a directory', 'a directory', async (file) => { await mkdir(path.join(file, 'inside'), { recursive: true }); }, false],
  ['a link to a file outside OUT', 'a symbolic link', async (file, victim) => { await symlink(victim, file); }, false],
  ['a named pipe', 'a named pipe', async (file) => { execFileSync('mkfifo', [file]); }, true],
];

/** @param {string[]} argv */
async function cli(argv) {
  return runCli(argv, { cwd: await dirs.make('prerender-cwd-') });
}

/** @param {string} out @param {string[]} [more] */
const crawlInto = (out, more = []) => cli(['crawl', site.url('/infodir/about.asp'), '-o', out, '--retries', '0', '-q', ...more]);

const escape = (/** @type {string} */ text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe.each(KINDS)('an entry of OUT/.prerender replaced by %s', (_, found, plant, isolated) => {
  it.each(ENTRIES)('%s: named with what to remove, before any request; --full starts over, and the next crawl runs', async (name, holds) => {
    const root = await dirs.make();
    const out = path.join(root, 'out');
    const victim = path.join(root, 'victim.txt');
    await writeFile(victim, 'keep me');
    expect((await crawlInto(out)).code).toBe(0);
    const file = path.join(out, '.prerender', name);
    await rm(file, { force: true });
    await plant(file, victim);
    const requests = site.log.length;

    const argv = ['crawl', site.url('/infodir/about.asp'), '-o', out, '--retries', '0', '-q', '--json'];
    const refused = isolated ? await runNode([BIN, ...argv], { cwd: root, limitMs: 60_000 }) : await cli(argv);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(new RegExp(`^prerender: cannot use ${escape(file)}: it is ${found}, where prerender keeps `));
    expect(refused.stderr).toMatch(holds);
    expect(refused.stderr).toMatch(/remove it, or crawl with --full to start over/);
    expect(refused.stderr).not.toMatch(/looks like a bug/);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: 'STATE_ENTRY' } });
    expect(site.log.length).toBe(requests);
    expect((await lstat(file)).isFile()).toBe(false);

    const full = await crawlInto(out, ['--full']);
    expect(full.code, full.stderr).toBe(0);
    const warnings = (await readManifest(out)).warnings.filter((warning) => warning.code === 'STATE_REMOVED');
    expect(warnings.map((warning) => warning.message)).toEqual([`${file} was ${found}, which prerender cannot use: --full removed it`]);
    expect(await lstat(file).then((info) => info.isFile(), () => null)).not.toBe(false);

    const next = await crawlInto(out);
    expect(next.code, next.stderr).toBe(0);
    expect((await readManifest(out)).pages.length).toBeGreaterThan(0);
    expect(await readFile(victim, 'utf8')).toBe('keep me');
  });
});

describe('--full on an OUT whose state directory holds entries it cannot use', () => {
  it.each(ENTRIES)('%s as a directory: --full starts over at once, exits 0, and so does the next crawl', async (name) => {
    const out = path.join(await dirs.make(), 'out');
    expect((await crawlInto(out)).code).toBe(0);
    const file = path.join(out, '.prerender', name);
    await rm(file, { force: true });
    await mkdir(path.join(file, 'inside'), { recursive: true });
    const full = await crawlInto(out, ['--full']);
    expect(full.code, full.stderr).toBe(0);
    expect((await readManifest(out)).warnings.map((warning) => warning.code)).toContain('STATE_REMOVED');
    const next = await crawlInto(out);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toBe('');
  });
});
