// @ts-check
import { describe, expect, it } from 'vitest';
import { Scope, defaultScopeOf } from '../../lib/roots/scope.js';
import { UsageError } from '../../lib/errors.js';
import { normalizeUrl } from '../../lib/url.js';

/**
 * @param {{ roots: string[], include?: string[], exclude?: string[], includeRegex?: string[], excludeRegex?: string[] }} options roots as typed by a user
 */
function scope({ roots, ...rest }) {
  return new Scope({ roots: roots.map((root) => /** @type {string} */ (normalizeUrl(root))), ...rest });
}

/**
 * @param {Scope} s
 * @param {string} url as a link would give it (normalised here, as the crawler does)
 */
function decision(s, url) {
  return s.decide(/** @type {string} */ (normalizeUrl(url))).decision;
}

describe('defaultScopeOf: a root\'s directory and below', () => {
  it.each([
    ['http://h/', 'http://h/'],
    ['http://h/infodir/', 'http://h/infodir/'],
    ['http://h/infodir/about.asp', 'http://h/infodir/'],
    ['http://h/infodir/about.asp?x=1/2', 'http://h/infodir/'],
    ['http://h/a.asp?x=1', 'http://h/'],
    ['http://h:8080/st/dir.asp', 'http://h:8080/st/'],
  ])('%s -> %s', (root, expected) => {
    expect(defaultScopeOf(/** @type {string} */ (normalizeUrl(root)))).toBe(expected);
  });
});

describe('Scope without --include', () => {
  it.each([
    // [root, url, decision]
    ['http://h/', 'http://h/anything/at/all.asp?x=1', 'crawl'],
    ['http://h/', 'http://h/', 'crawl'],
    ['http://h/', 'http://other/', 'dynamic'],
    ['http://h/', 'https://h/', 'dynamic'],
    ['http://h/', 'http://h:8080/', 'dynamic'],
    ['http://h/infodir/', 'http://h/infodir/', 'crawl'],
    ['http://h/infodir/', 'http://h/infodir/sub/x.asp', 'crawl'],
    ['http://h/infodir/', 'http://h/infodir', 'dynamic'],
    ['http://h/infodir/', 'http://h/infodirx/', 'dynamic'],
    ['http://h/infodir/', 'http://h/other/', 'dynamic'],
    ['http://h/infodir/', 'http://h/', 'dynamic'],
    ['http://h/infodir/about.asp', 'http://h/infodir/contact.asp', 'crawl'],
    ['http://h/infodir/about.asp', 'http://h/infodir/about.asp?lang=fr', 'crawl'],
    ['http://h/infodir/about.asp', 'http://h/infodir/private/x.asp', 'crawl'],
    ['http://h/infodir/about.asp', 'http://h/other/page.asp', 'dynamic'],
    ['http://h/infodir/about.asp', 'http://h/infodir/../other/page.asp', 'dynamic'],
    ['http://h/infodir/about.asp', 'http://h/infodir/%2e%2e/other/page.asp', 'dynamic'],
    ['http://h/infodir/about.asp', 'http://h/INFODIR/contact.asp', 'dynamic'],
    ['http://h/infodir/about.asp', 'http://H:80/infodir/contact.asp#x', 'crawl'],
  ])('root %s: %s is %s', (root, url, expected) => {
    expect(decision(scope({ roots: [root] }), url)).toBe(expected);
  });

  it('several roots: each root\'s own directory', () => {
    const s = scope({ roots: ['http://h/infodir/about.asp', 'http://h/names/', 'http://g/x/y.asp'] });
    expect(decision(s, 'http://h/infodir/contact.asp')).toBe('crawl');
    expect(decision(s, 'http://h/names/a.asp')).toBe('crawl');
    expect(decision(s, 'http://g/x/z.asp')).toBe('crawl');
    expect(decision(s, 'http://g/infodir/contact.asp')).toBe('dynamic');
    expect(decision(s, 'http://h/x/z.asp')).toBe('dynamic');
    expect(s.toJSON()).toEqual({ include: ['http://h/infodir/', 'http://h/names/', 'http://g/x/'], exclude: [] });
  });
});

