// @ts-check
import { describe, expect, it, vi } from 'vitest';
import { compileNameRules, expandTemplate } from '../../lib/naming/rules.js';
import { parseNameRules } from '../../lib/options/name-rules.js';
import { wantedFileName } from '../../lib/naming/file-names.js';
import { resolveCrawlOptions } from '../../lib/options/crawl-options.js';
import { startProgress } from '../../lib/cli/report.js';
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
