// @ts-check
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, runNode } from './helpers/cli.js';
import * as api from 'prerender';

const root = new URL('..', import.meta.url);

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
