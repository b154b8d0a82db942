// @ts-check
import { describe, expect, it } from 'vitest';
import { diffFiles } from '../../lib/deploy/diff.js';
import { formatRecord, idFromLink, parseRecord, releaseId, rollbackTarget, toPrune } from '../../lib/deploy/release.js';
import { unsafeReason } from '../../lib/deploy/source.js';
import { shQuote } from '../../lib/deploy/ssh-scripts.js';
import { checkHashes, parseHashes, removalList } from '../../lib/deploy/verify.js';
import { checkTargetsConfig, parseTarget } from '../../lib/deploy/targets.js';
import { checkConfig } from '../../lib/options/config-file.js';

const file = (/** @type {string} */ sha256, bytes = 10) => ({ sha256, bytes, mtimeMs: 0 });

describe('diffFiles: churn from two file lists', () => {
  it('sorts every path into new, changed, unchanged and removed, with bytes', () => {
    const previous = new Map([['a', file('1', 5)], ['b', file('2', 7)], ['gone', file('3', 11)]]);
    const next = new Map([['a', file('1', 5)], ['b', file('X', 8)], ['c', file('4', 13)]]);
    const { churn, send, link, remove } = diffFiles(next, previous);
    expect(churn).toEqual({ new: { files: 1, bytes: 13 }, changed: { files: 1, bytes: 8 }, unchanged: { files: 1, bytes: 5 }, removed: { files: 1, bytes: 11 } });
    expect({ send, link, remove }).toEqual({ send: ['b', 'c'], link: ['a'], remove: ['gone'] });
  });

  it('with no previous release, everything is new', () => {
    const { churn, send } = diffFiles(new Map([['a', file('1')]]), null);
    expect(churn.new.files).toBe(1);
    expect(send).toEqual(['a']);
  });
});

describe('release ids, records, prune and rollback choices', () => {
  it('an id is the UTC time and the manifest hash; ids sort in time order', () => {
    expect(releaseId('abcdef0123456789', new Date('2026-01-02T03:04:05.678Z'))).toBe('20260102T030405Z-abcdef01');
    expect(releaseId('ffffffff', new Date('2026-01-02T03:04:05Z')) < releaseId('00000000', new Date('2026-01-02T03:04:06Z'))).toBe(true);
  });

  it('a record round-trips, header first', () => {
    const header = { id: '20260102T030405Z-abcdef01', createdAt: 'x', manifestSha256: 'abcdef01', pages: 1, files: 2, bytes: 3 };
    const text = formatRecord(header, new Map([['b', file('2')], ['a', file('1')]]));
    expect(text.split('\n')[1]).toBe('["a","1",10,0]');
    const parsed = parseRecord(text);
    expect(parsed.header).toEqual(header);
    expect([...parsed.files.keys()]).toEqual(['a', 'b']);
  });

  it('reads the id from the link current holds, and nothing else', () => {
    expect(idFromLink('releases/20260102T030405Z-abcdef01')).toBe('20260102T030405Z-abcdef01');
    expect(idFromLink('/srv/www/releases/20260102T030405Z-abcdef01/')).toBe('20260102T030405Z-abcdef01');
    expect(idFromLink('/etc')).toBe(null);
    expect(idFromLink(null)).toBe(null);
  });

  const ids = ['20260101T000000Z-00000001', '20260102T000000Z-00000002', '20260103T000000Z-00000003', '20260104T000000Z-00000004'];
  it('prunes the oldest beyond --keep, never the current one nor the new one', () => {
    expect(toPrune(ids, 2, [ids[3]])).toEqual([ids[0], ids[1]]);
    expect(toPrune(ids, 1, [ids[0], ids[3]])).toEqual([ids[1], ids[2]]);
    expect(toPrune(ids, 10, [])).toEqual([]);
  });

  it('rolls back to the newest release older than current, or to the one asked for', () => {
    expect(rollbackTarget(ids, ids[2])).toBe(ids[1]);
    expect(rollbackTarget(ids, null)).toBe(ids[3]);
    expect(rollbackTarget(ids, ids[2], ids[3])).toBe(ids[3]);
    expect(() => rollbackTarget(ids, ids[0])).toThrow(/no release older/);
    expect(() => rollbackTarget(ids, ids[0], 'nope')).toThrow(/no complete release nope/);
  });
});

describe('paths that may be published', () => {
  it.each([
    ['a.html', null],
    ['st/product1.htm', null],
    ['../etc/passwd', /escapes/],
    ['a/../../b', /escapes/],
    ['./a', /escapes/],
    ['a//b', /escapes/],
    ['/etc/passwd', /absolute/],
    ['C:/x', /absolute/],
    ['a\\b', /backslash/],
    ['.prerender/state.ndjson', /never published/],
    ['', /not a file name/],
  ])('%j', (name, expected) => {
    const reason = unsafeReason(name);
    if (expected === null) expect(reason).toBe(null);
    else expect(reason).toMatch(expected);
  });
});

