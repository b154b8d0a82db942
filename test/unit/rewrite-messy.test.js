// @ts-check
import { describe, expect, it } from 'vitest';
import { scanHtml } from '../../lib/html/scan.js';
import { renderDocument } from '../../lib/page.js';
import { formatManifest } from '../../lib/manifest/index.js';

/**
 * Link rewriting on the markup of real, messy sites: what an audit of
 * byte-preserving rewriting found, one case each.
 */

const ORIGIN = 'http://shop.example';

/**
 * Render one page (file `st/dir.asp.html`, URL /st/dir.asp) the way phase two does.
 * @param {string | Buffer} body
 * @param {{ charset?: string, files?: Record<string, string> }} [options]
 */
function render(body, { charset = 'utf-8', files = {} } = {}) {
  const result = renderDocument({
    body: Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'),
    type: 'html',
    charset,
    placeholderMode: 'filter',
    pricePath: '/price',
    pageUrl: new URL(`${ORIGIN}/st/dir.asp`),
    file: 'st/dir.asp.html',
    targetFile: (key) => files[key] ?? null,
    staticRoot: new URL(`${ORIGIN}/`),
    dynamicBase: null,
    crawlOrigins: new Set([ORIGIN]),
    relativeLinks: true,
  });
  return result.body.toString('latin1');
}

/**
 * The link values a browser would follow, for a page given as bytes.
 * @param {Buffer | string} bytes
 * @param {string} [charset]
 */
function values(bytes, charset = 'utf-8') {
  return scanHtml((Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'utf8')).toString('latin1'), charset).links.map((link) => link.value);
}

describe('a bare form action', () => {
  // <form action> is an empty action: the form submits to the page's own URL,
  // which on the static tree is the file (a POST to a static file fails).
  it.each([
    ['<form action method=post>', '<form action="/st/dir.asp" method=post>'],
    ['<FORM ACTION/>', '<FORM ACTION="/st/dir.asp"/>'],
    ['<form action="/cart.asp"><button formaction>Go</button></form>', '<form action="/cart.asp"><button formaction="/st/dir.asp">Go</button></form>'],
  ])('%s gets the live page URL', (html, expected) => {
    expect(render(`<p>${html}</p>`)).toBe(`<p>${expected}</p>`);
  });

  it('is left alone where the file is at the page URL', () => {
    const result = renderDocument({
      body: Buffer.from('<form action></form>'), type: 'html', charset: 'utf-8', placeholderMode: 'filter', pricePath: '/price',
      pageUrl: new URL(`${ORIGIN}/about.html`), file: 'about.html', targetFile: () => null,
      staticRoot: new URL(`${ORIGIN}/`), dynamicBase: null, crawlOrigins: new Set([ORIGIN]), relativeLinks: true,
    });
    expect(result.body.toString()).toBe('<form action></form>');
  });
});

describe('a repeated attribute', () => {
  it('is no link: browsers keep the first one', () => {
    expect(values('<a href="a.asp" href="b.asp">x</a>')).toEqual(['a.asp']);
    const files = { [`${ORIGIN}/st/a.asp`]: 'st/a.html', [`${ORIGIN}/st/b.asp`]: 'st/b.html' };
    expect(render('<a href="a.asp" HREF="b.asp">x</a>', { files })).toBe('<a href="a.html" HREF="b.asp">x</a>');
  });
});

describe('CSS and meta refresh spellings', () => {
  it('finds @import with no space before the string', () => {
    const files = { [`${ORIGIN}/lib/s.css`]: 'lib/s.css' };
    expect(render('<style>@import"/lib/s.css";@import\'/lib/s.css\';</style>', { files }))
      .toBe('<style>@import"../lib/s.css";@import\'../lib/s.css\';</style>');
  });

  it.each([
    ['<meta http-equiv="refresh" content="0; url=&quot;next.asp&quot;">', '<meta http-equiv="refresh" content="0; url=&quot;next.html&quot;">'],
    ['<meta http-equiv=refresh content="0;URL=&#39;next.asp&#39;">', '<meta http-equiv=refresh content="0;URL=&#39;next.html&#39;">'],
  ])('reads a refresh URL quoted with character references: %s', (html, expected) => {
    const files = { [`${ORIGIN}/st/next.asp`]: 'st/next.html' };
    expect(render(html, { files })).toBe(expected);
    expect(values(html)).toEqual(['next.asp']);
  });
});

describe('a query in a double-byte legacy charset', () => {
  it('makes its charset table once, not once a page (some 24,000 decodes each time)', () => {
    const started = performance.now();
    for (let n = 0; n < 200; n++) {
      const page = Buffer.concat([Buffer.from('<a href="/s/p.asp?q='), Buffer.from([0x83, 0x5c]), Buffer.from(`&n=${n}">x</a>`)]);
      expect(values(page, 'shift_jis')).toEqual([`/s/p.asp?q=%83\\&n=${n}`]);
    }
    // Once: about 0.15 s here. Once a page: about 19 ms each, 3.8 s.
    expect(performance.now() - started).toBeLessThan(1500);
  });

  // Browsers send a query in the page's charset: "ソ" in Shift_JIS is 83 5C, sent as "%83\".
  it.each([
    ['shift_jis', [0x83, 0x5c], '%83\\'],
    ['Shift_JIS', [0x93, 0xfa, 0x96, 0x7b], '%93%FA%96{'],
    ['euc-jp', [0xc6, 0xfc, 0xcb, 0xdc], '%C6%FC%CB%DC'],
    ['gb2312', [0xd6, 0xd0, 0xce, 0xc4], '%D6%D0%CE%C4'],
    ['big5', [0xa4, 0xa4, 0xa4, 0xe5], '%A4%A4%A4%E5'],
    ['euc-kr', [0xc7, 0xd1], '%C7%D1'],
  ])('%s', (charset, bytes, query) => {
    const page = Buffer.concat([Buffer.from('<a href="/s/p.asp?q='), Buffer.from(bytes), Buffer.from('#top">x</a>')]);
    expect(values(page, charset)).toEqual([`/s/p.asp?q=${query}#top`]);
  });

  it('reads the path in the charset and sends it as UTF-8, as browsers do', () => {
    const page = Buffer.concat([Buffer.from('<a href="/'), Buffer.from([0x83, 0x5c]), Buffer.from('.asp">x</a>')]);
    expect(values(page, 'shift_jis')).toEqual(['/\u30bd.asp']);
  });
});

describe('the manifest scope', () => {
  it('lists a directory two roots share once', () => {
    const text = formatManifest({
      roots: [`${ORIGIN}/s/`, `${ORIGIN}/s/a.asp`], scope: { include: [`${ORIGIN}/s/`, `${ORIGIN}/s/`], exclude: [] },
      placeholderMode: 'filter', pages: [], generatedAt: '2026-01-01T00:00:00.000Z',
    });
    expect(JSON.parse(text).scope).toEqual({ include: [`${ORIGIN}/s/`], exclude: [] });
  });
});
