// @ts-check
import { describe, expect, it, vi } from 'vitest';
import { compileNameRules, expandTemplate } from '../../lib/naming/rules.js';
import { parseNameRules } from '../../lib/options/name-rules.js';
import { wantedFileName } from '../../lib/naming/file-names.js';
import { resolveCrawlOptions } from '../../lib/options/crawl-options.js';
import { progressFor, startProgress } from '../../lib/cli/report.js';
import { Writable } from 'node:stream';

const fail = (/** @type {string} */ message) => new Error(message);

describe('--name rules', () => {
  it.each([
    ['{query.id}.html', 'http://w/doku.php?id=start', 'start.html'],
    ['{query.id}.html', 'http://w/doku.php?id=a%2Fb:c', 'a_b_c.html'],
    ['{query.missing}x.html', 'http://w/doku.php?id=1', 'x.html'],
    ['/{dir}/{base}-{query.p}.{ext}', 'http://w/shop/item.asp?p=7', '/shop/item-7.asp'],
    ['{path}.html', 'http://w/caf%C3%A9/menu.asp', 'café/menu.asp.html'],
  ])('%s on %s -> %s', (template, url, expected) => {
    expect(expandTemplate(template, new URL(url))).toBe(expected);
  });

  // In the style of website-scraper's filename-generator tests: one row per case a real app showed.
  describe('query parameters are read as CGI reads them: split on "&" and ";"', () => {
    it.each([
      ['gitweb: ";" separates parameters', '{query.h}.html', 'http://g/gitweb.cgi?p=repo.git;a=commit;h=1a2b3c', '1a2b3c.html'],
      ['gitweb: the first parameter stops at ";"', '{query.p}/{query.a}.html', 'http://g/gitweb.cgi?p=repo.git;a=summary', 'repo.git/summary.html'],
      ['"&" and ";" mixed', '{query.a}-{query.pg}.html', 'http://g/gitweb.cgi?p=r.git&a=shortlog;pg=2', 'shortlog-2.html'],
      ['an encoded ";" stays in its value', '{query.id}.html', 'http://w/doku.php?id=a%3Bb', 'a;b.html'],
      ['"+" is a space, as in a form', '{query.q}.html', 'http://w/s.php?q=two+words', 'two words.html'],
      ['the first of a repeated parameter', '{query.a}.html', 'http://w/x?a=1;a=2', '1.html'],
      ['a value ".." is no parent directory', '{query.id}/x.html', 'http://w/x?id=..', '__/x.html'],
      ['an absent parameter is empty', '{query.missing}x.html', 'http://w/x?a=1;b=2', 'x.html'],
    ])('%s', (_, template, url, expected) => {
      expect(expandTemplate(template, new URL(url))).toBe(expected);
    });
  });

  describe('path placeholders are made safe as query values are', () => {
    it.each([
      ['MediaWiki: a namespace colon', '/wiki/{base}.html', 'http://w/index.php/Category:Group_A', '/wiki/Category_Group_A.html'],
      ['MediaWiki: an encoded "?" in a title', '/wiki/{base}.html', 'http://w/index.php/What%3F', '/wiki/What_.html'],
      ['an encoded "/" in a segment does not make a directory', '{path}.html', 'http://w/a%2Fb/c', 'a_b/c.html'],
      ['non-ASCII is kept, decoded', '{path}.html', 'http://w/caf%C3%A9/menu.asp', 'café/menu.asp.html'],
      ['{rest}: the path after the pattern, its parents kept', '/wiki/{rest}.html', 'http://w/index.php/Guide/Install', '/wiki/Guide/Install.html'],
      ['{rest}: subpages of a category, each segment safe', '/wiki/{rest}.html', 'http://w/index.php/Category:Group_A/B/C', '/wiki/Category_Group_A/B/C.html'],
      ['{base} is the last segment only', '/wiki/{base}.html', 'http://w/index.php/Guide/Install', '/wiki/Install.html'],
    ])('%s', (_, template, url, expected) => {
      const rules = compileNameRules([{ pattern: '/index.php/*', template }], ['http://w']);
      expect(expandTemplate(template, new URL(url), rules.ruleFor(url)?.prefix)).toBe(expected);
    });

    it.each([
      ['/index.php/*', 'http://w/index.php/A/B', 'A/B'],
      ['/index.php', 'http://w/index.php/A/B', 'A/B'],
      ['/st/*/print', 'http://w/st/7/print', '7/print'],
      ['http://w/docs/', 'http://w/docs/x/y.html', 'x/y.html'],
      ['/gitweb.cgi?p=*', 'http://w/gitweb.cgi?p=r.git', ''],
    ])('{rest} after %s on %s is %s', (pattern, url, expected) => {
      const rules = compileNameRules([{ pattern, template: '{rest}' }], ['http://w']);
      expect(expandTemplate('{rest}', new URL(url), rules.ruleFor(url)?.prefix)).toBe(expected);
    });

    it('a MediaWiki layout gets every page under wiki/, none falls back to the default name', () => {
      const rules = compileNameRules([{ pattern: '/index.php/*', template: '/wiki/{rest}.html' }], ['http://w']);
      for (const url of ['http://w/index.php/Main_Page', 'http://w/index.php/Category:Group_A/B/C', 'http://w/index.php/What%3F', 'http://w/index.php/%C3%9Cbersicht']) {
        const wanted = wantedFileName(new URL(url), 'text/html', undefined, false, rules.ruleFor(url) ?? {});
        expect(wanted).toMatchObject({ from: 'name rule' });
        expect(wanted.file).toMatch(/^wiki\//);
      }
    });
  });

  it('the first matching rule names the file, through the name-header checks; the header wins', () => {
    const rules = compileNameRules(parseNameRules(['/doku.php?id=*', '{query.id}.html', '/shop/', '/{base}.html'], fail), ['http://w']);
    const url = new URL('http://w/wiki/doku.php?id=start');
    expect(rules.templateFor('http://w/doku.php?id=start')).toBe('{query.id}.html');
    expect(rules.templateFor('http://w/other.php')).toBeNull();
    expect(wantedFileName(new URL('http://w/doku.php?id=start'), 'text/html', undefined, false, { template: '{query.id}.html' })).toMatchObject({ file: 'start.html', from: 'name rule' });
    expect(wantedFileName(url, 'text/html', undefined, false, { template: '{query.id}.html' }).file).toBe('wiki/start.html');
    expect(wantedFileName(url, 'text/html', 'named.htm', false, { template: '{query.id}.html' })).toMatchObject({ file: 'wiki/named.htm', from: 'name header' });
    const unsafe = wantedFileName(url, 'text/html', undefined, false, { template: '../{query.id}.html' });
    expect(unsafe).toMatchObject({ file: 'wiki/doku.php@id=start.html', from: 'default name', refusedFrom: 'name rule' });
  });

  it('in a config file: pairs or { pattern, template } objects; bad rules are refused with the file and key', () => {
    const roots = ['http://w/'];
    expect(resolveCrawlOptions({ roots, name: [['/a?id=*', '{query.id}.html'], { pattern: '/b', template: '{base}.html' }] }, { source: 'prerender.config.json' }).name)
      .toEqual([{ pattern: '/a?id=*', template: '{query.id}.html' }, { pattern: '/b', template: '{base}.html' }]);
    expect(() => resolveCrawlOptions({ roots, name: [['/a']] }, { source: 'prerender.config.json' })).toThrow(/prerender.config.json: "name" must be a list of \[pattern, template\] pairs/);
    expect(() => resolveCrawlOptions({ roots, name: [['a', 'x.html']] }, { source: 'c.json' })).toThrow(/pattern must be a path starting with "\/"/);
  });
});

describe('progress line', () => {
  it('says "writing" and how many files are written during the write phase', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    let text = '';
    const stream = Object.assign(new Writable({ write(chunk, _e, done) { text += chunk; done(); } }), { isTTY: true, columns: 200 });
    const stats = { fetched: 40, failed: 1, written: 12, queued: 0, active: 0, startedAt: Date.now(), phase: 'write' };
    const progress = startProgress(stream, () => stats);
    vi.advanceTimersByTime(200); // one tick of the redraw timer
    progress.stop();
    vi.useRealTimers();
    expect(text).toMatch(/\rwriting · 12 of 40 written · 1 failed · \d+\.\d s/);
  });
});

