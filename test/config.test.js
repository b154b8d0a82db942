// @ts-check
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_FILES, checkConfig, findConfig, loadConfigFile } from '../lib/options/config-file.js';
import { ConfigError } from '../lib/errors.js';
import { CRAWL_OPTIONS, OPTION_BY_NAME } from '../lib/options/crawl-options.js';
import { crawl } from '../lib/crawler/index.js';
import { preview } from '../lib/preview/index.js';
import { exists, readManifest } from './crawl-helpers.js';
import { BIN, runNode } from './helpers/cli.js';
import { useTestDir } from './helpers/fixtures.js';

const LIB_CLI = new URL('../lib/cli/index.js', import.meta.url).href;

/**
 * Config files (prerender.config.js / .mjs / .json, --config), their
 * precedence under command-line flags, every config error, and `prerender init`.
 */

const TEMPLATE = new URL('../templates/prerender.config.mjs', import.meta.url);

/** @type {string} */
let dir;
const { cli, shop, sitemapSite } = useTestDir('prerender-config-', (made) => { dir = made; });

/**
 * @param {string} name
 * @param {unknown} content object (JSON) or source text
 * @param {string} [where]
 */
async function writeConfig(name, content, where = dir) {
  const file = path.join(where, name);
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return file;
}

describe('finding the config file', () => {
  it('finds none, or the one of prerender.config.js / .mjs / .json in the working directory', async () => {
    expect(await findConfig({ cwd: dir })).toBeNull();
    expect(CONFIG_FILES).toEqual(['prerender.config.js', 'prerender.config.mjs', 'prerender.config.json']);
    for (const name of CONFIG_FILES) {
      const sub = path.join(dir, name.replace(/\W/g, '_'));
      await mkdir(sub);
      await writeConfig(name, name.endsWith('.json') ? {} : 'export default {};\n', sub);
      expect(await findConfig({ cwd: sub })).toBe(path.join(sub, name));
    }
  });

  it('refuses two config files in one directory, naming both', async () => {
    await writeConfig('prerender.config.mjs', 'export default {};\n');
    await writeConfig('prerender.config.json', {});
    const error = await findConfig({ cwd: dir }).catch((e) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('prerender.config.mjs, prerender.config.json');
    expect(error.message).toContain('--config');
  });

  it('takes --config relative to the working directory, and fails when it does not exist', async () => {
    await mkdir(path.join(dir, 'conf'));
    const file = await writeConfig('site.json', {}, path.join(dir, 'conf'));
    expect(await findConfig({ cwd: dir, file: 'conf/site.json' })).toBe(file);
    // An explicit file wins over (and ignores) the ones in the directory, even two of them.
    await writeConfig('prerender.config.mjs', 'export default {};\n');
    await writeConfig('prerender.config.json', {});
    expect(await findConfig({ cwd: dir, file: 'conf/site.json' })).toBe(file);
    const error = await findConfig({ cwd: dir, file: 'missing.json' }).catch((e) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe('config file not found: missing.json');
  });
});

describe('loading a config file', () => {
  it('loads JSON, an ES module, a CommonJS .js, and a (async) function returning the options', async () => {
    expect(await loadConfigFile(await writeConfig('a.json', { concurrency: 3, include: ['/st/'] }))).toEqual({ concurrency: 3, include: ['/st/'] });
    expect(await loadConfigFile(await writeConfig('b.mjs', 'export default { retries: 1, assets: true };\n'))).toEqual({ retries: 1, assets: true });
    await mkdir(path.join(dir, 'esm'));
    expect(await loadConfigFile(await writeConfig('prerender.config.js', 'export default { timeout: 5 };\n', path.join(dir, 'esm')))).toEqual({ timeout: 5 });
    await mkdir(path.join(dir, 'cjs'));
    expect(await loadConfigFile(await writeConfig('prerender.config.js', 'module.exports = { maxPages: 7 };\n', path.join(dir, 'cjs')))).toEqual({ maxPages: 7 });
    expect(await loadConfigFile(await writeConfig('c.mjs', 'export default async () => ({ placeholders: "esi" });\n'))).toEqual({ placeholders: 'esi' });
  });

  it('loads a JSON file that starts with a UTF-8 byte order mark (as some editors write it), and a .cjs module', async () => {
    expect(await loadConfigFile(await writeConfig('bom.json', '\uFEFF{ "concurrency": 3 }\n'))).toEqual({ concurrency: 3 });
    expect(await loadConfigFile(await writeConfig('upper.JSON', '{ "retries": 0 }'))).toEqual({ retries: 0 });
    expect(await loadConfigFile(await writeConfig('c.cjs', 'module.exports = { maxPages: 7 };\n'))).toEqual({ maxPages: 7 });
  });

  it.each([
    ['bad.json', '{ "concurrency": 8, }', /^bad\.json: not valid JSON: /],
    ['list.json', '[{ "concurrency": 8 }]', /^list\.json: must hold an object of options$/],
    ['null.json', 'null', /^null\.json: must hold an object of options$/],
    ['named.mjs', 'export const concurrency = 8;\n', /^named\.mjs: must export default an object of options$/],
    ['throws.mjs', 'throw new Error("no such env var SHOP_URL");\n', /^throws\.mjs: cannot load: no such env var SHOP_URL$/],
    ['syntax.mjs', 'export default { concurrency: };\n', /^syntax\.mjs: cannot load: /],
  ])('%s is a config error naming the file', async (name, text, message) => {
    const error = await loadConfigFile(await writeConfig(name, text)).catch((e) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.code).toBe('CONFIG');
    expect(error.message).toMatch(message);
  });
});

describe('checking config values', () => {
  it('accepts every option of the command line under its camelCase name, with its default value', () => {
    /** @type {Record<string, unknown>} */
    const values = { roots: ['http://shop.example/st/dir.asp'] };
    for (const spec of CRAWL_OPTIONS) if (spec.default !== undefined) values[spec.name] = spec.default;
    Object.assign(values, {
      dynamicBase: 'https://shop.example/', siteUrl: 'https://static.example/', urls: 'urls.txt', precompress: 'gzip,br',
      frontier: 'redis://127.0.0.1:6379/0', crawlId: 'shop', blobs: '/shared/blobs', rate: 2.5, browser: '/usr/bin/chromium', renderConcurrency: 8,
      changed: 'changed.txt', browserEndpoint: 'ws://127.0.0.1:9222/devtools/browser/x',
    });
    expect(Object.keys(values).sort()).toEqual(['roots', ...CRAWL_OPTIONS.map((spec) => spec.name)].sort());
    expect(checkConfig(values, 'prerender.config.json')).toEqual(values);
  });

  // Every kind of option, each wrong in the ways people get it wrong.
  it.each([
    [{ conccurency: 8 }, 'unknown key "conccurency" (did you mean "concurrency"?)'],
    [{ exlude: ['/cart'] }, 'unknown key "exlude" (did you mean "exclude"?)'],
    [{ root: ['http://shop/'] }, 'unknown key "root" (did you mean "roots"?)'],
    [{ frobnicate: true }, 'unknown key "frobnicate"'],
    [{ limit: 5 }, 'unknown key "limit"'],
    [{ concurrency: '8' }, '"concurrency" must be a whole number, got "8"'],
    [{ concurrency: 8.5 }, '"concurrency" must be a whole number, got 8.5'],
    [{ concurrency: 0 }, '"concurrency" must be at least 1, got 0'],
    [{ concurrency: 1000 }, '"concurrency" must be at most 256, got 1000'],
    [{ retries: -1 }, '"retries" must be at least 0, got -1'],
    [{ maxPages: null }, '"maxPages" must be a whole number, got null'],
    [{ maxPageBytes: 0 }, '"maxPageBytes" must be at least 1, got 0'],
    [{ out: '' }, '"out" must be a non-empty string, got ""'],
    [{ out: 42 }, '"out" must be a non-empty string, got 42'],
    [{ include: '/st/' }, '"include" must be a list of non-empty strings, got "/st/"'],
    [{ exclude: ['/cart', 7] }, '"exclude" must be a list of non-empty strings, got ["/cart",7]'],
    [{ header: [''] }, '"header" must be a list of non-empty strings, got [""]'],
    [{ assets: 'yes' }, '"assets" must be true or false, got "yes"'],
    [{ writeSitemap: 1 }, '"writeSitemap" must be true or false, got 1'],
    [{ dynamicBase: 'shop.example' }, '"dynamicBase" must be an absolute http(s) URL, got "shop.example"'],
    [{ siteUrl: 'ftp://static.example/' }, '"siteUrl" must be an absolute http(s) URL, got "ftp://static.example/"'],
    [{ placeholders: 'xml' }, '"placeholders" must be one of filter, ssi, esi, got "xml"'],
    [{ urls: ['a.txt'] }, '"urls" must be a non-empty string, got ["a.txt"]'],
    [{ roots: 'http://shop.example/' }, '"roots" must be a list of absolute http(s) URLs, got "http://shop.example/"'],
    [{ roots: [1] }, '"roots" must be a list of absolute http(s) URLs, got [1]'],
    [{ precompress: 'gzip,gzip' }, '"precompress" must be gzip, br or gzip,br (each once), got "gzip,gzip"'],
    [{ precompress: 'br,gzip,br' }, '"precompress" must be gzip, br or gzip,br (each once), got "br,gzip,br"'],
    [{ precompress: 'zstd' }, '"precompress" must be gzip, br or gzip,br (each once), got "zstd"'],
  ])('%j: %s', (values, message) => {
    let error;
    try {
      checkConfig(values, 'prerender.config.json');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe(`prerender.config.json: ${message}`);
  });
});

describe('what a JS config file can hold besides JSON', () => {
  it('is shown as written there (10n, /re/, a function), never a crash', () => {
    for (const [values, message] of /** @type {[Record<string, unknown>, string][]} */ ([
      [{ concurrency: 8n }, '"concurrency" must be a whole number, got 8n'],
      [{ pruneMax: 10n }, '"pruneMax" must be a whole number of files, or a percentage up to 100% such as "10%", got 10n'],
      [{ ignore: [/generated at .*/] }, '"ignore" must be a list of non-empty strings, got [/generated at .*/]'],
      [{ out: () => 'out' }, '"out" must be a non-empty string, got a function'],
    ])) {
      expect(() => checkConfig(values, 'prerender.config.mjs')).toThrow(new ConfigError(`prerender.config.mjs: ${message}`));
    }
  });
});

describe('config errors on the command line', () => {
  it.each([
    ['prerender.config.json', JSON.stringify({ conccurency: 8 }), 'prerender: prerender.config.json: unknown key "conccurency" (did you mean "concurrency"?)\n'],
    ['prerender.config.json', JSON.stringify({ concurrency: '8' }), 'prerender: prerender.config.json: "concurrency" must be a whole number, got "8"\n'],
    ['prerender.config.mjs', 'export default { assets: "no" };\n', 'prerender: prerender.config.mjs: "assets" must be true or false, got "no"\n'],
    ['prerender.config.js', 'export default { placeholders: "php" };\n', 'prerender: prerender.config.js: "placeholders" must be one of filter, ssi, esi, got "php"\n'],
    ['prerender.config.json', '{ "roots": [', /^prerender: prerender\.config\.json: not valid JSON: .+\n$/],
    // The parser quotes the text, newlines and all: still one line.
    ['prerender.config.json', '{\n  "concurrency":\n}\n', /^prerender: prerender\.config\.json: not valid JSON: [^\n]+\n$/],
  ])('%s %s: exit 2 for crawl and preview, and nothing fetched or written', async (name, text, message) => {
    const s = await shop();
    await writeConfig(name, text);
    for (const command of ['crawl', 'preview']) {
      const result = await cli([command, s.url, ...(command === 'crawl' ? ['-o', path.join(dir, 'out')] : [])]);
      expect(result.code, command).toBe(2);
      if (typeof message === 'string') expect(result.stderr).toBe(message);
      else expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe('');
    }
    expect(s.hits.size).toBe(0);
    expect(await exists(path.join(dir, 'out'))).toBe(false);
  });

  it('two config files in the working directory: exit 2; --config chooses one', async () => {
    const s = await shop({ products: 3 });
    await writeConfig('prerender.config.json', { roots: [s.url] });
    await writeConfig('prerender.config.mjs', `export default { roots: [${JSON.stringify(s.url)}] };\n`);
    const both = await cli(['preview']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^prerender: several config files in .+ \(prerender\.config\.mjs, prerender\.config\.json\): keep one, or choose with --config\n$/);
    const chosen = await cli(['preview', '--config', 'prerender.config.json']);
    expect(chosen.code).toBe(0);
    expect(chosen.stdout).toContain(`crawl     ${s.url}  -> st/dir.asp.html  (root)`);
  });

  it('--config with a missing file: exit 2', async () => {
    const result = await cli(['crawl', 'http://127.0.0.1:9/', '--config', 'nope.json']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('prerender: config file not found: nope.json\n');
  });

  it('--config naming a directory: exit 2, one line that says so (not import()\'s message about prerender\'s own source)', async () => {
    await mkdir(path.join(dir, 'conf'));
    for (const value of ['conf', '']) {
      const result = await cli(['preview', 'http://127.0.0.1:9/', '--config', value]);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`prerender: --config ${JSON.stringify(value)} is a directory, not a config file\n`);
    }
  });

  it('--config with an extension Node does not import: exit 2, naming the kinds a config file may be', async () => {
    await writeConfig('site.yaml', 'concurrency: 2\n');
    // A real process: the test runner's own module loader takes any extension.
    const result = await runNode([BIN, 'preview', 'http://127.0.0.1:9/', '--config', 'site.yaml'], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('prerender: site.yaml: a config file is JSON (.json) or a module (.js, .mjs, .cjs)\n');
  });

  it('a .ts config is imported where a loader takes TypeScript (tsx; here the test runner\'s), not refused by its name', async () => {
    await writeConfig('site.ts', 'const concurrency: number = 2;\nexport default { concurrency };\n');
    expect((await loadConfigFile(path.join(dir, 'site.ts'))).concurrency).toBe(2);
  });

  it('a bad --config file is reported even when the working directory holds a good one', async () => {
    await writeConfig('prerender.config.json', { concurrency: 2 });
    await writeConfig('other.json', { concurrency: 'two' });
    const result = await cli(['preview', 'http://127.0.0.1:9/', '--config', 'other.json']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('prerender: other.json: "concurrency" must be a whole number, got "two"\n');
  });
});

describe('precedence: config file under command-line flags', () => {
  it('uses the file for everything the command line does not give', async () => {
    const s = await shop({ products: 6, count: 3 });
    const out = path.join(dir, 'site');
    await writeConfig('prerender.config.json', {
      roots: [s.url],
      include: ['/st/dir.asp', '/st/product.asp'],
      exclude: ['/st/product.asp?SKUSetID=4'],
      out,
      concurrency: 2,
      placeholders: 'ssi',
      pricePath: '/api/price',
      header: ['X-Preview: yes'],
    });
    const result = await cli(['crawl', '-q']);
    expect(result.code).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.roots).toEqual([s.url]);
    expect(manifest.placeholderMode).toBe('ssi');
    expect(manifest.scope).toEqual({
      include: [`${s.origin}/st/dir.asp`, `${s.origin}/st/product.asp`],
      exclude: [`${s.origin}/st/product.asp?SKUSetID=4`],
    });
    expect(manifest.pages.map((/** @type {any} */ p) => p.file).sort()).toEqual([
      'st/dir.asp.html', 'st/dir.asp@Start=4&Count=3.html', 'st/product1.htm', 'st/product2.htm', 'st/product3.htm', 'st/product5.htm', 'st/product6.htm',
    ]);
    expect(await readFile(path.join(out, 'st/product1.htm'), 'utf8')).toContain('<!--# include virtual="/api/price?sku=SKU-1" -->');
  });

  it('lets every flag given on the command line win, and positional roots replace the file\'s roots', async () => {
    const configured = await shop({ products: 3 });
    const given = await shop({ products: 4, count: 2 });
    await writeConfig('prerender.config.mjs', `export default {
  roots: [${JSON.stringify(configured.url)}],
  include: ['/st/dir.asp'],
  exclude: ['/st/product.asp?SKUSetID=1'],
  out: ${JSON.stringify(path.join(dir, 'from-config'))},
  placeholders: 'esi',
  maxPages: 1,
};
`);
    const out = path.join(dir, 'from-flags');
    const result = await cli(['crawl', given.url, '-i', '/st/dir.asp', '/st/product.asp', '-o', out, '--placeholders', 'filter', '--max-pages', '100', '-q']);
    expect(result.code).toBe(0);
    expect(configured.hits.size).toBe(0); // the file's roots were replaced
    expect(await exists(path.join(dir, 'from-config'))).toBe(false);
    const manifest = await readManifest(out);
    expect(manifest.roots).toEqual([given.url]);
    expect(manifest.placeholderMode).toBe('filter');
    expect(manifest.scope.include).toEqual([`${given.origin}/st/dir.asp`, `${given.origin}/st/product.asp`]);
    // The exclude of the file still applies: the command line did not give one.
    expect(manifest.scope.exclude).toEqual([`${given.origin}/st/product.asp?SKUSetID=1`]);
    expect(manifest.pages.map((/** @type {any} */ p) => p.url)).not.toContain(`${given.origin}/st/product.asp?SKUSetID=1`);
    expect(manifest.pages).toHaveLength(2 + 3); // dir.asp, dir.asp?Start=3, products 2-4 (--max-pages 100 won over 1)
  });

  it('applies the config file to preview too, with flags winning', async () => {
    const s = await shop({ products: 5, count: 5 });
    await writeConfig('prerender.config.json', { roots: [s.url], include: ['/st/dir.asp', '/st/product.asp'], exclude: ['/st/product.asp?SKUSetID=2'] });
    const fromFile = await cli(['preview', '--json']);
    expect(fromFile.code).toBe(0);
    const rows = fromFile.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(rows.find((row) => row.url === `${s.origin}/st/product.asp?SKUSetID=2`)).toMatchObject({ decision: 'excluded', pattern: '/st/product.asp?SKUSetID=2' });
    expect(rows.find((row) => row.url === `${s.origin}/st/product.asp?SKUSetID=3`)).toMatchObject({ decision: 'crawl', file: 'st/product3.htm' });

    const overridden = await cli(['preview', '--json', '-x', '/st/product.asp?SKUSetID=3']);
    const rows2 = overridden.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(rows2.find((row) => row.url === `${s.origin}/st/product.asp?SKUSetID=2`)).toMatchObject({ decision: 'crawl' });
    expect(rows2.find((row) => row.url === `${s.origin}/st/product.asp?SKUSetID=3`)).toMatchObject({ decision: 'excluded' });
    // A flag value is still checked as a flag.
    const bad = await cli(['preview', '--concurrency', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('prerender: --concurrency must be at least 1, got "0"\n');
  });

  it('gives the same result through the programmatic API with the same options object', async () => {
    const s = await shop({ products: 5, count: 5 });
    const file = await writeConfig('prerender.config.json', { roots: [s.url], include: ['/st/dir.asp', '/st/product.asp'], exclude: ['/st/product.asp?SKUSetID=2'], concurrency: 2 });
    const options = await loadConfigFile(file);

    const viaCli = path.join(dir, 'cli');
    expect((await cli(['crawl', '-o', viaCli, '-q'])).code).toBe(0);
    const viaApi = path.join(dir, 'api');
    const result = await crawl({ ...options, out: viaApi });
    expect(result.failed).toBe(0);
    const pages = async (/** @type {string} */ out) => (await readManifest(out)).pages.map((/** @type {any} */ p) => [p.url, p.file, p.sha256]).sort();
    expect(await pages(viaApi)).toEqual(await pages(viaCli));

    /** @type {string[]} */
    const planned = [];
    const { totals } = await preview(options, { onRow: (row) => { if (row.decision === 'crawl') planned.push(`${row.url} ${row.file}`); } });
    expect(totals.pagesInScope).toBe(result.pages);
    expect(planned.sort()).toEqual((await pages(viaApi)).map(([url, f]) => `${url} ${f}`).sort());
  });
});

describe('prerender init', () => {
  it('writes the commented starter config from templates/, byte for byte', async () => {
    const result = await cli(['init']);
    expect(result.code).toBe(0);
    const written = path.join(dir, 'prerender.config.mjs');
    expect(result.stdout).toContain(`wrote ${written}`);
    expect(result.stdout).toContain('prerender preview');
    expect(await readFile(written)).toEqual(await readFile(TEMPLATE));
    expect(await readdir(dir)).toEqual(['prerender.config.mjs']);
  });

  it('writes a config that loads, where every key (commented-out ones too) is a real option', async () => {
    expect((await cli(['init'])).code).toBe(0);
    const written = path.join(dir, 'prerender.config.mjs');
    const values = await loadConfigFile(written);
    expect(Object.keys(values).length).toBeGreaterThan(5);
    for (const key of Object.keys(values)) expect(key === 'roots' || OPTION_BY_NAME.has(key), key).toBe(true);
    // The starter values of the options that have a default are those defaults.
    for (const [key, value] of Object.entries(values)) {
      const spec = OPTION_BY_NAME.get(key);
      if (spec?.default !== undefined && key !== 'include') expect(value, key).toEqual(spec.default);
    }

    // Uncomment every "// key: value," line: still valid, and more keys.
    const text = await readFile(written, 'utf8');
    const commented = [...text.matchAll(/^( +)\/\/ ([a-z][A-Za-z]*): (.*)$/gm)];
    expect(commented.length).toBeGreaterThan(3);
    const uncommented = text.replace(/^( +)\/\/ ([a-z][A-Za-z]*: .*)$/gm, '$1$2');
    const all = await loadConfigFile(await writeConfig('all.mjs', uncommented));
    for (const [, , key] of commented) expect(all, key).toHaveProperty(key);
    expect(Object.keys(all).length).toBe(Object.keys(values).length + commented.length);
  });

  it('is usable at once: preview with the starter config and a root on the command line', async () => {
    const s = await shop({ products: 3 });
    expect((await cli(['init'])).code).toBe(0);
    const result = await cli(['preview', s.url]);
    expect(result.code).toBe(0);
    // The starter's include patterns apply to the root given.
    expect(result.stdout).toContain(`crawl     ${s.origin}/st/product.asp?SKUSetID=3  -> st/product3.htm  (include /st/product.asp)`);
    expect(result.stdout).toContain(`dynamic   ${s.origin}/st/checkout.asp  (out of scope)`);
  });

  it.each(CONFIG_FILES)('never overwrites: with %s present it exits 2 and leaves every byte as it was', async (name) => {
    const content = name.endsWith('.json') ? '{ "concurrency": 3 }\n' : '// mine\nexport default { concurrency: 3 };\n';
    const file = await writeConfig(name, content);
    const before = await stat(file);
    const result = await cli(['init']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`prerender: a config file already exists (${name}): not overwritten\n`);
    expect(result.stdout).toBe('');
    expect(await readFile(file, 'utf8')).toBe(content);
    expect((await stat(file)).mtimeMs).toBe(before.mtimeMs);
    expect(await readdir(dir)).toEqual([name]);
  });

  it('refuses when run twice, keeping the edited file', async () => {
    expect((await cli(['init'])).code).toBe(0);
    const file = path.join(dir, 'prerender.config.mjs');
    const edited = (await readFile(file, 'utf8')).replace("concurrency: 8", 'concurrency: 32');
    await writeFile(file, edited);
    const again = await cli(['init']);
    expect(again.code).toBe(2);
    expect(await readFile(file, 'utf8')).toBe(edited);
  });

  it('refuses when several config files exist', async () => {
    await writeConfig('prerender.config.js', 'export default {};\n');
    await writeConfig('prerender.config.json', '{}');
    const result = await cli(['init']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('prerender: a config file already exists (several): not overwritten\n');
    expect((await readdir(dir)).sort()).toEqual(['prerender.config.js', 'prerender.config.json']);
  });
});

describe('config file values and paths', () => {
  it('accepts maxPageBytes with the k/m/g suffix its own error message offers', () => {
    expect(() => checkConfig({ maxPageBytes: '10m' }, 'prerender.config.json')).not.toThrow();
  });

  it.each([
    ['roots', ['shop.example/st/dir.asp']],
    ['sitemap', ['sitemap.xml']],
    ['header', ['Cookie preview=1']],
    ['pricePath', 'price'],
    ['include', ['st/product.asp']],
  ])('names the file and the key of a bad "%s" value', async (key, value) => {
    await writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ roots: ['http://127.0.0.1:9/st/dir.asp'], [key]: value }));
    const result = await cli(['crawl', '-o', path.join(dir, 'out')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('prerender.config.json');
    expect(result.stderr).toContain(`"${key}"`);
  });

  it('reads a relative "urls" of the config file from the working directory given to run()', async () => {
    const site = await sitemapSite();
    await writeFile(path.join(dir, 'urls.txt'), `${site.product(1)}\n`);
    await writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ urls: 'urls.txt', out: path.join(dir, 'out') }));
    const result = await cli(['crawl', '-q']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('writes a relative "out" of the config file under the working directory given to run()', async () => {
    const site = await sitemapSite();
    const project = path.join(dir, 'project');
    const elsewhere = path.join(dir, 'elsewhere');
    await Promise.all([project, elsewhere].map((d) => mkdir(d)));
    await writeFile(path.join(project, 'prerender.config.json'), JSON.stringify({ roots: [`${site.origin}/info/privacy.asp`], out: 'site' }));
    // run() embedded in a process whose own cwd is another directory.
    const script = `import { run } from ${JSON.stringify(LIB_CLI)};
const io = { stdout: process.stdout, stderr: process.stderr, env: {}, cwd: ${JSON.stringify(project)} };
process.exitCode = await run(['crawl', '-q'], io);`;
    const result = await runNode(['--input-type=module', '-e', script], { cwd: elsewhere, limitMs: 60_000 });
    expect(result.code).toBe(0);
    expect(await exists(path.join(elsewhere, 'site'))).toBe(false);
    expect(await exists(path.join(project, 'site', 'prerender-manifest.json'))).toBe(true);
  });
});
