// @ts-check
import { readFile, readdir, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { publish } from '../lib/index.js';
import { LocalTarget } from '../lib/deploy/local.js';
import { useTestDir } from './helpers/fixtures.js';
import { writeTree } from './helpers/deploy-tree.js';

/**
 * Publish, deploy, verify, releases and rollback on odd inputs, the way a
 * script driving them meets them: every failure is a stable code and exit
 * status (never "a bug in prerender"), --json is one JSON object on every
 * path, and nothing is created where nothing should be.
 */

/** @type {string} */
let dir;
const t = useTestDir('prerender-deploy-edge-', (d) => { dir = d; });
const out = () => path.join(dir, 'out');
const www = () => path.join(dir, 'www');
const manifestFile = () => path.join(out(), 'prerender-manifest.json');
/** A time one second later per call (release ids are unique per second), and never in the past. */
let clock = Date.now();
const later = () => new Date((clock = Math.max(clock + 1000, Date.now() + 1000)));
const exists = (/** @type {string} */ file) => stat(file).then(() => true, () => false);

/** @param {(manifest: any) => void} change */
async function editManifest(change) {
  const manifest = JSON.parse(await readFile(manifestFile(), 'utf8'));
  change(manifest);
  await writeFile(manifestFile(), JSON.stringify(manifest));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('verify on odd trees', () => {
  it('a manifest entry that is a directory, or a link to one, is a mismatch (exit 1), not a crash', async () => {
    await writeTree(out(), { pages: 2 });
    await symlink('p', path.join(out(), 'plink'));
    await editManifest((manifest) => {
      manifest.pages.push({ ...manifest.pages[0], url: 'http://shop.test/dir', file: 'p' });
      manifest.pages.push({ ...manifest.pages[0], url: 'http://shop.test/link', file: 'plink' });
    });
    const { code, stdout, stderr } = await t.cli(['verify', 'out', '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(1);
    const report = JSON.parse(stdout);
    expect(report.missing.map((/** @type {any} */ p) => p.file)).toEqual(['p', 'plink']);
    const published = await t.cli(['publish', 'out', '--to', 'www']);
    expect(published.code).toBe(1);
    expect(published.stderr).toMatch(/nothing was sent/);
    expect(await exists(www())).toBe(false);
  });

  it('a manifest that is not JSON, or a page entry without sha256 or bytes, is an unreadable manifest: exit 2, MANIFEST_FORMAT', async () => {
    await writeTree(out(), { pages: 2 });
    const good = await readFile(manifestFile(), 'utf8');
    /** @type {[string, RegExp][]} */
    const cases = [
      ['{ not json', /not valid JSON/],
      [JSON.stringify({ ...JSON.parse(good), pages: [null] }), /pages\[0\] is not an object/],
      [JSON.stringify({ ...JSON.parse(good), pages: [{ ...JSON.parse(good).pages[0], sha256: undefined }] }), /pages\[0\] \(http:\/\/shop\.test\/p\/page0\.html\) has no "sha256"/],
      [JSON.stringify({ ...JSON.parse(good), pages: [{ ...JSON.parse(good).pages[0], bytes: '12' }] }), /has no "bytes"/],
    ];
    for (const [text, message] of cases) {
      await writeFile(manifestFile(), text);
      for (const argv of [['verify', 'out', '--json'], ['publish', 'out', '--to', 'www', '--json']]) {
        const { code, stdout, stderr } = await t.cli(argv);
        expect(code).toBe(2);
        expect(stderr).not.toMatch(/bug in prerender/);
        const { error } = JSON.parse(stdout);
        expect(error.code).toBe('MANIFEST_FORMAT');
        expect(error.message).toMatch(message);
      }
    }
    expect(await exists(www())).toBe(false);
  });

  it('a file listed twice with different sha256 is a mismatch: the file cannot match both entries', async () => {
    const pages = await writeTree(out(), { pages: 2 });
    await editManifest((manifest) => {
      manifest.pages.push({ ...pages[1], url: 'http://shop.test/alias', file: pages[0].file });
    });
    const { code, stdout } = await t.cli(['verify', 'out', '--json']);
    expect(code).toBe(1);
    const report = JSON.parse(stdout);
    expect(report.changed).toEqual([{ file: 'p/page0.html', reason: expect.stringMatching(/listed twice in the manifest with different sha256/) }]);
    // The same file twice with the same sha256 (two URLs, one page) is fine.
    await editManifest((manifest) => {
      manifest.pages[manifest.pages.length - 1] = { ...pages[0], url: 'http://shop.test/alias' };
    });
    expect((await t.cli(['verify', 'out'])).code).toBe(0);
  });
});

describe('targets on odd inputs', () => {
  it('the same target twice (www and www/) is a usage error, not a lock "held by another run"', async () => {
    await writeTree(out(), { pages: 2 });
    const { code, stdout, stderr } = await t.cli(['deploy', 'out', 'www', 'www/', '--json']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/same target/);
    expect(JSON.parse(stdout).error.code).toBe('USAGE');
    expect(await exists(www())).toBe(false);
  });

  it.each([
    [(/** @type {string} */ dir) => [dir, `${pathToFileURL(dir).href}/`]],
    [() => ['deploy@127.0.0.1:/var/www', 'deploy@127.0.0.1:/var/www/']],
    [() => ['ssh://deploy@127.0.0.1/var/www', 'deploy@127.0.0.1:/var/www//']],
  ])('the same target with a trailing "/" as a file:// URL or ssh path is caught too (%#)', async (targets) => {
    await writeTree(out(), { pages: 2 });
    const { code, stderr } = await t.cli(['deploy', 'out', ...targets(www()), '--dry-run']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/same target/);
  });

  it('a file:// URL with a host is a usage error (exit 2), not a crash', async () => {
    await writeTree(out(), { pages: 2 });
    const { code, stdout, stderr } = await t.cli(['deploy', 'out', 'file://web1/srv/shop', '--json']);
    expect(code).toBe(2);
    expect(stderr).not.toMatch(/bug in prerender/);
    expect(JSON.parse(stdout).error.code).toBe('USAGE');
  });

  it('a target that is a file: DEPLOY_TARGET_NOT_DIR from publish, releases and rollback', async () => {
    await writeTree(out(), { pages: 2 });
    await writeFile(www(), 'a file, not a directory');
    const published = await t.cli(['publish', 'out', '--to', 'www', '--json']);
    expect(published.code).toBe(1);
    expect(JSON.parse(published.stdout).targets[0].error.code).toBe('DEPLOY_TARGET_NOT_DIR');
    for (const argv of [['releases', '--to', 'www', '--json'], ['rollback', '--to', 'www', '--json']]) {
      const { code, stdout, stderr } = await t.cli(argv);
      expect(code).toBe(2);
      expect(stderr).not.toMatch(/bug in prerender|--out/);
      expect(JSON.parse(stdout).error.code).toBe('DEPLOY_TARGET_NOT_DIR');
    }
  });

  it('rollback on a directory that does not exist fails (exit 2) and does not create it', async () => {
    const { code, stdout } = await t.cli(['rollback', '--to', 'www', '--json']);
    expect(code).toBe(2);
    expect(JSON.parse(stdout).error.code).toBe('DEPLOY_NO_RELEASE');
    expect(await exists(www())).toBe(false);
  });

  it('releases --json has the documented keys only', async () => {
    await writeTree(out(), { pages: 2 });
    expect((await t.cli(['publish', 'out', '--to', 'www'])).code).toBe(0);
    const { code, stdout } = await t.cli(['releases', '--to', 'www', '--json']);
    expect(code).toBe(0);
    expect(Object.keys(JSON.parse(stdout)).sort()).toEqual(['current', 'releases', 'target']);
    const empty = await t.cli(['releases', '--to', 'nothing-here', '--json']);
    expect(JSON.parse(empty.stdout)).toEqual({ target: path.join(dir, 'nothing-here'), current: null, releases: [] });
  });
});

describe('--json on every path', () => {
  it('usage errors found by the option parser print a JSON error too (exit 2)', async () => {
    for (const argv of [
      ['deploy', 'out', '--json'],
      ['publish', 'out', '--json'],
      ['publish', 'out', '--to', 'www', '--verify', 'some', '--json'],
      ['releases', '--json', '--bogus', '--to', 'www'],
      ['verify', '--json'],
    ]) {
      const { code, stdout } = await t.cli(argv);
      expect(code).toBe(2);
      expect(JSON.parse(stdout).error.code).toBe('USAGE');
    }
    // Without --json, stdout stays empty.
    expect((await t.cli(['deploy', 'out'])).stdout).toBe('');
  });
});

describe('Ctrl-C', () => {
  it('after the release is built but before the switch: current is not switched (publish switches "each"), exit 130', async () => {
    await writeTree(out(), { pages: 2 });
    const first = await publish(out(), www(), { now: later() });
    await writeTree(out(), { pages: 2, generation: 2 });
    const controller = new AbortController();
    const stage = LocalTarget.prototype.stage;
    // The interrupt lands at the worst moment: the release just became complete.
    vi.spyOn(LocalTarget.prototype, 'stage').mockImplementation(async function (/** @type {any} */ plan) {
      const staged = await stage.call(this, plan);
      controller.abort();
      return staged;
    });
    const { code, stdout } = await t.cli(['publish', 'out', '--to', 'www', '--json'], { signal: controller.signal });
    expect(code).toBe(130);
    const result = JSON.parse(stdout);
    expect(result.targets[0].status).toBe('failed');
    expect(result.targets[0].error.code).toBe('ABORTED');
    expect(path.basename(await readlink(path.join(www(), 'current')))).toBe(first.id);
  });

  it('while OUT is read: no target is locked or created; --json still prints one object', async () => {
    await writeTree(out(), { pages: 2 });
    const controller = new AbortController();
    controller.abort();
    const { code, stdout } = await t.cli(['publish', 'out', '--to', 'www', '--json'], { signal: controller.signal });
    expect(code).toBe(130);
    expect(JSON.parse(stdout).targets[0].error.code).toBe('ABORTED');
    expect(await exists(www())).toBe(false);
    // An error met after the interrupt (here: no manifest) still gives JSON, exit 130.
    await rm(manifestFile());
    const failed = await t.cli(['publish', 'out', '--to', 'www', '--json'], { signal: controller.signal });
    expect(failed.code).toBe(130);
    expect(JSON.parse(failed.stdout).error.code).toBe('ABORTED');
  });
});

describe('leftovers', () => {
  it('a release tree left without its record (a prune killed between the two) is removed by the next publish, never the current one', async () => {
    /** @type {string[]} */
    const ids = [];
    for (let generation = 1; generation <= 2; generation++) {
      await writeTree(out(), { pages: 2, generation });
      ids.push((await publish(out(), www(), { now: later() })).id);
    }
    const releases = path.join(www(), 'releases');
    // The prune removes the record first, then the tree: killed in between.
    await rm(path.join(releases, `${ids[0]}.json`));
    // And the current release's record lost by hand: its tree is what visitors see.
    await rm(path.join(releases, `${ids[1]}.json`));
    await writeTree(out(), { pages: 2, generation: 3 });
    const third = await publish(out(), www(), { now: later() });
    expect(third.ok).toBe(true);
    const names = await readdir(releases);
    expect(names).not.toContain(ids[0]);
    expect(names).toContain(ids[1]); // it was current when the run started
  });
});