describe('progress when stderr is not a terminal (a CI log)', () => {
  /** @param {boolean} isTTY */
  const stream = (isTTY) => {
    const sink = { text: '' };
    const writable = Object.assign(new Writable({ write(chunk, _e, done) { sink.text += chunk; done(); } }), { isTTY, columns: 200 });
    return { sink, writable };
  };
  const stats = () => ({ fetched: 40, failed: 1, written: 0, queued: 3, active: 2, startedAt: Date.now(), phase: 'fetch' });

  it('prints a whole line every --progress-interval seconds, none with -q or 0', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const log = stream(false);
      const progress = progressFor(log.writable, stats, { intervalSeconds: 10 });
      vi.advanceTimersByTime(9_999);
      expect(log.sink.text).toBe('');
      vi.advanceTimersByTime(10_001);
      progress?.stop();
      vi.advanceTimersByTime(30_000);
      expect(log.sink.text).toMatch(/^prerender: 40 fetched · 5 queued · 1 failed · \d+ pages\/s · \d+\.\d s\nprerender: 40 fetched[^\n]*\n$/);
      expect(progressFor(log.writable, stats, { intervalSeconds: 10, quiet: true })).toBeNull();
      expect(progressFor(log.writable, stats, { intervalSeconds: 0 })).toBeNull();
      const tty = stream(true);
      const live = progressFor(tty.writable, stats, { intervalSeconds: 0 });
      vi.advanceTimersByTime(200);
      live?.stop();
      expect(tty.sink.text).toMatch(/^\r40 fetched/);
      expect(progressFor(tty.writable, stats, { intervalSeconds: 10, quiet: true })).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });

  it('--progress-interval takes whole seconds from 0', () => {
    expect(() => resolveCrawlOptions({ roots: ['http://w/'], progressInterval: -1 })).toThrow(/--progress-interval must be/);
  });
});
