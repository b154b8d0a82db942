// @ts-check
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { crawl } from '../lib/index.js';
import { run } from '../lib/cli.js';
import { scanHtml } from '../lib/html/scan.js';
import { headerFileName } from '../lib/naming.js';
import { renderDocument } from '../lib/page.js';
import { Scope } from '../lib/scope.js';
import { startSite } from '../fixtures/site.js';
import { readManifest, tempDirs } from './crawl-helpers.js';

/**
 * Failing tests for bugs found in lib/ (see the report). Each test states the
 * contract; when lib/ is fixed, move the test to the file of its concern.
 * Hangs and crashes run in a child process or a worker, with a bound.
 */

const BIN = fileURLToPath(new URL('../bin/prerender.js', import.meta.url));
const NAMING = pathToFileURL(fileURLToPath(new URL('../lib/naming.js', import.meta.url))).href;
const STACK = /^\s+at .+:\d+/m;

/** @type {Awaited<ReturnType<typeof startSite>>} */
let site;
const dirs = tempDirs();

beforeAll(async () => {
  site = await startSite();
});
afterAll(async () => {
  await site?.close();
  await dirs.cleanup();
});
beforeEach(() => {
  site.reset();
});

/**
 * @param {string[]} args
 * @param {number} limitMs the child is killed after this long
 */
async function spawnBin(args, limitMs) {
  const cwd = await dirs.make('prerender-cwd-');
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  let killed = false;
  const guard = setTimeout(() => { killed = true; child.kill('SIGKILL'); }, limitMs);
  const [code] = await once(child, 'close');
  clearTimeout(guard);
  return { code, killed, stdout, stderr };
}

/**
 * Claim names in a fresh FileRegistry inside a worker, so that an endless
 * loop can be stopped.
 * @param {string[]} names
 * @returns {Promise<{ file: string }[] | 'hung' | { error: string }>}
 */
