// @ts-check
import { afterEach, describe, expect, it, vi } from 'vitest';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { run } from '../lib/cli/index.js';
import { readManifest } from './crawl-helpers.js';
import { BIN, runNode } from './helpers/cli.js';
import { useFixtureSite } from './helpers/fixtures.js';

const STACK = /^\s+at .+:\d+/m;

/** @type {import('./helpers/fixtures.js').FixtureSite} */
let site;
const dirs = useFixtureSite((started) => { site = started; });
afterEach(() => {
  vi.useRealTimers();
  site.openGate();
});

/**
 * A writable that keeps what it is given; `isTTY` to pose as a terminal.
 * @param {{ tty?: boolean }} [options]
 */
function capture({ tty = false } = {}) {
  /** @type {string[]} */
  const chunks = [];
  const stream = /** @type {Writable & { isTTY?: boolean, columns?: number }} */ (new Writable({
    write(chunk, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  }));
  if (tty) {
    stream.isTTY = true;
    stream.columns = 200;
  }
  return { stream, text: () => chunks.join(''), chunks };
}

/**
 * Run the CLI in-process.
 * @param {string[]} argv
 * @param {{ tty?: boolean, signal?: AbortSignal }} [options]
 */
async function cli(argv, options = {}) {
  const stdout = capture({ tty: options.tty });
  const stderr = capture();
  const code = await run(argv, { stdout: stdout.stream, stderr: stderr.stream, env: {}, signal: options.signal, cwd: await cwd() });
  return { code, stdout: stdout.text(), stderr: stderr.text(), stdoutChunks: stdout.chunks };
}

/** An empty working directory, so that no config file is picked up. */
let emptyCwd = '';
async function cwd() {
  emptyCwd ||= await dirs.make('prerender-cwd-');
  return emptyCwd;
}

async function outDir() {
  return path.join(await dirs.make(), 'out');
}

/**
 * Spawn the real bin in the empty working directory; killed after `limitMs` (60 s by default).
 * @param {string[]} args
 * @param {{ onSpawn?: (child: import('node:child_process').ChildProcess) => void, limitMs?: number }} [options]
 */
async function spawnBin(args, options = {}) {
  return runNode([BIN, ...args], { cwd: await cwd(), ...options });
}

describe('exit status and summary', () => {
  it('0 when every in-scope page succeeded; a summary on stdout', async () => {
    const out = await outDir();
    const { code, stdout, stderr } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', out, '--retries', '0', '--progress-interval', '0']);
    expect(stderr).toBe(''); // no progress line: a busy machine may take 10 s
    expect(code).toBe(0);
    expect(stdout).toMatch(/Wrote 5 pages to .* in \d+\.\d s/);
    expect(stdout).toContain(`Manifest: ${path.join(out, 'prerender-manifest.json')}`);
    expect(stdout).not.toMatch(/\r|\x1b\[/); // no progress line off a terminal
    expect((await readManifest(out)).pages).toHaveLength(5);
  });

  it('1 when a page failed: the rest is written, the summary names the failures and why', async () => {
    const out = await outDir();
    const { code, stdout } = await cli(['crawl', site.url('/errors/index.asp'), '-o', out, '--retries', '1']);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^2 failed:$/m);
    expect(stdout).toContain(`${site.url('/errors/500.asp')}  HTTP 500`);
    expect(stdout).toContain(`${site.url('/errors/404.asp')}  HTTP 404`);
    expect(stdout).toContain(`linked from ${site.url('/errors/index.asp')}`);
    const manifest = await readManifest(out);
    expect(manifest.errors.map((error) => error.url).sort()).toEqual([site.url('/errors/404.asp'), site.url('/errors/500.asp')]);
    expect(manifest.pages.length).toBeGreaterThanOrEqual(6);
  });

  it('warnings are counted and the first few shown', async () => {
    const out = await outDir();
    const { code, stdout } = await cli(['crawl', site.url('/names/index.asp'), '-o', out, '-x', '/names/nul.asp']);
    expect(code).toBe(0);
    const manifest = await readManifest(out);
    expect(stdout).toContain(`${manifest.warnings.length} warnings:`);
    expect(stdout).toMatch(/unsafe file name|collision/);
    expect(stdout).toContain('see "warnings" in the manifest');
  });

  it('--json: one machine-readable line on stdout, nothing else', async () => {
    const out = await outDir();
    const { code, stdout, stderr } = await cli(['crawl', site.url('/errors/ok.asp'), '-o', out, '--json', '--retries', '0'], { tty: true });
    expect(code).toBe(1);
    expect(stderr).toBe('');
    expect(stdout.endsWith('\n')).toBe(true);
    expect(stdout.trim().split('\n')).toHaveLength(1);
    const summary = JSON.parse(stdout);
    expect(summary).toMatchObject({ out, pages: 1, failed: 1, interrupted: false });
    expect(summary.manifest).toBe(path.join(out, 'prerender-manifest.json'));
    expect(summary.failures).toEqual([expect.objectContaining({ url: site.url('/errors/500.asp'), status: 500, referrers: [site.url('/errors/ok.asp')] })]);
  });

  it('--quiet: nothing on stdout, the exit status still tells', async () => {
    const out = await outDir();
    const { code, stdout, stderr } = await cli(['crawl', site.url('/errors/ok.asp'), '-o', out, '--quiet', '--retries', '0'], { tty: true });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe('');
    expect(existsSync(path.join(out, 'prerender-manifest.json'))).toBe(true);
  });

  it('options reach the crawl: scope, limits, timeout, retries, assets, dynamic base', async () => {
    const out = await outDir();
    const { code } = await cli(['crawl', site.url('/infodir/'), '-o', out, '-i', '/infodir/*.asp', '-x', '/infodir/private/', '/*?lang=', '-c', '2', '--quiet']);
    expect(code).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.scope).toEqual({ include: [site.url('/infodir/*.asp')], exclude: [site.url('/infodir/private/'), site.url('/*?lang=')] });
    expect(manifest.pages).toHaveLength(3);

    const limited = await outDir();
    // --max-pages reached: in-scope pages were not written, so exit 1, and the summary says which option to raise.
    const maxed = await cli(['crawl', site.url('/trap/cal.asp?d=0'), '-o', limited, '--max-pages', '4', '-c', '1']);
    expect(maxed.code).toBe(1);
    expect(maxed.stdout).toMatch(/in-scope URLs were not crawled: --max-pages 4 reached; raise --max-pages to crawl them/);
    expect((await readManifest(limited)).pages).toHaveLength(4);

    site.reset();
    const hang = await outDir();
    const timedOut = await cli(['crawl', site.url('/errors/hang.asp'), '-o', hang, '--timeout', '200', '--retries', '0', '--json']);
    expect(timedOut.code).toBe(1);
    expect(JSON.parse(timedOut.stdout).failures[0].message).toMatch(/200 ms/);
    expect(site.count('/errors/hang.asp')).toBe(1);

    const assets = await outDir();
    expect((await cli(['crawl', site.url('/assets/index.asp'), '-o', assets, '--assets', '--quiet', '--dynamic-base', 'http://dyn.invalid/'])).code).toBe(0); // missing.png answers 404: a requisite the site lacks, no failure by default (--requisite-errors warn)
    const assetManifest = await readManifest(assets);
    expect(assetManifest.pages.map((page) => page.file)).toContain('assets/css/site.css');

    const dyn = await outDir();
    await cli(['crawl', site.url('/dyn/index.asp'), '-o', dyn, '--quiet', '--dynamic-base', 'http://dyn.invalid/']);
    const dynManifest = await readManifest(dyn);
    const { readFile } = await import('node:fs/promises');
    const html = await readFile(path.join(dyn, dynManifest.pages.find((page) => page.url.endsWith('/dyn/index.asp'))?.file ?? ''), 'utf8');
    expect(html).toContain('href="http://dyn.invalid/cart.asp?add=1&amp;qty=2#c"');

    const capped = await outDir();
    const big = await cli(['crawl', site.url('/errors/chunked-index.asp'), '-o', capped, '--max-page-bytes', '4k', '--json', '--retries', '0']);
    expect(big.code).toBe(1);
    expect(JSON.parse(big.stdout).failures.map((/** @type {any} */ f) => f.url).sort()).toEqual([site.url('/errors/500.asp'), site.url('/errors/big-chunked.asp')]);
  });

  it('--placeholders ssi is passed through', async () => {
    const out = await outDir();
    expect((await cli(['crawl', site.url('/prices/item.asp'), '-o', out, '--placeholders', 'ssi', '--quiet'])).code).toBe(0);
    expect((await readManifest(out)).placeholderMode).toBe('ssi');
  });
});

