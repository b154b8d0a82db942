// @ts-check
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, runNode } from './helpers/cli.js';
import * as api from 'prerender-static';

const root = new URL('..', import.meta.url);

/** npm without the update check; its cache and config are the user's, which hold the dependencies. */
const npmEnv = () => ({ ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' });

/** @type {{ dir: string, tarball: string, files: string[] } | null} */
let pack = null;
/** The package packed once (its "prepack" generates types/ from lib/'s JSDoc), into a temporary directory. */
function packed() {
  if (pack) return pack;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'prerender-pack-'));
  const output = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: npmEnv() });
  const [info] = JSON.parse(output);
  pack = { dir, tarball: path.join(dir, info.filename), files: info.files.map((/** @type {{ path: string }} */ file) => file.path) };
  return pack;
}
afterAll(() => {
  if (pack) rmSync(pack.dir, { recursive: true, force: true });
});

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

  it('packs bin, lib, its type declarations, templates and README, and no tests or fixtures', () => {
    const files = packed().files;
    expect(files).toContain('bin/prerender.js');
    expect(files).toContain('lib/index.js');
    expect(files).toContain('lib/demo/shop.js');
    expect(files).toContain('types/index.d.ts');
    expect(files).toContain('types/crawler/index.d.ts');
    expect(files).toContain('templates/prerender.config.mjs');
    expect(files).toContain('README.md');
    expect(files.some((/** @type {string} */ file) => file.startsWith('test/') || file.startsWith('fixtures/') || file.startsWith('bench/'))).toBe(false);
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
    expect(pkg.exports['.']).toEqual({ types: './types/index.d.ts', default: './lib/index.js' });
    const declarations = readFileSync(new URL('types/index.d.ts', root), 'utf8');
    for (const name of ['crawl', 'Crawler', 'preview', 'createServer', 'readManifest', 'LocalTree', 'Demo']) expect(declarations).toMatch(new RegExp(`\\b${name}\\b`));
    for (const type of ['CrawlerOptions', 'CrawlResult', 'Loader', 'OutputTarget', 'Manifest']) expect(declarations).toContain(`export type ${type} =`);
    // The options are typed, not Record<string, any>.
    expect(readFileSync(new URL('types/crawler/index.d.ts', root), 'utf8')).toMatch(/constructor\(options: CrawlerOptions\)/);
  });

  it('is published as prerender-static (the registry\'s "prerender" is another project), with a bin of each name', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
    expect(pkg.name).toBe('prerender-static');
    expect(pkg.bin).toEqual({ prerender: 'bin/prerender.js', 'prerender-static': 'bin/prerender.js' });
    const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8'));
    expect([lock.name, lock.packages[''].name, lock.packages[''].bin]).toEqual([pkg.name, pkg.name, pkg.bin]);
    // What the docs and the config template import is this package, not the registry's "prerender".
    for (const file of ['templates/prerender.config.mjs', ...readdirSync(new URL('docs/', root)).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)]) {
      expect(readFileSync(new URL(file, root), 'utf8'), file).not.toMatch(/from 'prerender'|import\('prerender'\)|^\s*npm (install|i) (-D )?prerender(\s|$)/m);
    }
  });

  it('installs from its tarball into an empty project, offline, and both bins run there: --version, --help, demo --no-serve', async () => {
    const project = path.join(packed().dir, 'project');
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'empty', private: true }));
    // --offline: the dependencies come from npm's cache (filled by the repository's own npm install), never the registry.
    const install = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', packed().tarball], { cwd: project, encoding: 'utf8', env: npmEnv() });
    expect(install.status, `npm install --offline of the tarball failed (ENOTCACHED: run npm install in the repository first, which fills the cache):\n${install.stderr}`).toBe(0);
    const npx = (/** @type {string[]} */ args) => spawnSync('npx', ['--offline', ...args], { cwd: project, encoding: 'utf8', env: npmEnv() });
    const version = npx(['prerender', '--version']);
    expect([version.status, version.stdout]).toEqual([0, `${JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).version}\n`]);
    const help = npx(['prerender-static', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^ {2}demo \[options\]/m);
    // The demo needs its shop, which ships in lib/: the installed package crawls it.
    const demo = npx(['prerender-static', 'demo', '--no-serve']);
    expect([demo.status, demo.stderr]).toEqual([0, '']);
    expect(existsSync(path.join(project, 'prerender-demo', 'st', 'product3.htm'))).toBe(true);
    // Imported by its name, with its declarations beside it.
    const imported = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('prerender-static'); console.log(typeof m.crawl, typeof m.Demo)"], { cwd: project, encoding: 'utf8' });
    expect(imported.stdout).toBe('function function\n');
    expect(existsSync(path.join(project, 'node_modules', 'prerender-static', 'types', 'index.d.ts'))).toBe(true);
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
