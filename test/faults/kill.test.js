// @ts-check
import { describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Crawler } from '../../lib/crawler/index.js';
import { LocalTree } from '../../lib/output/local-tree.js';
import { leftovers, listFilesIfAny } from '../crawl-helpers.js';
import { BIN, runNode } from '../helpers/cli.js';
import { useFixtureSite } from '../helpers/fixtures.js';

/**
 * SIGKILL at several points of a crawl, then the same crawl again: the user
 * gets exit 0 and the tree a clean run gives, byte for byte, with nothing of
 * the killed run left in OUT; the second run resumes from the journal, so no
 * page is fetched twice but those in flight at the kill.
 */

const KILL = fileURLToPath(new URL('../../fixtures/kill-crawl.js', import.meta.url));

/** @type {import('../helpers/fixtures.js').FixtureSite} */
let site;
const dirs = useFixtureSite((started) => { site = started; });

/**
 * Every file of a tree with its bytes; the manifest without its date.
 * @param {string} out
 */
async function snapshot(out) {
  /** @type {Record<string, string>} */
  const files = {};
  for (const file of await listFilesIfAny(out)) {
    const bytes = await readFile(path.join(out, file));
    files[file] = file === 'prerender-manifest.json' ? bytes.toString().replace(/"generatedAt": "[^"]*"/, '') : bytes.toString('base64');
  }
  return files;
}

/**
 * The pages a killed run's journal holds (each URL once).
 * @param {string} out
 */
async function journalPages(out) {
  const lines = (await readFile(path.join(out, '.prerender', 'journal.ndjson'), 'utf8')).split('\n').slice(1);
  const done = lines.filter((line) => line.startsWith('{"url"')).map((line) => JSON.parse(line)).filter((entry) => entry.state === 'done');
  return [...new Set(done.map((entry) => entry.url))];
}

/**
 * @param {string} out
 * @param {string[]} [extra]
 */
async function crawlWithBin(out, extra = []) {
  return runNode([BIN, 'crawl', site.url('/big/index.asp?n=30&kb=2'), '-i', '/', '-o', out, '-q', '--retries', '0', '-c', '2', ...extra], { cwd: path.dirname(out), limitMs: 60_000 });
}

/** The tree of a clean run, made once for the file. */
/** @type {Promise<Record<string, string>> | null} */
let cleanTree = null;
async function clean() {
  cleanTree ??= (async () => {
    const dir = path.join(await dirs.make(), 'clean');
    expect((await crawlWithBin(dir)).code).toBe(0);
    return snapshot(dir);
  })();
  return cleanTree;
}

describe('SIGKILL, then the same crawl again', () => {
  it.each([
    ['journaled', 10, 'while fetching'],
    ['written', 10, 'while writing pages'],
    ['commit', 10, 'while moving files into place'],
  ])('killed at %s %d (%s): the re-run gives the clean tree', async (when, count) => {
    const cleanSnapshot = await clean();
    site.reset();
    const out = path.join(await dirs.make(), 'out');
    const killed = await runNode([KILL, site.url('/big/index.asp?n=30&kb=2'), out, String(when), String(count)], { cwd: path.dirname(out), limitMs: 60_000 });
    expect(killed.signal).toBe('SIGKILL');
    expect(await leftovers(out)).not.toEqual([]);
    const first = site.log.filter((target) => target.startsWith('/big/'));
    expect(new Set(first).size).toBe(first.length);
    const journaled = await journalPages(out);
    expect(journaled.length).toBeGreaterThanOrEqual(count);
    site.reset();
    const again = await crawlWithBin(out);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(await snapshot(out)).toEqual(cleanSnapshot);
    expect(await leftovers(out)).toEqual([]);
    // Resumed: the pages the journal holds are not fetched again; each other page once.
    const fetches = site.log.filter((target) => target.startsWith('/big/'));
    expect(fetches).toHaveLength(31 - journaled.length);
    expect(new Set([...first, ...fetches]).size).toBe(31);
  });
});