describe('Scope with --include and --exclude', () => {
  const roots = ['http://shop/st/dir.asp'];

  it('a path pattern is a prefix of path plus query on the root\'s origin', () => {
    const s = scope({ roots, include: ['/st/dir.asp', '/st/product.asp'] });
    expect(decision(s, 'http://shop/st/dir.asp')).toBe('crawl');
    expect(decision(s, 'http://shop/st/dir.asp?Start=1001&Count=1000')).toBe('crawl');
    expect(decision(s, 'http://shop/st/product.asp?SKUSetID=7')).toBe('crawl');
    expect(decision(s, 'http://shop/st/product.aspx')).toBe('crawl'); // a prefix, literally
    expect(decision(s, 'http://shop/st/cart.asp?add=7')).toBe('dynamic');
    expect(decision(s, 'http://shop/st/checkout.asp')).toBe('dynamic');
    expect(decision(s, 'http://shop/st/search.asp?q=x')).toBe('dynamic');
    expect(decision(s, 'http://other/st/dir.asp')).toBe('dynamic');
  });

  it('a pattern can include the query', () => {
    const s = scope({ roots, include: ['/st/product.asp?SKUSetID=1'] });
    expect(decision(s, 'http://shop/st/product.asp?SKUSetID=1')).toBe('crawl');
    expect(decision(s, 'http://shop/st/product.asp?SKUSetID=12')).toBe('crawl');
    expect(decision(s, 'http://shop/st/product.asp?SKUSetID=2')).toBe('dynamic');
    expect(decision(s, 'http://shop/st/product.asp')).toBe('dynamic');
  });

  it('* matches any run of characters, anything else is literal', () => {
    const s = scope({ roots, include: ['/st/*.asp?SKUSetID=*&lang=fr', '/a+b(c)/[x].asp', '/dot.asp'] });
    expect(decision(s, 'http://shop/st/product.asp?SKUSetID=7&lang=fr')).toBe('crawl');
    expect(decision(s, 'http://shop/st/sub/deep.asp?SKUSetID=&lang=fr&more')).toBe('crawl');
    expect(decision(s, 'http://shop/st/product.asp?SKUSetID=7&lang=de')).toBe('dynamic');
    expect(decision(s, 'http://shop/a+b(c)/[x].asp')).toBe('crawl');
    expect(decision(s, 'http://shop/aab(c)/[x].asp')).toBe('dynamic');
    expect(decision(s, 'http://shop/dot.asp')).toBe('crawl');
    expect(decision(s, 'http://shop/dotXasp')).toBe('dynamic');
  });

  it('exclude wins over include, and over a root', () => {
    const s = scope({ roots: ['http://shop/st/', 'http://shop/st/cart.asp'], include: ['/st/'], exclude: ['/st/cart.asp', '/*/search.asp', 'http://shop/st/checkout'] });
    expect(decision(s, 'http://shop/st/product.asp')).toBe('crawl');
    expect(decision(s, 'http://shop/st/cart.asp?add=1')).toBe('excluded');
    expect(decision(s, 'http://shop/st/cart.asp')).toBe('excluded');
    expect(decision(s, 'http://shop/st/search.asp?q=1')).toBe('excluded');
    expect(decision(s, 'http://shop/st/checkout.asp')).toBe('excluded');
    expect(s.decide('http://shop/st/cart.asp?add=1').pattern).toBe('/st/cart.asp');
  });

  it('a root is crawled even when --include does not cover it', () => {
    const s = scope({ roots: ['http://shop/start.asp'], include: ['/st/'] });
    expect(decision(s, 'http://shop/start.asp')).toBe('crawl');
    expect(decision(s, 'http://shop/start.asp?x=1')).toBe('dynamic');
  });

  it('an absolute pattern names its own origin; a path pattern applies to every root origin', () => {
    const s = scope({ roots: ['http://a/x/', 'http://b/y/'], include: ['/shared/', 'http://cdn/img/'] });
    expect(decision(s, 'http://a/shared/1')).toBe('crawl');
    expect(decision(s, 'http://b/shared/1')).toBe('crawl');
    expect(decision(s, 'http://cdn/img/logo.png')).toBe('crawl');
    expect(decision(s, 'http://a/img/logo.png')).toBe('dynamic');
    expect(decision(s, 'http://cdn/shared/1')).toBe('dynamic');
  });

  it('a bare-origin pattern covers that origin only, not a longer host or port', () => {
    const s = scope({ roots, include: ['http://example.com', 'http://h:8080'] });
    expect(decision(s, 'http://example.com/x')).toBe('crawl');
    expect(decision(s, 'http://example.com')).toBe('crawl');
    expect(decision(s, 'http://example.com.evil.example/x')).toBe('dynamic');
    expect(decision(s, 'http://h:8080/x')).toBe('crawl');
    expect(decision(s, 'http://h:80801/x')).toBe('dynamic');
  });

  it('patterns are normalised like URLs', () => {
    const s = scope({ roots, include: ['/st/%7euser/', '/caf%c3%a9/', 'HTTP://Shop:80/upper/', '/frag.asp#ignored'] });
    expect(decision(s, 'http://shop/st/~user/x')).toBe('crawl');
    expect(decision(s, 'http://shop/café/x')).toBe('crawl');
    expect(decision(s, 'http://shop/upper/x')).toBe('crawl');
    expect(decision(s, 'http://shop/frag.asp?x')).toBe('crawl');
  });

  it('toJSON describes the scope with absolute patterns', () => {
    const s = scope({ roots: ['http://shop/st/dir.asp'], include: ['/st/dir.asp', '/st/product.asp'], exclude: ['/*/cart.asp'] });
    expect(s.toJSON()).toEqual({
      include: ['http://shop/st/dir.asp', 'http://shop/st/product.asp'],
      exclude: ['http://shop/*/cart.asp'],
    });
  });

  it.each([
    [''],
    ['st/dir.asp'],
    ['*/cart.asp'],
    ['mailto:a@b'],
    ['ftp://shop/x'],
  ])('refuses the pattern %j with a usage error', (pattern) => {
    expect(() => scope({ roots, include: [pattern] })).toThrow(UsageError);
    expect(() => scope({ roots, exclude: [pattern] })).toThrow(UsageError);
  });
});