describe('target strings', () => {
  it.each([
    ['ssh://deploy@web1/var/www/shop', { kind: 'ssh', user: 'deploy', host: 'web1', port: undefined, path: '/var/www/shop' }],
    ['ssh://deploy@127.0.0.1:2222/srv/a%20b', { kind: 'ssh', user: 'deploy', host: '127.0.0.1', port: 2222, path: '/srv/a b' }],
    ['ssh://[::1]:22/srv', { kind: 'ssh', user: undefined, host: '::1', port: 22, path: '/srv' }],
    ['deploy@web1:www/shop', { kind: 'ssh', user: 'deploy', host: 'web1', path: 'www/shop' }],
    ['web1:/srv/shop', { kind: 'ssh', user: undefined, host: 'web1', path: '/srv/shop' }],
    ['file:///srv/shop', { kind: 'local', dir: '/srv/shop' }],
    ['/srv/shop', { kind: 'local', dir: '/srv/shop' }],
    ['www', { kind: 'local', dir: '/work/www' }],
    ['./a:b', { kind: 'local', dir: '/work/a:b' }],
  ])('%s', (text, expected) => {
    expect(parseTarget(text, '/work')).toEqual(expected);
  });

  it.each(['ssh://web1', 'ssh://web1/', 'ssh://-oProxyCommand=x/srv', 'ssh://u:pw@web1/srv', '-oProxyCommand=x@web1:/srv'])('refuses %s', (text) => {
    expect(() => parseTarget(text, '/work')).toThrow();
  });

  it('quotes arguments for the remote shell', () => {
    expect(shQuote('/srv/www')).toBe('/srv/www');
    expect(shQuote("a b'c; rm -rf /")).toBe(`'a b'\\''c; rm -rf /'`);
  });
});

describe('building a release from the previous one', () => {
  it('removes the changed and vanished paths from the linked copy; a directory gone goes whole', () => {
    const previous = new Map([['a.html', file('1')], ['b.html', file('2')], ['old/x.html', file('3')], ['old/y.html', file('4')], ['keep/z.html', file('5')], ['keep/gone.html', file('6')], ['f', file('7')]]);
    const next = new Map([['a.html', file('1')], ['b.html', file('X')], ['new.html', file('8')], ['keep/z.html', file('5')], ['f/index.html', file('9')]]);
    const diff = diffFiles(next, previous);
    expect(removalList(diff, previous, next).sort()).toEqual(['b.html', 'f', 'keep/gone.html', 'old']);
  });

  it('reads sha256sum output (escaped names too) and checks it against the release', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    const hashes = parseHashes(`${a}  p/one.html\n\\${b}  p/two\\nlines\\\\.html\n`);
    expect([...hashes]).toEqual([['p/one.html', a], ['p/two\nlines\\.html', b]]);
    expect(parseHashes(`${a}  ./x\n`, true).get('x')).toBe(a);
    const files = new Map([['p/one.html', file(a)], ['p/two\nlines\\.html', file(a)], ['p/three.html', file(a)]]);
    expect(checkHashes([...files.keys()], files, hashes)).toEqual([
      { file: 'p/three.html', reason: 'missing on the target after transfer' },
      { file: 'p/two\nlines\\.html', reason: 'sha256 differs on the target after transfer' },
    ]);
    expect(checkHashes(['p/one.html'], files, new Map([['p/one.html', a], ['extra', a]]), true)).toEqual([{ file: 'extra', reason: 'on the target but not in the release' }]);
  });
});

describe('config keys for deploy', () => {
  it('takes named targets, keep and switch', () => {
    expect(checkConfig({ targets: { production: 'ssh://deploy@web1/srv', staging: { url: '/srv/staging', sshKey: 'k' } }, keep: 3, switch: 'each' }, 'c.json'))
      .toEqual({ targets: { production: { url: 'ssh://deploy@web1/srv' }, staging: { url: '/srv/staging', sshKey: 'k' } }, keep: 3, switch: 'each' });
  });

  it.each([
    [{ targets: [] }, /"targets" must be an object/],
    [{ targets: { '1x': '/srv' } }, /target name/],
    [{ targets: { a: { url: '/srv', port: 2 } } }, /unknown key "port"/],
    [{ targets: { a: 'ssh://web1' } }, /target "a": an ssh:\/\/ target needs/],
    [{ keep: 0 }, /"keep" must be a whole number/],
    [{ switch: 'some' }, /"switch" must be/],
    [{ target: {} }, /did you mean "targets"/],
  ])('refuses %j', (config, message) => {
    expect(() => checkConfig(config, 'c.json')).toThrow(message);
    if (config.targets && !Array.isArray(config.targets)) expect(() => checkTargetsConfig(config.targets, 'c.json')).toThrow();
  });
});
