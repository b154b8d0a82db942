// @ts-check
/**
 * --render against hostile pages, through the real Chromium: pages that
 * allocate memory without end, and the profile a SIGKILLed render crawl
 * leaves behind. Skipped only outside CI when no browser is installed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Crawler } from '../../lib/crawler/index.js';
import { findBrowser, processesUsing } from '../../lib/render/browser.js';
import { OWNER_FILE, PROFILE_PREFIX, ownerRecord } from '../../lib/render/profiles.js';
import { privateBytes, processTree, startTicks } from '../../lib/runtime/processes.js';
import { serveSite, tempDirs } from '../crawl-helpers.js';
import { startCli, until } from '../helpers/processes.js';

const IN_CI = process.env.CI === 'true';
/** @returns {string | null} */
function installedBrowser() {
  try {
    return findBrowser({});
  } catch {
    return null;
  }
}
const BROWSER = installedBrowser();
const describeRender = BROWSER || IN_CI ? describe : describe.skip;
if (!BROWSER && !IN_CI) console.warn('render fault tests skipped: no chromium installed (apt-get install chromium); in CI they run');

/** Pages that allocate until stopped: JavaScript objects in a loop that never yields, and array buffers (outside V8's heap). */
const BOMBS = {
  '/st/objects.js': 'const keep = []; for (;;) keep.push({ a: Math.random(), b: [1, 2, 3] });',
  '/st/buffers.js': 'const keep = []; (function grow() { for (let i = 0; i < 4; i++) keep.push(new Uint8Array(8 << 20).fill(1)); setTimeout(grow, 0); })();',
};

/** Renderers of the browsers started under this process, with their private memory. */
function renderers() {
  /** @type {Map<number, number>} */
  const found = new Map();
  for (const pid of processTree(process.pid).slice(1)) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('--type=renderer')) continue;
    } catch {
      continue;
    }
    found.set(pid, privateBytes(pid) ?? 0);
  }
  return found;
}

describeRender('--render against hostile pages (real Chromium)', () => {
  /** @type {Awaited<ReturnType<typeof serveSite>>} */
  let site;
  /** @type {Map<string, number>} requests by path */
  const asked = new Map();
  const dirs = tempDirs();
  beforeAll(async () => {
    site = await serveSite((req, res) => {
      const url = String(req.url);
      asked.set(url, (asked.get(url) ?? 0) + 1);
      if (url in BOMBS) {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        res.end(BOMBS[/** @type {keyof typeof BOMBS} */ (url)]);
        return;
      }
      const script = { '/st/objects.asp': '/st/objects.js', '/st/buffers.asp': '/st/buffers.js' }[url];
      // A bomb page is never ready: only the memory bound (or the timeout) ends its render.
      const body = script
        ? `<!doctype html><title>bomb</title><p>bomb</p><script>window.prerenderReady = false</script><script src="${script}"></script>`
        : url === '/st/never.asp'
          ? '<!doctype html><title>never ready</title><script>window.prerenderReady = false</script>'
          : url === '/st/index.asp'
          ? '<!doctype html><title>index</title><a href="objects.asp">o</a> <a href="buffers.asp">b</a> <a href="one.asp">1</a> <a href="two.asp">2</a>'
          : `<!doctype html><title>page</title><p id="built"></p><script>document.getElementById('built').textContent = 'built ' + location.pathname</script>`;
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(body);
    });
  });
  afterAll(async () => {
    await site?.close();
    await dirs.cleanup();
  });

  it('a page that allocates without end fails with RENDER_MEMORY at --render-memory, once, and the other pages are written', async () => {
    const out = await dirs.make('prerender-render-memory-');
    const bound = 192;
    const crawler = new Crawler({
      roots: [`${site.base}/st/index.asp`], include: ['/st/'], out, render: true, browser: /** @type {string} */ (BROWSER ?? 'chromium'),
      retries: 0, renderConcurrency: 2, renderWait: ['load'], renderTimeout: 90_000, renderMemory: bound,
    });
    /** @type {{ url: string, code?: string, message: string }[]} */
    const failures = [];
    /** @type {string[]} */
    const profiles = [];
    crawler.on('failure', (event) => failures.push(event));
    crawler.on('browser', (event) => profiles.push(event.profile));
    // The most any renderer held, read as often as the test's own process gets to.
    let most = 0;
    const watch = setInterval(() => {
      for (const bytes of renderers().values()) most = Math.max(most, bytes);
    }, 50);
    let result;
    try {
      result = await crawler.run();
    } finally {
      clearInterval(watch);
    }
    expect(failures.map((f) => [new URL(f.url).pathname, f.code]).sort()).toEqual([['/st/buffers.asp', 'RENDER_MEMORY'], ['/st/objects.asp', 'RENDER_MEMORY']]);
    for (const failure of failures) expect(failure.message).toMatch(new RegExp(`^the page took \\d+ MiB of memory, past --render-memory ${bound}: its renderer was killed`));
    // Not rendered again: each bomb's script was asked for once.
    expect([asked.get('/st/objects.js'), asked.get('/st/buffers.js')]).toEqual([1, 1]);
    expect(result.pages).toBe(3);
    expect(readFileSync(path.join(out, 'st/two.asp.html'), 'utf8')).toContain('built /st/two.asp');
    // Killed within a reading or two of the bound: far from V8's default heap limit (4 GiB here).
    expect(most).toBeLessThan(2 * bound * 1048576);
    for (const profile of profiles) expect(processesUsing(profile)).toEqual([]);
  });

  it('the next render crawl removes the profile a SIGKILLed one left, and never a live owner\'s', async () => {
    const tmp = await dirs.make('prerender-render-tmp-');
    const env = { ...process.env, TMPDIR: tmp };
    // A render crawl killed while a page renders (never.asp is never ready: the render waits for the kill).
    const killed = startCli(['crawl', `${site.base}/st/never.asp`, '-i', '/st/never.asp', '-o', path.join(tmp, 'out1'), '-q', '--render', '--render-wait', 'load',
      '--render-timeout', '600000'], { env, limitMs: 120_000 });
    const profileOf = async () => (await readdir(tmp)).filter((name) => name.startsWith(PROFILE_PREFIX)).map((name) => path.join(tmp, name));
    await until(async () => (await profileOf()).some((profile) => processesUsing(profile).length > 0), 90_000);
    const [left] = await profileOf();
    killed.child.kill('SIGKILL');
    await killed.done;
    expect(existsSync(left)).toBe(true);

    // A live owner (this process), and a pid that runs but was started at another time (reused).
    const live = path.join(tmp, `${PROFILE_PREFIX}live00`);
    const reused = path.join(tmp, `${PROFILE_PREFIX}reuse0`);
    await mkdir(live);
    await mkdir(reused);
    await writeFile(path.join(live, OWNER_FILE), JSON.stringify(ownerRecord()));
    await writeFile(path.join(reused, OWNER_FILE), JSON.stringify({ ...ownerRecord(), start: String(Number(startTicks(process.pid)) + 1) }));
    // No record: not known to be ours, left alone.
    const unknown = path.join(tmp, `${PROFILE_PREFIX}nobody`);
    await mkdir(unknown);

    const next = startCli(['crawl', `${site.base}/st/one.asp`, '-i', '/st/one.asp', '-o', path.join(tmp, 'out2'), '-q', '--render'], { env, limitMs: 120_000 });
    const { code, stderr } = await next.done;
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(existsSync(left)).toBe(false);
    expect(processesUsing(left)).toEqual([]);
    expect(existsSync(reused)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(unknown)).toBe(true);
    expect((await profileOf()).sort()).toEqual([live, unknown].sort());
  });
});