describe('--include-regex and --exclude-regex: on the whole URL, as wget\'s --accept-regex', () => {
  const roots = ['http://g/gitweb.cgi'];
  it.each([
    ['exactly a=tree, not a=tree;h=', { includeRegex: ['[?;]a=tree$'] }, 'http://g/gitweb.cgi?p=r.git;a=tree', 'crawl'],
    ['exactly a=tree, not a=tree;h=', { includeRegex: ['[?;]a=tree$'] }, 'http://g/gitweb.cgi?p=r.git;a=tree;h=abc', 'dynamic'],
    ['a regex replaces the roots\' directories, as -i does', { includeRegex: ['a=tree$'] }, 'http://g/static/x.css', 'dynamic'],
    ['either an -i prefix or a regex', { include: ['/static/'], includeRegex: ['a=tree$'] }, 'http://g/static/x.css', 'crawl'],
    ['an exclude regex wins over -i', { include: ['/gitweb.cgi'], excludeRegex: ['a=(snapshot|search)'] }, 'http://g/gitweb.cgi?p=r.git;a=snapshot;h=1', 'excluded'],
    ['an exclude regex leaves the rest', { include: ['/gitweb.cgi'], excludeRegex: ['a=(snapshot|search)'] }, 'http://g/gitweb.cgi?p=r.git;a=commit;h=1', 'crawl'],
    ['an exclude regex wins over a root', { excludeRegex: ['gitweb'] }, 'http://g/gitweb.cgi', 'excluded'],
  ])('%s: %s', (_, options, url, expected) => {
    expect(decision(scope({ roots, ...options }), url)).toBe(expected);
  });

  it('names the regex in the decision and the manifest\'s scope; a bad one is a usage error', () => {
    const s = scope({ roots, includeRegex: ['a=tree$'], excludeRegex: ['a=rss'] });
    expect(s.decide('http://g/gitweb.cgi?a=rss')).toMatchObject({ decision: 'excluded', pattern: '/a=rss/' });
    expect(s.toJSON()).toEqual({ include: ['/a=tree$/'], exclude: ['/a=rss/'] });
    expect(() => scope({ roots, includeRegex: ['('] })).toThrow(UsageError);
  });
});
