// @ts-check
/** --render without a browser: which browser is found, its flags, what is blocked. */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBrowser, isHeadlessShell, launchFlags, unwrapped } from '../../lib/render/browser.js';
import { compileBlockPattern, createBlocklist } from '../../lib/render/block.js';
import { DEFAULT_RENDER_TABS, resolveCrawlOptions } from '../../lib/options/crawl-options.js';

describe('finding the browser', () => {
  /** @type {string} */
  let dir;
  /** @type {Record<string, string>} */
  const files = {};
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-browser-'));
    for (const name of ['given', 'puppeteer', 'chrome-path', 'chromium', 'google-chrome', 'not-executable']) {
      files[name] = path.join(dir, name);
      await writeFile(files[name], '#!/bin/sh\n');
      if (name !== 'not-executable') await chmod(files[name], 0o755);
    }
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('takes --browser, then PUPPETEER_EXECUTABLE_PATH, then CHROME_PATH, then the PATH in name order', () => {
    const env = { PUPPETEER_EXECUTABLE_PATH: files.puppeteer, CHROME_PATH: files['chrome-path'], PATH: dir };
    expect(findBrowser({ browser: files.given, env })).toBe(files.given);
    expect(findBrowser({ env })).toBe(files.puppeteer);
    expect(findBrowser({ env: { ...env, PUPPETEER_EXECUTABLE_PATH: undefined } })).toBe(files['chrome-path']);
    expect(findBrowser({ env: { PATH: dir } })).toBe(files.chromium); // chromium before google-chrome
  });

  it('prefers a headless shell on the PATH, and runs the binary a wrapper script runs without exec (Debian\'s)', async () => {
    const shells = path.join(dir, 'shells');
    const lib = path.join(dir, 'lib');
    await rm(shells, { recursive: true, force: true });
    for (const where of [shells, lib]) await mkdir(where, { recursive: true });
    const binary = path.join(lib, 'chromium-headless-shell');
    await writeFile(binary, '\x7fELF');
    await writeFile(path.join(shells, 'chromium-headless-shell'), `#!/bin/sh -e\n\n${binary} "$@"\n`);
    for (const file of [binary, path.join(shells, 'chromium-headless-shell')]) await chmod(file, 0o755);
    const PATH = [dir, shells].join(path.delimiter);
    expect(findBrowser({ env: { PATH } })).toBe(binary); // before chromium, which is first on the PATH
    expect(isHeadlessShell(binary)).toBe(true);
    expect(isHeadlessShell(files.chromium)).toBe(false);
    expect(findBrowser({ browser: path.join(shells, 'chromium-headless-shell'), env: {} })).toBe(binary); // --browser too
    // Run as found: a script whose binary is missing, has another name, or takes more than "$@"; a binary itself.
    const other = path.join(lib, 'other-shell');
    await writeFile(other, '\x7fELF');
    await chmod(other, 0o755);
    for (const command of ['/nowhere/chromium-headless-shell "$@"', `${other} "$@"`, `${binary} --no-sandbox "$@"`, `${binary} "$@"\n${binary} "$@"`]) {
      await writeFile(path.join(shells, 'chromium-headless-shell'), `#!/bin/sh\n${command}\n`);
      expect(findBrowser({ env: { PATH } }), command).toBe(path.join(shells, 'chromium-headless-shell'));
    }
    expect(unwrapped(binary)).toBe(binary);
  });

  it('says how to install one when none is found, or when the one named is not executable', () => {
    expect(() => findBrowser({ env: { PATH: '' } })).toThrow(/none was found.*apt-get install chromium/);
    expect(() => findBrowser({ browser: files['not-executable'], env: {} })).toThrow(/--browser .*not-executable: no executable there; .*apt-get install chromium/);
    expect(() => findBrowser({ env: { CHROME_PATH: path.join(dir, 'missing') } })).toThrow(/CHROME_PATH=.*no executable there/);
  });

  it('starts Chromium with the flags of the issue, and --no-sandbox only as root', () => {
    const flags = ['--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--no-first-run',
      '--disable-site-isolation-trials', '--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,SpareRendererForSitePerProcess,BackForwardCache,RenderDocument,site-per-process,IsolateOrigins'];
    expect(launchFlags({ root: false })).toEqual(flags);
    expect(launchFlags({ root: true })).toEqual([...flags, '--no-sandbox']);
  });
});

