// @ts-check
import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, runNode } from './helpers/cli.js';
import * as api from 'prerender-static';
import { packTarball } from './helpers/types.js';

const root = new URL('..', import.meta.url);

/** npm without its update check, funding and audit; its cache and config are the user's, which hold the dependencies. */
const npmEnv = () => ({ ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' });

/** @type {string[]} */
const temporary = [];
afterAll(() => {
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

/**
 * An empty project in `project` that depends on the tarball beside it, with a lockfile: the repository's own entries
 * for the package's dependencies (not its dev ones), as a user's lockfile would hold them.
 * @param {string} project @param {string} tarballName
 */
function writeProjectWithLock(project, tarballName) {
  const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8'));
  const { name: _name, devDependencies: _dev, ...own } = lock.packages[''];
  const spec = `file:../${tarballName}`;
  const packages = Object.fromEntries(Object.entries(lock.packages).filter(([where, entry]) => where !== '' && !entry.dev));
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'empty', private: true, dependencies: { [lock.name]: spec } }));
  writeFileSync(path.join(project, 'package-lock.json'), JSON.stringify({
    name: 'empty', lockfileVersion: 3, requires: true,
    packages: { '': { name: 'empty', dependencies: { [lock.name]: spec } }, [`node_modules/${lock.name}`]: { ...own, resolved: spec }, ...packages },
  }));
}

describe('package', () => {
  it('imports by its own name and exposes the documented API', () => {
    for (const name of ['crawl', 'Crawler', 'preview', 'explainUrl', 'createServer', 'createPriceFilter', 'runServeCommand', 'findConfig', 'loadConfigFile', 'run', 'PrerenderError', 'UsageError']) {
      expect(api, name).toHaveProperty(name);
    }
    expect(typeof api.crawl).toBe('function');
  });

  it.each(['README.md', 'docs/api.md'])('%s imports only names the package exports', (page) => {
    const text = readFileSync(new URL(page, root), 'utf8');
    const imports = [...text.matchAll(/import \{([^}]+)\} from 'prerender(?:-static)?'/g)];
    expect(imports.length).toBeGreaterThan(0);
    for (const match of imports) {
      for (const name of match[1].split(',').map((part) => part.trim()).filter(Boolean)) {
        expect(api, `${page} imports ${name}`).toHaveProperty(name);
      }
    }
  });

  it('docs/crawl.md documents every crawl option flag', () => {
    const page = readFileSync(new URL('docs/crawl.md', root), 'utf8');
    for (const spec of api.CRAWL_OPTIONS) {
      const long = spec.flags.split(/[ ,]+/).find((flag) => flag.startsWith('--'));
      expect(page, `docs/crawl.md mentions ${long}`).toContain(`\`${spec.flags.split(' <')[0]}`);
    }
  });

  it('is published as prerender-static (the registry\'s "prerender" is another project), with a bin of each name', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
    expect(pkg.name).toBe('prerender-static');
    expect(pkg.bin).toEqual({ prerender: 'bin/prerender.js', 'prerender-static': 'bin/prerender.js' });
    const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8'));
    expect([lock.name, lock.packages[''].name, lock.packages[''].bin]).toEqual([pkg.name, pkg.name, pkg.bin]);
    // What the README, the docs and the config template import or install is this package, not the registry's "prerender".
    const pages = ['README.md', 'templates/prerender.config.mjs', ...readdirSync(new URL('docs/', root)).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
    for (const page of pages) {
      expect(readFileSync(new URL(page, root), 'utf8'), page).not.toMatch(/from 'prerender'|import\('prerender'\)|^\s*npm (install|i) (-D )?prerender(\s|$)/m);
    }
  });

  it('installs from its tarball into an empty project, offline, and both bins run there: --version, --help, demo --no-serve', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'prerender-install-'));
    temporary.push(dir);
    const tarball = packTarball(dir);
    const project = path.join(dir, 'project');
    mkdirSync(project);
    writeProjectWithLock(project, path.basename(tarball));
    // npm ci --offline from a lockfile: versions and integrities are the repository's, so npm needs only what its own
    // install cached (tarballs and install metadata), never the registry. A bare `npm install TARBALL` wants full
    // metadata, which npm 11 caches only when it resolves a range, so a fresh machine's cache lacks it.
    const install = spawnSync('npm', ['ci', '--offline'], { cwd: project, encoding: 'utf8', env: npmEnv() });
    expect(install.status, `npm ci --offline of the tarball failed (ENOTCACHED: run npm install in the repository first, which fills the cache):\n${install.stderr}`).toBe(0);
    const npx = (/** @type {string[]} */ args) => spawnSync('npx', ['--offline', ...args], { cwd: project, encoding: 'utf8', env: npmEnv() });
    const version = npx(['prerender', '--version']);
    expect([version.status, version.stdout]).toEqual([0, `${JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).version}\n`]);
    const help = npx(['prerender-static', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^ {2}demo \[options\]/m);
    expect(help.stdout).toMatch(/^Usage: prerender-static \[options\] \[command\]/); // the name typed, not the other bin's
    expect(npx(['prerender', '--help']).stdout).toMatch(/^Usage: prerender \[options\] \[command\]/);
    // The demo needs its shop, which ships in lib/: the installed package crawls it.
    const demo = npx(['prerender-static', 'demo', '--no-serve']);
    expect([demo.status, demo.stderr]).toEqual([0, '']);
    expect(existsSync(path.join(project, 'prerender-demo', 'st', 'product3.htm'))).toBe(true);
    const imported = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('prerender-static'); console.log(typeof m.crawl, typeof m.Demo)"], { cwd: project, encoding: 'utf8' });
    expect(imported.stdout).toBe('function function\n');
  });

  it('keeps rendering\'s driver out of a crawl-only install: puppeteer-core is an optional peer dependency', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
    expect(pkg.dependencies).not.toHaveProperty('puppeteer-core');
    expect(pkg.peerDependencies['puppeteer-core']).toMatch(/^\^24\./);
    expect(pkg.peerDependenciesMeta['puppeteer-core']).toEqual({ optional: true });
    expect(pkg.devDependencies['puppeteer-core']).toBe(pkg.peerDependencies['puppeteer-core']);
  });

  it('--render without puppeteer-core: exit 2, one line saying how to add it, nothing written', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'prerender-no-driver-'));
    try {
      const hooks = fileURLToPath(new URL('test/helpers/no-puppeteer.js', root));
      const result = await runNode(['--import', hooks, BIN, 'crawl', 'http://127.0.0.1:9/', '--render', '-o', 'out'], { cwd: dir, limitMs: 20_000 });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe('prerender: --render needs puppeteer-core, an optional dependency that is not installed: npm install puppeteer-core@24\n');
      expect(existsSync(path.join(dir, 'out'))).toBe(false);
      const crawlOnly = await runNode(['--import', hooks, BIN, 'crawl', '--help'], { cwd: dir, limitMs: 20_000 });
      expect(crawlOnly.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
