// @ts-check
import { describe, expect, it } from 'vitest';
import { canonicalKey, encodeFilePath, normalizeUrl, parseHttpUrl, relativeFileUrl } from '../../lib/url.js';

describe('normalizeUrl: one canonical string per page', () => {
  it.each([
    // [input, base, expected]
    ['http://h.example/a', undefined, 'http://h.example/a'],
    ['HTTP://H.Example/a', undefined, 'http://h.example/a'],
    ['http://h.example:80/a', undefined, 'http://h.example/a'],
    ['https://h.example:443/a', undefined, 'https://h.example/a'],
    ['http://h.example:8080/a', undefined, 'http://h.example:8080/a'],
    ['https://h.example:80/a', undefined, 'https://h.example:80/a'],
    ['http://h.example', undefined, 'http://h.example/'],
    ['http://h.example/a#frag', undefined, 'http://h.example/a'],
    ['http://h.example/a?x=1#frag', undefined, 'http://h.example/a?x=1'],
    ['http://h.example/a/./b/../c.asp', undefined, 'http://h.example/a/c.asp'],
    ['http://h.example/a/%2e%2e/c.asp', undefined, 'http://h.example/c.asp'],
    ['http://h.example/../../c.asp', undefined, 'http://h.example/c.asp'],
    ['http://h.example/caf%c3%a9.asp', undefined, 'http://h.example/caf%C3%A9.asp'],
    ['http://h.example/caf%C3%A9.asp', undefined, 'http://h.example/caf%C3%A9.asp'],
    ['http://h.example/café.asp', undefined, 'http://h.example/caf%C3%A9.asp'],
    ['http://h.example/%7Euser/%41%62c', undefined, 'http://h.example/~user/Abc'],
    ['http://h.example/a%2fb', undefined, 'http://h.example/a%2Fb'],
    ['http://h.example/a%2Fb', undefined, 'http://h.example/a%2Fb'],
    ['http://h.example/s?q=%e9&r=%2f', undefined, 'http://h.example/s?q=%E9&r=%2F'],
    ['http://h.example/s?q=%7e%2D', undefined, 'http://h.example/s?q=~-'],
    ['http://h.example/a b', undefined, 'http://h.example/a%20b'],
    ['http://bücher.example/', undefined, 'http://xn--bcher-kva.example/'],
    // The query is kept as written: order and values are the page's identity.
    ['http://h.example/s?b=2&a=1', undefined, 'http://h.example/s?b=2&a=1'],
    ['http://h.example/s?a=1&b=2', undefined, 'http://h.example/s?a=1&b=2'],
    // Relative references against a base.
    ['../x.asp?y=1#z', 'http://h.example/a/b/c.asp', 'http://h.example/a/x.asp?y=1'],
    ['/x.asp', 'http://h.example/a/b/c.asp', 'http://h.example/x.asp'],
    ['//other.example/x', 'https://h.example/a', 'https://other.example/x'],
    ['?page=2', 'http://h.example/a/list.asp?page=1', 'http://h.example/a/list.asp?page=2'],
    ['#top', 'http://h.example/a/list.asp?page=1', 'http://h.example/a/list.asp?page=1'],
    ['', 'http://h.example/a/list.asp?page=1#x', 'http://h.example/a/list.asp?page=1'],
    [' page.asp\n', 'http://h.example/a/', 'http://h.example/a/page.asp'],
  ])('%j (base %j) -> %j', (input, base, expected) => {
    expect(normalizeUrl(input, base)).toBe(expected);
  });

  it.each([
    'mailto:a@example.invalid',
    'javascript:void(0)',
    'data:text/plain,hi',
    'tel:+15555550100',
    'ftp://h.example/file',
    'file:///etc/passwd',
    'not a url',
    'http://',
    'http://[::1/',
  ])('%j is not a crawlable URL', (input) => {
    expect(normalizeUrl(input)).toBeNull();
    expect(parseHttpUrl(input)).toBeNull();
  });

  it('is idempotent', () => {
    for (const raw of ['http://H.example:80/a/./b/%7e%c3%a9?q=%e9#x', 'https://h.example/caf%C3%A9?x=a%2Fb']) {
      const once = normalizeUrl(raw);
      expect(normalizeUrl(/** @type {string} */ (once))).toBe(once);
    }
  });

  it('a self-link with another query string is another page', () => {
    expect(normalizeUrl('?sort=price', 'http://h.example/list.asp')).not.toBe(normalizeUrl('http://h.example/list.asp'));
    expect(normalizeUrl('list.asp?a=1', 'http://h.example/')).not.toBe(normalizeUrl('list.asp?a=2', 'http://h.example/'));
  });

  it('canonicalKey drops the fragment but leaves the URL object untouched', () => {
    const url = new URL('http://h.example/a?b=1#c');
    expect(canonicalKey(url)).toBe('http://h.example/a?b=1');
    expect(url.hash).toBe('#c');
  });
});