describe('options checked before the crawl', () => {
  it('an SSI price path that cannot be used stops the run before any request', async () => {
    const out = await outDir();
    const { code, stderr } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', out, '--placeholders', 'ssi', '--price-path', '/price.asp?x=1']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/--price-path/);
    expect(site.log).toEqual([]);
    expect(existsSync(path.join(out, 'prerender-manifest.json'))).toBe(false);
  });

  it('an empty --out (-o "$OUT" with OUT unset) is a usage error, not the working directory', async () => {
    for (const command of ['crawl', 'preview']) {
      const { code, stderr } = await cli([command, site.url('/infodir/about.asp'), '-o', '']);
      expect(code).toBe(2);
      expect(stderr).toMatch(/--out must be a directory, got "" \(an unset variable\?\)/);
    }
    expect(site.log).toEqual([]);
    expect(await readdir(await cwd())).toEqual([]);
  });
});

describe('progress line', () => {
  /**
   * Crawl /slow/ with its pages held until the test has seen what it wants;
   * the progress timer is faked so the test decides when it ticks.
   * @param {string[]} flags
   * @param {{ tty: boolean, command?: string }} options
   */
  async function slowCrawl(flags, { tty, command = 'crawl' }) {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    site.closeGate();
    const out = await outDir();
    const stdout = capture();
    const stderr = capture({ tty }); // progress goes to stderr when it is a terminal
    let seenWhileRunning = '';
    const onHeld = () => {
      site.events.off('held', onHeld);
      vi.advanceTimersByTime(1000); // five ticks of the progress timer, mid-crawl
      seenWhileRunning = stderr.text();
      site.openGate();
    };
    site.events.on('held', onHeld);
    const code = await run([command, site.url('/slow/index.asp?n=3'), ...(command === 'crawl' ? ['-o', out] : []), '-c', '2', ...flags], { stdout: stdout.stream, stderr: stderr.stream, env: {}, cwd: await cwd() });
    site.events.off('held', onHeld);
    return { code, seenWhileRunning, stdout: stdout.text(), stderr: stderr.text() };
  }

  it('stderr a terminal: a live line on stderr with done, queued, failed, pages/s and elapsed, cleared at the end; stdout keeps only the summary', async () => {
    const { code, seenWhileRunning, stdout, stderr } = await slowCrawl([], { tty: true });
    expect(code).toBe(0);
    expect(seenWhileRunning).toMatch(/\r1 fetched · [1-3] queued · 0 failed · \d+ pages\/s · \d+\.\d s\x1b\[K/);
    expect(stderr.endsWith('\r\x1b[K')).toBe(true);
    expect(stdout).toMatch(/^Wrote 4 pages/);
    expect(stdout).not.toMatch(/\r|\x1b\[/);
  });

  it('--json with stderr a terminal: the progress still shows on stderr, stdout is the JSON alone', async () => {
    const { code, seenWhileRunning, stdout } = await slowCrawl(['--json'], { tty: true });
    expect(code).toBe(0);
    expect(seenWhileRunning).toMatch(/\r1 fetched/);
    expect(JSON.parse(stdout)).toMatchObject({ pages: 4, failed: 0 });
  });

  it('not a terminal: no progress, just the summary', async () => {
    const { code, seenWhileRunning, stdout } = await slowCrawl([], { tty: false });
    expect(code).toBe(0);
    expect(seenWhileRunning).toBe('');
    expect(stdout).not.toMatch(/\r|\x1b\[/);
    expect(stdout).toMatch(/^Wrote 4 pages/);
  });

  it('preview too: the progress line on stderr while it discovers, the plan alone on stdout', async () => {
    const { code, seenWhileRunning, stdout, stderr } = await slowCrawl([], { tty: true, command: 'preview' });
    expect(code).toBe(0);
    expect(seenWhileRunning).toMatch(/\r1 fetched · [1-3] queued/);
    expect(stderr.endsWith('\r\x1b[K')).toBe(true);
    expect(stdout).not.toMatch(/\r|\x1b\[/);
    expect(stdout).toMatch(/Plan: 4 pages in scope would be written/);
  });

  it('--quiet on a terminal: nothing at all', async () => {
    const { code, seenWhileRunning, stdout } = await slowCrawl(['--quiet'], { tty: true });
    expect(code).toBe(0);
    expect(seenWhileRunning).toBe('');
    expect(stdout).toBe('');
  });
});

describe('usage errors: exit 2, one line, no stack trace', () => {
  it.each([
    [['crawl', 'not a url'], /root must be an absolute http\(s\) URL/],
    [['crawl', 'ftp://h/x'], /root must be an absolute http\(s\) URL/],
    [['crawl', 'http://127.0.0.1:9/', '-c', 'abc'], /--concurrency must be a whole number/],
    [['crawl', 'http://127.0.0.1:9/', '-c', '0'], /--concurrency must be at least 1/],
    [['crawl', 'http://127.0.0.1:9/', '--max-pages', '1.5'], /--max-pages must be a whole number/],
    [['crawl', 'http://127.0.0.1:9/', '--timeout', '-5'], /--timeout/],
    [['crawl', 'http://127.0.0.1:9/', '--retries', 'lots'], /--retries must be a whole number/],
    [['crawl', 'http://127.0.0.1:9/', '--max-page-bytes', '10x'], /--max-page-bytes/],
    [['crawl', 'http://127.0.0.1:9/', '--dynamic-base', 'not-a-url'], /--dynamic-base must be an absolute http\(s\) URL/],
    [['crawl', 'http://127.0.0.1:9/', '-i', 'st/dir.asp'], /"st\/dir\.asp"/],
    [['crawl', 'http://127.0.0.1:9/', '--placeholders', 'ssi', '--price-path', '/price.asp?x=1'], /--price-path cannot be used with --placeholders ssi/],
    [['crawl', 'http://127.0.0.1:9/', '--placeholders', 'esi', '--price-path', '/a b'], /--price-path cannot be used with --placeholders esi/],
    [['crawl', '-i', '/a', '/b', 'http://127.0.0.1:9/'], /no root URL: "http:\/\/127\.0\.0\.1:9\/" was read as one more value of --include.*give the roots first.*"--"/],
    [['crawl', 'http://127.0.0.1:9/', '--name', '/a?id=*'], /--name takes a pattern and a template each time/],
    [['crawl', 'http://127.0.0.1:9/', '--name', '/a?id=*', '{query}.html'], /unknown placeholder \{query\}/],
    [['crawl', 'http://127.0.0.1:9/', '--name', '/a?id=*', '{query.id.html'], /--name template "\{query\.id\.html" has a brace that opens or closes no placeholder/],
    [['crawl', 'http://127.0.0.1:9/', '--name', '/a?id=*', 'x}.html'], /has a brace that opens or closes no placeholder/],
    [['crawl', '--name', '/a?id=*', '{query.id}.html', 'http://127.0.0.1:9/'], /no root URL: "http:\/\/127\.0\.0\.1:9\/" was read as one more value of --name.*"--"/],
    [['crawl', 'http://127.0.0.1:9/', '--name', '/a?id=*', 'x.html', 'http://127.0.0.1:9/b'], /--name takes a pattern and a template each time.*if "http:\/\/127\.0\.0\.1:9\/b" is a root, give the roots first/],
    [['crawl', 'http://127.0.0.1:9/', '--name', '/a?id=*', 'http://127.0.0.1:9/b'], /--name template "http:\/\/127\.0\.0\.1:9\/b" is a URL: a template is a file name/],
    [['crawl', 'http://127.0.0.1:9/', '--rate', 'fast'], /--rate must be a number/],
    [['crawl', 'http://127.0.0.1:9/', '--assets-origins', 'cdn.example'], /--assets-origins must be an absolute http\(s\) URL/],
  ])('%j', async (argv, message) => {
    const out = await outDir();
    const { code, stdout, stderr } = await cli([...argv, '-o', out]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^prerender: /);
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(STACK);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(existsSync(out)).toBe(false); // nothing created on a usage error
    expect(site.log).toEqual([]);
  });

  it.each([
    [['crawl', 'http://127.0.0.1:9/', '--bogus'], /unknown option '--bogus'/],
    [['crawl'], /root/],
    [['crawl', 'http://127.0.0.1:9/', '--placeholders', 'xml'], /Allowed choices are filter, ssi, esi/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['frobnicate', '--help'], /unknown command 'frobnicate'/],
  ])('%j (commander)', async (argv, message) => {
    const { code, stdout, stderr } = await cli(argv);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^prerender: /);
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(STACK);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('an output path that is a file: exit 2, an explanation, no stack trace', async () => {
    const dir = await dirs.make();
    const file = path.join(dir, 'not-a-dir');
    await writeFile(file, 'x');
    const { code, stderr } = await cli(['crawl', site.url('/infodir/about.asp'), '-o', file]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^prerender: /);
    expect(stderr).not.toMatch(STACK);
  });

  it('--help and --version exit 0 and describe the options', async () => {
    const help = await cli(['crawl', '--help']);
    expect(help.code).toBe(0);
    for (const flag of ['--out', '--include', '--exclude', '--concurrency', '--max-pages', '--timeout', '--retries', '--dynamic-base', '--assets', '--json', '--quiet', '--max-page-bytes']) {
      expect(help.stdout).toContain(flag);
    }
    const version = await cli(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('Ctrl-C', () => {
  it('in-process: the signal stops the crawl, the manifest is written, exit 130', async () => {
    site.closeGate();
    const controller = new AbortController();
    const onHeld = () => controller.abort();
    site.events.once('held', onHeld);
    const out = await outDir();
    const { code, stdout } = await cli(['crawl', site.url('/slow/index.asp?n=3'), '-o', out, '-c', '1'], { signal: controller.signal });
    expect(code).toBe(130);
    expect(stdout).toMatch(/^Interrupted: wrote 1 page/);
    const manifest = await readManifest(out);
    expect(manifest.interrupted).toBe(true);
    expect(manifest.pages.map((page) => page.url)).toEqual([site.url('/slow/index.asp?n=3')]);
  });
});

describe('the real bin', () => {
  it('a usage error: exit 2, one line on stderr, no stack trace', async () => {
    const { code, stdout, stderr } = await spawnBin(['crawl', 'not a url']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe('prerender: root must be an absolute http(s) URL, got "not a url"\n');
  });

  it('a crawl with --json: exit 0, the summary, the manifest', async () => {
    const out = await outDir();
    const { code, stdout, stderr } = await spawnBin(['crawl', site.url('/infodir/about.asp'), '-o', out, '--json', '--progress-interval', '0']);
    expect(stderr).toBe(''); // no progress line: a busy machine may take 10 s
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ pages: 5, failed: 0, interrupted: false });
    expect((await readManifest(out)).pages).toHaveLength(5);
  });

  it('a crawl with failures: exit 1, quiet', async () => {
    const out = await outDir();
    const { code, stdout } = await spawnBin(['crawl', site.url('/errors/ok.asp'), '-o', out, '--quiet', '--retries', '0']);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect((await readManifest(out)).errors.map((error) => error.url)).toEqual([site.url('/errors/500.asp')]);
  });

  it('a body whose Content-Length is over --max-page-bytes: a recorded failure, exit 1, no crash', async () => {
    const out = await outDir();
    const { code, stderr } = await spawnBin(['crawl', site.url('/errors/big-index.asp'), '-o', out, '--max-page-bytes', '4096', '--retries', '0', '--quiet']);
    expect(stderr).not.toMatch(STACK);
    expect(code).toBe(1);
    expect((await readManifest(out)).errors.map((error) => error.url)).toContain(site.url('/errors/big.asp'));
  });

  it('a file and a directory of the same name (/loop/setup, /loop/setup/): both written, no hang', async () => {
    const out = await outDir();
    const { code, signal, stderr } = await spawnBin(['crawl', site.url('/loop/index.asp'), '-o', out, '--quiet']);
    expect(signal).toBeNull(); // not killed by the guard
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const manifest = await readManifest(out);
    expect(manifest.pages).toHaveLength(3);
    expect(manifest.warnings.some((warning) => /collision/.test(warning.message))).toBe(true);
    const files = manifest.pages.map((page) => page.file.toLowerCase());
    expect(new Set(files).size).toBe(3);
  });

  it('SIGINT: stops cleanly, writes the manifest, exit 130', async () => {
    site.closeGate();
    const out = await outDir();
    const { code, stderr } = await spawnBin(['crawl', site.url('/slow/index.asp?n=3'), '-o', out, '-c', '1', '--quiet'], {
      onSpawn: (child) => site.events.once('held', () => child.kill('SIGINT')),
    });
    expect(code).toBe(130);
    expect(stderr).toContain('stopping');
    expect(stderr).not.toMatch(STACK);
    const manifest = await readManifest(out);
    expect(manifest.interrupted).toBe(true);
    expect(manifest.pages).toHaveLength(1);
  });
});

describe('serve --port', () => {
  it.each(['', ' ', '0x1F90', '1e3', '-1', '65536', '80.5'])('refuses %j: exit 2, one line (never a random port for an empty $PORT)', async (port) => {
    const { code, stderr } = await cli(['serve', await cwd(), '--port', port]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^prerender: --port must be a whole number from 0 to 65535, got /);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe('a root that redirects out of scope', () => {
  it('a re-crawl whose root now answers 404, or moved out of scope, removes nothing: the run is not complete', async () => {
    let mode = 'up';
    const server = http.createServer((req, res) => {
      if (req.url === '/' && mode === 'moved') { res.writeHead(301, { location: 'https://127.0.0.1:9/' }); return res.end(); }
      if (req.url === '/' && mode === 'gone') { res.writeHead(404); return res.end(); }
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(req.url === '/' ? '<a href="/a">a</a><a href="/b">b</a>' : `<p>${req.url}</p>`);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    try {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      const out = path.join(await dirs.make('prerender-root-lost-'), 'out');
      const crawl = async (/** @type {string[]} */ more = ['--json']) => cli(['crawl', `http://127.0.0.1:${port}/`, '-o', out, '--prune-max', '100%', '--retries', '0', ...more]);
      expect(JSON.parse((await crawl()).stdout).pages).toBe(3);
      for (const lost of ['gone', 'moved']) {
        mode = lost;
        const run = await crawl();
        const again = JSON.parse(run.stdout);
        expect(again, lost).toMatchObject({ complete: false, rootLost: true, churn: expect.objectContaining({ removed: 0 }) });
        expect(again.kept, lost).toBeGreaterThanOrEqual(2);
        expect(run.code, lost).toBe(1); // not a success: the site was not crawled
        expect(existsSync(path.join(out, 'a.html')), lost).toBe(true);
        // The summary says why nothing was removed.
        const said = await crawl([]);
        expect(said.code, lost).toBe(1);
        expect(said.stdout, lost).toMatch(/Nothing was removed, since this crawl was not complete \(a root answered 404\/410 or left the scope[^)]*\): the files of \d+ pages? of the last crawl it did not reach, or that are gone, are kept/);
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('is said (warning ROOT_REDIRECT, with the URL to crawl instead): a run that writes nothing does not look like a success', async () => {
    const server = http.createServer((_req, res) => { res.writeHead(301, { location: 'https://127.0.0.1:9/' }); res.end(); });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    try {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      const dir = await dirs.make('prerender-root-redirect-');
      const { stdout, code } = await cli(['crawl', `http://127.0.0.1:${port}/`, '-o', path.join(dir, 'out')]);
      expect(code).toBe(1);
      expect(stdout).toMatch(/the root http:\/\/127\.0\.0\.1:\d+\/ redirects \(301\) to https:\/\/127\.0\.0\.1:9\/, outside the crawl's scope: nothing under it is crawled; crawl https:\/\/127\.0\.0\.1:9\/ instead/);
      const manifest = await readManifest(path.join(dir, 'out'));
      expect(manifest.warnings.map((/** @type {{ code: string }} */ warning) => warning.code)).toEqual(['ROOT_REDIRECT']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('a failure\'s referrers', () => {
  it('are listed in URL order, not in the order the crawl found them', async () => {
    const server = http.createServer((req, res) => {
      if (req.url === '/') return res.writeHead(200, { 'content-type': 'text/html' }).end('<a href="/p3">3</a><a href="/p2">2</a><a href="/p1">1</a>');
      if (/^\/p\d$/.test(req.url ?? '')) return res.writeHead(200, { 'content-type': 'text/html' }).end('<a href="/missing">gone</a>');
      res.writeHead(404).end();
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    try {
      const base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
      const out = await outDir();
      // One request at a time: the crawl finds /p3 first.
      const { stdout } = await cli(['crawl', `${base}/`, '-o', out, '--json', '-c', '1', '--retries', '0']);
      const [failure] = JSON.parse(stdout).failures;
      expect(failure.referrers).toEqual([`${base}/p1`, `${base}/p2`, `${base}/p3`]);
      expect((await readManifest(out)).errors[0].referrers).toEqual(failure.referrers);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('URL lists and sitemaps that give nothing, or a great deal', () => {
  it('Ctrl-C while a sitemap is still being read exits 130, saying nothing was crawled', async () => {
    /** @type {import('node:http').ServerResponse[]} */
    const held = [];
    const server = http.createServer((_req, res) => { held.push(res); }); // never answers
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
    try {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      const controller = new AbortController();
      const dir = await dirs.make('prerender-sitemap-');
      const running = cli(['crawl', '--sitemap', `http://127.0.0.1:${port}/sitemap.xml`, '-o', path.join(dir, 'out')], { signal: controller.signal });
      for (let i = 0; i < 3000 && held.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(held.length).toBe(1);
      controller.abort();
      const { code, stderr } = await running;
      expect(code).toBe(130);
      expect(stderr).toBe('prerender: interrupted before any page was crawled; nothing was written\n');
      expect(existsSync(path.join(dir, 'out'))).toBe(false);
    } finally {
      for (const res of held) res.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('an empty --urls list is "nothing to crawl": exit 2, one line, no stack trace', async () => {
    const dir = await dirs.make('prerender-urls-');
    const list = path.join(dir, 'urls.txt');
    await writeFile(list, '# nothing here\n');
    const { code, stderr } = await cli(['crawl', '--urls', list, '-o', path.join(dir, 'out')]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^prerender: nothing to crawl: the --urls list is empty\n$/);
  });

});