describe('Ctrl-C during the commit', () => {
  it('finishes the commit: the clean tree, not marked interrupted (the CLI exits 0)', async () => {
    const cleanSnapshot = await clean();
    const out = path.join(await dirs.make(), 'out');
    const controller = new AbortController();
    // The abort comes as the first file is moved into place.
    class InterruptedTree extends LocalTree {
      async commit() {
        controller.abort();
        return super.commit();
      }
    }
    const crawler = new Crawler({ roots: [site.url('/big/index.asp?n=30&kb=2')], include: ['/'], out, retries: 0, concurrency: 2, signal: controller.signal, target: new InterruptedTree(out) });
    const result = await crawler.run();
    expect(controller.signal.aborted).toBe(true);
    expect(result).toMatchObject({ interrupted: false, failed: 0, pages: 31 });
    expect(await snapshot(out)).toEqual(cleanSnapshot);
    expect(await leftovers(out)).toEqual([]);
  });
});

describe('--no-resume', () => {
  it('starts over: every page fetched again, the same clean tree', async () => {
    const cleanSnapshot = await clean();
    const out = path.join(await dirs.make(), 'out');
    const killed = await runNode([KILL, site.url('/big/index.asp?n=30&kb=2'), out, 'page', '10'], { cwd: path.dirname(out), limitMs: 60_000 });
    expect(killed.signal).toBe('SIGKILL');
    site.reset();
    expect((await crawlWithBin(out, ['--no-resume'])).code).toBe(0);
    expect(site.log.filter((target) => target.startsWith('/big/'))).toHaveLength(31);
    expect(await snapshot(out)).toEqual(cleanSnapshot);
  });
});

describe('a journal this run cannot resume', () => {
  it('of another journal version: refused with exit 2 and a line that says what to do; --no-resume starts over', async () => {
    const out = path.join(await dirs.make(), 'out');
    const killed = await runNode([KILL, site.url('/big/index.asp?n=30&kb=2'), out, 'page', '10'], { cwd: path.dirname(out), limitMs: 60_000 });
    expect(killed.signal).toBe('SIGKILL');
    const file = path.join(out, '.prerender', 'journal.ndjson');
    const [header, ...rest] = (await readFile(file, 'utf8')).split('\n');
    await writeFile(file, [JSON.stringify({ ...JSON.parse(header), version: 2 }), ...rest].join('\n'));
    const refused = await crawlWithBin(out);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/journal\.ndjson is journal version 2; this prerender reads version 1: crawl with --no-resume to start over/);
    expect((await crawlWithBin(out, ['--no-resume'])).code).toBe(0);
    expect(await snapshot(out)).toEqual(await clean());
  });

  it('of other roots: not resumed, and the warning NOT_RESUMED says so', async () => {
    const out = path.join(await dirs.make(), 'out');
    const killed = await runNode([KILL, site.url('/big/index.asp?n=30&kb=2'), out, 'page', '10'], { cwd: path.dirname(out), limitMs: 60_000 });
    expect(killed.signal).toBe('SIGKILL');
    site.reset();
    const other = await runNode([BIN, 'crawl', site.url('/big/index.asp?n=30&kb=2'), '-i', '/big/', '-o', out, '--json', '--retries', '0', '-c', '2'], { cwd: path.dirname(out), limitMs: 60_000 });
    expect(other.code).toBe(0);
    expect(JSON.parse(other.stdout).resumed).toBe(0);
    const manifest = JSON.parse(await readFile(path.join(out, 'prerender-manifest.json'), 'utf8'));
    expect(manifest.warnings.map((/** @type {{ code: string }} */ warning) => warning.code)).toContain('NOT_RESUMED');
    expect(site.log.filter((target) => target.startsWith('/big/'))).toHaveLength(31);
  });
});