describe('relativeFileUrl: the link from one written file to another', () => {
  const names = [
    'index.html',
    'a.html',
    'st/product7.htm',
    'st/dir.asp@Start=3&Count=2.html',
    'st/sub/deeper/x.html',
    'other/y.html',
    'café/crème brûlée.html',
    'q/a#b?c%d.html',
    'c/a:b.html',
    "p/it's (1).html",
    'x+y/=;,.html',
  ];
  const staticRoot = 'http://static.invalid/';

  for (const from of names) {
    for (const to of names) {
      it(`${from} -> ${to}`, () => {
        const relative = relativeFileUrl(from, to);
        expect(relative).not.toMatch(/^[a-z][a-z0-9+.-]*:/i); // never reads as a scheme
        expect(relative).not.toMatch(/["'()<>\s`]/); // safe in any attribute or url()
        const resolved = new URL(relative, new URL(encodeFilePath(from), staticRoot));
        expect(resolved.origin).toBe('http://static.invalid');
        expect(resolved.search).toBe('');
        expect(resolved.hash).toBe('');
        expect(decodeURIComponent(resolved.pathname)).toBe('/' + to);
      });
    }
  }

  it.each([
    ['index.html', 'a/b.html', 'a/b.html'],
    ['a/b.html', 'index.html', '../index.html'],
    ['a/b/c.html', 'a/x/y.html', '../x/y.html'],
    ['a/b.html', 'a/b.html', 'b.html'],
    ['a/b.html', 'a/c.htm', 'c.htm'],
  ])('%s -> %s is %s', (from, to, expected) => {
    expect(relativeFileUrl(from, to)).toBe(expected);
  });

  it('gives what the array-based version it replaced gave, for 20,000 random pairs of paths', () => {
    /** The version before the string scans (kept here as the reference). @param {string} from @param {string} to */
    const reference = (from, to) => {
      const fromDirs = from.split('/').slice(0, -1);
      const toParts = to.split('/');
      let common = 0;
      while (common < fromDirs.length && common < toParts.length - 1 && fromDirs[common] === toParts[common]) common++;
      const ups = fromDirs.length - common;
      const rest = toParts.slice(common);
      const relative = '../'.repeat(ups) + encodeFilePath(rest.join('/'));
      return ups === 0 && /^[^/]*:/.test(rest[0]) ? './' + relative : relative;
    };
    // Few distinct segments, so that paths share prefixes (and prefixes of segments: "a", "ab", "a:b").
    const segments = ['a', 'ab', 'b', 'a:b', 'x y', 'é', '', 'a.html', 'ab.html'];
    let seed = 7;
    const random = (/** @type {number} */ n) => {
      seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; // xorshift32
      return (seed >>> 0) % n;
    };
    const path = () => Array.from({ length: 1 + random(4) }, () => segments[random(segments.length)]).join('/') + '.html';
    for (let i = 0; i < 20_000; i++) {
      const from = path();
      const to = path();
      expect(relativeFileUrl(from, to), `${from} -> ${to}`).toBe(reference(from, to));
    }
    // encodeFilePath's fast path (nothing to encode) against its slow one, on every printable ASCII character and a few others.
    const slow = (/** @type {string} */ file) => file.split('/').map((segment) => segment.replace(/[^A-Za-z0-9\-._~!$&+,;=:@]+/gu, (run) => encodeURIComponent(run).replace(/['()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase()))).join('/');
    for (let code = 0x20; code < 0x7f; code++) {
      const file = `st/a${String.fromCharCode(code)}b/x.html`;
      expect(encodeFilePath(file), file).toBe(slow(file));
    }
    for (const file of ['é/x.html', 'a\u0000b', 'a\nb', '\u{1F600}.html', 'plain/path-1_2.~html']) expect(encodeFilePath(file)).toBe(slow(file));
  });
});
