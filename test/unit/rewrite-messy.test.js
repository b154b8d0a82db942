// @ts-check
import { describe, expect, it } from 'vitest';
import { scanHtml } from '../../lib/document/scan-html.js';
import { renderDocument } from '../../lib/document/rewrite.js';
import { formatManifest } from '../../lib/output/manifest/index.js';

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

describe('a URL read as browsers read it', () => {
  it('keeps bytes 0xA0 and 0x85 at its ends: they end characters ("à" in UTF-8 is C3 A0); only ASCII whitespace is stripped', () => {
    expect(values(Buffer.from('<a href="/voilà">x</a><a href=" /x.html\n\t">y</a><a href="/\u2026">z</a>', 'utf8'))).toEqual(['/voilà', '/x.html', '/\u2026']);
  });

  it.each([['windows-1252'], ['iso-8859-1'], ['utf-8'], ['shift_jis']])('reads "&#38;" in a query as "&", never as the start of a fragment (%s)', (charset) => {
    expect(values(Buffer.from('<a href="/list.asp?a=1&#38;b=2#top">x</a><a href="/l.asp?a=1&amp;b=&#x23;">y</a>', 'latin1'), charset))
      .toEqual(['/list.asp?a=1&b=2#top', '/l.asp?a=1&b=#']);
  });

  it('sends a query in a single-byte legacy charset in that charset, its character references too', () => {
    expect(values(Buffer.from('<a href="/q.asp?q=caf\xe9&eacute;">x</a>', 'latin1'), 'windows-1252')).toEqual(['/q.asp?q=caf%E9%E9']);
  });

  it('sends a query of a double-byte page in UTF-8: no table of its encoder to send it otherwise (the path too)', () => {
    const page = Buffer.concat([Buffer.from('<a href="/'), Buffer.from([0x83, 0x5c]), Buffer.from('.asp?q='), Buffer.from([0x83, 0x5c]), Buffer.from('">x</a>')]);
    expect(values(page, 'shift_jis')).toEqual(['/\u30bd.asp?q=\u30bd']);
  });

  it('scans a tag of many attributes in linear time (a repeated one is still no link)', () => {
    const tag = (/** @type {number} */ n) => `<a ${Array.from({ length: n }, (_, i) => `data-x${i}="1"`).join(' ')} href="/a.html" href="/b.html">x</a>`;
    const small = tag(5000);
    const large = tag(160_000);
    // 32 times the attributes: about 55 to 85 times the CPU as scanned (a large string costs more per
    // byte: memory, collections), 1,024 if quadratic. A ratio of CPU time (not wall time: other processes
    // do not count), the best of 3 interleaved runs; the bound well clear of both.
    const best = [Infinity, Infinity];
    for (let run = 0; run < 3; run++) {
      for (const [i, markup] of [small, large].entries()) {
        const started = process.cpuUsage();
        expect(values(markup)).toEqual(['/a.html']);
        const used = process.cpuUsage(started);
        best[i] = Math.min(best[i], used.user + used.system);
      }
    }
    expect(best[1] / best[0]).toBeLessThan(400);
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