async function claimInWorker(names) {
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.naming).then(({ FileRegistry }) => {
      const registry = new FileRegistry();
      parentPort.postMessage(workerData.names.map((name, i) => registry.claim(name, 'http://h/' + i)));
    });
  `, { eval: true, workerData: { naming: NAMING, names } });
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  try {
    return await Promise.race([
      once(worker, 'message').then(([message]) => message),
      once(worker, 'error').then(([error]) => ({ error: String(error?.message ?? error) })).catch((error) => ({ error: String(error?.message ?? error) })),
      new Promise((resolve) => { timer = setTimeout(() => resolve('hung'), 3000); }),
    ]);
  } finally {
    clearTimeout(timer);
    await worker.terminate();
  }
}

describe('bug: a Content-Length over --max-page-bytes crashes the process', () => {
  it('is a recorded failure: exit 1, the manifest lists it, no stack trace', async () => {
    const out = path.join(await dirs.make(), 'out');
    const { code, killed, stderr } = await spawnBin(['crawl', site.url('/errors/big-index.asp'), '-o', out, '--max-page-bytes', '4096', '--retries', '0', '--quiet'], 15_000);
    expect(killed).toBe(false);
    expect(stderr).not.toMatch(STACK);
    expect(code).toBe(1);
    const manifest = await readManifest(out);
    expect(manifest.errors.map((error) => error.url)).toContain(site.url('/errors/big.asp'));
  });
});

describe('bug: FileRegistry cannot place a name whose directory is already a file (an endless loop, or an error that ends the crawl)', () => {
  it('a file, then a directory of the same name', async () => {
    const result = await claimInWorker(['x.html', 'x.html/index.html']);
    expect(result).not.toBe('hung');
    expect(result).not.toHaveProperty('error');
    const files = /** @type {{ file: string }[]} */ (result).map((claim) => claim.file.toLowerCase());
    expect(files[0]).toBe('x.html');
    expect(files[1].startsWith('x.html/')).toBe(false);
  });

  it('a name under the staging folder', async () => {
    const result = await claimInWorker(['.prerender-tmp/x.html']);
    expect(result).not.toBe('hung');
    expect(result).not.toHaveProperty('error');
    expect(/** @type {{ file: string }[]} */ (result)[0].file.startsWith('.prerender-tmp/')).toBe(false);
  });

  it('end to end: /loop/setup (no extension) and /loop/setup/ are both written, the collision recorded', async () => {
    const out = path.join(await dirs.make(), 'out');
    const { code, killed } = await spawnBin(['crawl', site.url('/loop/index.asp'), '-o', out, '--quiet'], 8000);
    expect(killed).toBe(false);
    expect(code).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.pages).toHaveLength(3);
    expect(manifest.warnings.some((warning) => /collision/.test(warning.message))).toBe(true);
  });
});

describe('bug: --max-pages counts a URL not crawled once per link to it', () => {
  it('three URLs, each linked twice, are three URLs not crawled', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [site.url('/trap/dup.asp')], out, maxPages: 1, retryDelay: 1 });
    expect(result.notCrawled).toBe(3);
    const manifest = await readManifest(out);
    expect(manifest.warnings.map((warning) => warning.message).join('\n')).toMatch(/: 3 more in-scope URLs/);
  });
});

describe('bug: the query of a link on a windows-1252 page is sent in UTF-8', () => {
  it('requests q.asp?w=caf%E9 as a browser would, not caf%C3%A9', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl({ roots: [site.url('/enc/query.asp')], out, retryDelay: 1 });
    expect(site.count('/enc/q.asp?w=caf%E9')).toBe(1);
    expect(site.count('/enc/q.asp?w=caf%C3%A9')).toBe(0);
  });
});

describe('bug: windows-1252 bytes 0x80-0x9F in URLs are read as C1 controls (Node 20.18.3+ TextDecoder)', () => {
  it('\\x80 is €, \\x93 and \\x94 are curly quotes', () => {
    const text = Buffer.from('<a href="prix\x80.asp?t=\x93a\x94">x</a>', 'latin1').toString('latin1');
    // the path is read in windows-1252; the query keeps the page's bytes, as a browser sends them
    expect(scanHtml(text, 'windows-1252').links[0].value).toBe('prix€.asp?t=%93a%94');
  });
});

describe('bug: entities decoded twice in a style attribute', () => {
  it('&amp;amp; in style="...url(...)" is &amp; once decoded', () => {
    const { links } = scanHtml('<div style="background:url(bg.png?a=1&amp;amp;b=2)"></div>');
    expect(links.map((link) => link.value)).toEqual(['bg.png?a=1&amp;b=2']);
  });
});

describe('bug: entities decoded inside <style>, a raw text element', () => {
  it('url(a.png?x=1&amp;y=2) in <style> is requested as written', () => {
    const { links } = scanHtml('<style>.a { background: url(a.png?x=1&amp;y=2) }</style>');
    expect(links.map((link) => link.value)).toEqual(['a.png?x=1&amp;y=2']);
  });
});

describe('bug: --dynamic-base turns some paths into other URLs', () => {
  /** @param {string} body */
  function rebase(body) {
    const origin = 'http://shop.example';
    return renderDocument({
      body: Buffer.from(body), type: 'html', charset: 'utf-8', placeholderMode: 'filter', pricePath: '/price',
      pageUrl: new URL(`${origin}/dyn/index.asp`), file: 'dyn/index.asp.html', targetFile: () => null,
      staticRoot: new URL(`${origin}/`), dynamicBase: new URL('http://dyn.invalid/base/'), crawlOrigins: new Set([origin]),
    }).body.toString();
  }

  it('a colon in the first path segment', () => {
    expect(rebase('<a href="/Special:Search?q=1">')).toBe('<a href="http://dyn.invalid/base/Special:Search?q=1">');
  });

  it('a path starting with //', () => {
    expect(rebase('<a href="//shop.example//double/x.asp">')).toBe('<a href="http://dyn.invalid/base//double/x.asp">');
  });

  it('end to end', async () => {
    const out = path.join(await dirs.make(), 'out');
    await crawl({ roots: [site.url('/dyn/index.asp')], out, dynamicBase: 'http://dyn.invalid/base/', retryDelay: 1, retries: 0 });
    const { readFile } = await import('node:fs/promises');
    const html = await readFile(path.join(out, 'dyn', 'index.asp.html'), 'utf8');
    expect(html).toContain('<a id="colon" href="http://dyn.invalid/base/Special:Search?q=1">');
  });
});

describe('bug: a bare-origin scope pattern matches other hosts and ports', () => {
  it('http://example.com does not cover http://example.com.evil.example/', () => {
    const scope = new Scope({ roots: ['http://h/'], include: ['http://example.com'] });
    expect(scope.decide('http://example.com/x').decision).toBe('crawl');
    expect(scope.decide('http://example.com.evil.example/x').decision).toBe('dynamic');
  });

  it('http://h:8080 does not cover http://h:80801/', () => {
    const scope = new Scope({ roots: ['http://h/'], include: ['http://h:8080'] });
    expect(scope.decide('http://h:8080/x').decision).toBe('crawl');
    expect(scope.decide('http://h:80801/x').decision).toBe('dynamic');
  });
});

describe('bug: a header name that fits in 255 bytes only before .html is added', () => {
  it('the written segment is at most 255 bytes, or the name is refused', () => {
    let name;
    try {
      name = headerFileName('a'.repeat(252), new URL('http://h/p.asp'), 'text/html');
    } catch (error) {
      expect(/** @type {Error} */ (error).message).toMatch(/unsafe file name/);
      return;
    }
    for (const segment of name.split('/')) expect(Buffer.byteLength(segment)).toBeLessThanOrEqual(255);
  });
});

describe('a raw NUL in a response header', () => {
  // Not HTTP: undici (like browsers) rejects the whole response. It is a
  // recorded failure with a clear message; a NUL that reaches the name
  // header (percent-encoded, or through another client) is refused by
  // headerFileName (see test/naming.test.js).
  it('is a recorded failure naming the protocol error, not a crash', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [site.url('/names/nul.asp')], out, retryDelay: 1, retries: 0 });
    expect(result.failed).toBe(1);
    expect(result.failures[0].message).toMatch(/Invalid header value char/);
    const manifest = await readManifest(out);
    expect(manifest.errors.map((error) => error.url)).toEqual([site.url('/names/nul.asp')]);
  });
});

describe('bug: some usage errors take two lines', () => {
  it.each([
    [['crawl', 'http://127.0.0.1:9/', '--bogus']],
    [['crawl', 'http://127.0.0.1:9/', '--placeholders', 'xml']],
  ])('%j: exit 2 with a one-line message', async (argv) => {
    /** @type {string[]} */
    const err = [];
    const sink = () => new Writable({ write(chunk, _encoding, callback) { err.push(chunk.toString()); callback(); } });
    const code = await run(argv, { stdout: sink(), stderr: sink(), env: {}, cwd: await dirs.make('prerender-cwd-') });
    expect(code).toBe(2);
    expect(err.join('').trimEnd().split('\n')).toHaveLength(1);
  });
});

describe('bug: directories are created through a symlink that leaves OUT', () => {
  it('nothing at all, not even an empty directory, is created outside OUT', async () => {
    const parent = await dirs.make();
    const out = path.join(parent, 'out');
    const elsewhere = path.join(parent, 'elsewhere');
    await mkdir(out);
    await mkdir(elsewhere);
    await symlink(elsewhere, path.join(out, 'infodir'), 'dir');
    await crawl({ roots: [site.url('/infodir/about.asp')], out, retryDelay: 1 });
    expect(await readdir(elsewhere)).toEqual([]);
  });
});