describe('what a render blocks', () => {
  it('a host pattern blocks the host and its subdomains only', () => {
    const test = compileBlockPattern('tracker.example');
    expect(test(new URL('https://tracker.example/x.js'))).toBe(true);
    expect(test(new URL('https://cdn.tracker.example/x.js'))).toBe(true);
    expect(test(new URL('https://nottracker.example/x.js'))).toBe(false);
  });

  it('a URL prefix matches with "*", and a "/path" on any origin', () => {
    expect(compileBlockPattern('https://shop.example/api/*/track')(new URL('https://shop.example/api/v2/track?x=1'))).toBe(true);
    expect(compileBlockPattern('https://shop.example/api/*/track')(new URL('https://shop.example/api/v2/cart'))).toBe(false);
    expect(compileBlockPattern('/beacon')(new URL('http://127.0.0.1:9/beacon?id=1'))).toBe(true);
    expect(compileBlockPattern('/beacon')(new URL('http://127.0.0.1:9/st/beacon'))).toBe(false);
  });

  it('the built-in analytics and ads list is on by default and can be turned off', () => {
    const on = createBlocklist({ renderBlock: [], renderBlockDefaults: true });
    expect(on(new URL('https://www.google-analytics.com/analytics.js'))).toBe(true);
    expect(on(new URL('https://www.googletagmanager.com/gtm.js?id=1'))).toBe(true);
    expect(on(new URL('https://shop.example/app.js'))).toBe(false);
    const off = createBlocklist({ renderBlock: ['shop.example'], renderBlockDefaults: false });
    expect(off(new URL('https://www.google-analytics.com/analytics.js'))).toBe(false);
    expect(off(new URL('https://shop.example/app.js'))).toBe(true);
  });
});

describe('render options', () => {
  it('have their defaults, and a bad wait condition is a usage error', () => {
    const o = resolveCrawlOptions({ roots: ['http://shop.example/'] });
    expect(o).toMatchObject({ render: false, renderWait: ['networkidle'], renderIdle: 500, renderTimeout: 30_000, onRenderTimeout: 'fail', renderScripts: 'keep', renderResources: 'dom', renderBlockDefaults: true, renderConcurrency: 8, renderRecycle: 200 });
    // Without networkidle a tab is never idle: one per core (at least 2); given, the number is kept.
    expect(resolveCrawlOptions({ roots: ['http://shop.example/'], renderWait: ['selector:#app'] }).renderConcurrency).toBe(DEFAULT_RENDER_TABS);
    expect(DEFAULT_RENDER_TABS).toBe(Math.min(16, Math.max(2, os.availableParallelism())));
    expect(resolveCrawlOptions({ roots: ['http://shop.example/'], renderWait: ['load', 'networkidle'] }).renderConcurrency).toBe(8);
    expect(resolveCrawlOptions({ roots: ['http://shop.example/'], renderConcurrency: 3 }).renderConcurrency).toBe(3);
    expect(() => resolveCrawlOptions({ roots: ['http://shop.example/'], renderWait: ['idle'] })).toThrow(/load, domcontentloaded, networkidle, selector:<css>, event:<name> or flag:<js expression>/);
    expect(() => resolveCrawlOptions({ roots: ['http://shop.example/'], renderWait: ['selector:'] })).toThrow(/--render-wait must be/);
  });

  it('--browser-endpoint takes a DevTools address, and not beside --browser', () => {
    const roots = ['http://shop.example/'];
    for (const endpoint of ['ws://127.0.0.1:9222/devtools/browser/abc', 'wss://chrome.example/x', 'http://127.0.0.1:9222']) {
      expect(resolveCrawlOptions({ roots, render: true, browserEndpoint: endpoint }).browserEndpoint).toBe(endpoint);
    }
    expect(() => resolveCrawlOptions({ roots, browserEndpoint: 'ftp://host/' })).toThrow(/--browser-endpoint must be a ws:\/\/, wss:\/\/, http:\/\/ or https:\/\/ address, not ftp:/);
    expect(() => resolveCrawlOptions({ roots, browserEndpoint: '127.0.0.1:9222' })).toThrow(/--browser-endpoint must be/);
    expect(() => resolveCrawlOptions({ roots, browser: '/usr/bin/chromium', browserEndpoint: 'ws://127.0.0.1:9222/x' })).toThrow(/give one of them/);
  });
});
