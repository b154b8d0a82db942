// @ts-check
import { describe, expect, it } from 'vitest';
import { renderDocument } from '../../lib/document/rewrite.js';
import { applyEdits } from '../../lib/document/edits.js';
import { renderPlaceholder } from '../../lib/document/placeholders.js';

const ORIGIN = 'http://shop.example';

/**
 * Render one document the way phase two does.
 * @param {{ body: string | Buffer, url: string, file: string, files?: Record<string, string>,
 *   dynamicBase?: string, type?: 'html' | 'css', charset?: string, relativeLinks?: boolean }} input
 *   files: canonical URL -> written file, for in-scope targets
 */
function render({ body, url, file, files = {}, dynamicBase, type = 'html', charset = 'utf-8', relativeLinks = false }) {
  const result = renderDocument({
    body: Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'),
    type,
    charset,
    placeholderMode: 'filter',
    pricePath: '/price',
    pageUrl: new URL(url),
    file,
    targetFile: (key) => files[key] ?? null,
    staticRoot: new URL(`${ORIGIN}/`),
    dynamicBase: dynamicBase ? new URL(dynamicBase) : null,
    crawlOrigins: new Set([ORIGIN]),
    relativeLinks,
  });
  return { ...result, html: result.body.toString('utf8') };
}

describe('renderDocument: in-scope links', () => {
  const files = {
    [`${ORIGIN}/st/product.asp?SKUSetID=1`]: 'st/product1.htm',
    [`${ORIGIN}/st/dir.asp?Start=3&Count=2`]: 'st/dir.asp@Start=3&Count=2.html',
    [`${ORIGIN}/st/dir.asp`]: 'st/dir.asp.html',
    [`${ORIGIN}/about.html`]: 'about.html',
    [`${ORIGIN}/st/sub/`]: 'st/sub/index.html',
    [`${ORIGIN}/st/dir.asp?Start=1`]: 'st/dir.asp@Start=1.html', // the page itself
  };

  it.each([
    ['<a href="product.asp?SKUSetID=1">', '<a href="product1.htm">'],
    ['<a href="/st/product.asp?SKUSetID=1#top">', '<a href="product1.htm#top">'],
    [`<a href="${ORIGIN}/st/product.asp?SKUSetID=1">`, '<a href="product1.htm">'],
    ['<a href="//shop.example/st/product.asp?SKUSetID=1">', '<a href="product1.htm">'],
    ['<a href=product.asp?SKUSetID=1>', '<a href=product1.htm>'],
    ["<a href='./product.asp?SKUSetID=1'>", "<a href='product1.htm'>"],
    ['<a href="dir.asp?Start=3&amp;Count=2">', '<a href="dir.asp@Start=3&amp;Count=2.html">'],
    ['<a href="../about.html">', '<a href="../about.html">'],
    ['<a href="sub/">', '<a href="sub/index.html">'],
    ['<a href="#top">', '<a href="#top">'],
    ['<a href="?Start=1#top">', '<a href="dir.asp@Start=1.html#top">'],
    ['<img src="x.png" srcset="product.asp?SKUSetID=1 1x, /st/dir.asp 2x">', '<img src="x.png" srcset="product1.htm 1x, dir.asp.html 2x">'],
    ['<meta http-equiv="refresh" content="0; url=dir.asp">', '<meta http-equiv="refresh" content="0; url=dir.asp.html">'],
    ['<form action="dir.asp">', '<form action="dir.asp">'],
  ])('%s', (link, expected) => {
    const { html } = render({ body: `<p>${link}</p>`, url: `${ORIGIN}/st/dir.asp?Start=1`, file: 'st/dir.asp@Start=1.html', files });
    expect(html).toBe(`<p>${expected}</p>`);
  });

  it('a form with an empty action, or none, still goes to the live page, not to the file (which ignores its fields)', () => {
    const url = `${ORIGIN}/doku.php?id=start`;
    const file = 'wiki/start.html';
    expect(render({ body: '<form action="" method="get"><input name="q"></form>', url, file }).html)
      .toBe('<form action="/doku.php?id=start" method="get"><input name="q"></form>');
    expect(render({ body: '<FORM method=post><input name="q"></FORM>', url, file }).html)
      .toBe('<FORM action="/doku.php?id=start" method=post><input name="q"></FORM>');
    expect(render({ body: '<form><input name="q"></form>', url, file, dynamicBase: 'https://live.example/' }).html)
      .toBe('<form action="https://live.example/doku.php?id=start"><input name="q"></form>');
    // Not its <base>: an empty action submits to the document's own URL.
    expect(render({ body: '<base href="http://shop.example/"><form action=""></form><form></form>', url, file }).html)
      .toMatch(/<form action="\/doku\.php\?id=start"><\/form><form action="\/doku\.php\?id=start"><\/form>$/);
    // A page whose file is at its own URL: its forms are left as written.
    const same = '<form><input name="q"></form><form action="">x</form>';
    expect(render({ body: same, url: `${ORIGIN}/about.html`, file: 'about.html' }).html).toBe(same);
  });

  it('with relative links, one that climbs above the tree is written again: it works at a site\'s root only', () => {
    const body = '<a href="../../about.html">a</a> <a href="../about.html">b</a> <img src="../../../about.html">';
    expect(render({ body, url: `${ORIGIN}/st/dir.asp?Start=1`, file: 'st/dir.asp@Start=1.html', files, relativeLinks: true }).html)
      .toBe('<a href="../about.html">a</a> <a href="../about.html">b</a> <img src="../about.html">');
    // Without --relative-links it reaches the file at the site's root: left as written.
    expect(render({ body, url: `${ORIGIN}/st/dir.asp?Start=1`, file: 'st/dir.asp@Start=1.html', files }).html).toBe(body);
  });

  it('a link already naming the target file is left byte for byte', () => {
    const body = '<a href="about.html">a</a> <a href="/about.html">b</a>';
    expect(render({ body, url: `${ORIGIN}/index.asp`, file: 'index.html', files }).html).toBe(body);
  });

  it('file names with characters that could end an attribute are escaped', () => {
    const { html } = render({
      body: '<a href=x.asp>u</a><a href="y.asp">q</a>',
      url: `${ORIGIN}/p.asp`,
      file: 'p.asp.html',
      files: { [`${ORIGIN}/x.asp`]: "it's (a) <b> c.htm", [`${ORIGIN}/y.asp`]: 'say "hi".htm' },
    });
    expect(html).toBe('<a href=it%27s%20%28a%29%20%3Cb%3E%20c.htm>u</a><a href="say%20%22hi%22.htm">q</a>');
  });
});

describe('renderDocument: a style attribute with entity-quoted url()', () => {
  it('rewrites the URL between the character references, and nothing else', () => {
    const body = '<div style="background:url(&quot;/img/bg.asp&quot;)">x</div>';
    const { html } = render({ body, url: `${ORIGIN}/st/dir.asp`, file: 'st/dir.asp.html', files: { [`${ORIGIN}/img/bg.asp`]: 'img/bg.png' } });
    expect(html).toBe('<div style="background:url(&quot;../img/bg.png&quot;)">x</div>');
  });
});

describe('renderDocument: out-of-scope links', () => {
  const body = [
    '<a href="cart.asp?add=1&amp;qty=2">',
    '<a href="../checkout.asp#pay">',
    '<a href="/search.asp?q=a">',
    `<a href="${ORIGIN}/search.asp?q=b">`,
    '<a href="//shop.example/search.asp?q=c">',
    '<a href="http://example.invalid/x?a=1&amp;b=2">',
    '<a href="mailto:a@example.invalid">',
    '<a href="javascript:void(0)">',
    '<img src="data:image/png;base64,AAAA">',
    '<a href="tel:+15555550100">',
  ].join('\n');

  it('are left byte for byte when the file sits in its URL\'s directory', () => {
    const { html } = render({ body, url: `${ORIGIN}/st/product.asp?SKUSetID=7`, file: 'st/product7.htm' });
    expect(html).toBe(body);
  });

  it('are rewritten just enough when the name header moved the file', () => {
    const { html } = render({ body, url: `${ORIGIN}/st/product.asp?SKUSetID=7`, file: 'catalog/deeper/product7.htm' });
    expect(html.split('\n')).toEqual([
      '<a href="/st/cart.asp?add=1&amp;qty=2">',
      '<a href="/checkout.asp#pay">',
      '<a href="/search.asp?q=a">',
      `<a href="${ORIGIN}/search.asp?q=b">`,
      '<a href="//shop.example/search.asp?q=c">',
      '<a href="http://example.invalid/x?a=1&amp;b=2">',
      '<a href="mailto:a@example.invalid">',
      '<a href="javascript:void(0)">',
      '<img src="data:image/png;base64,AAAA">',
      '<a href="tel:+15555550100">',
    ]);
  });

  it('a file moved to the same depth elsewhere still keeps every target', () => {
    const { html } = render({ body: '<a href="cart.asp">', url: `${ORIGIN}/st/p.asp`, file: 'xx/p.htm' });
    expect(html).toBe('<a href="/st/cart.asp">');
  });

  it('--dynamic-base makes links on the crawled origin absolute on that base, and only those', () => {
    const { html } = render({ body, url: `${ORIGIN}/st/product.asp?SKUSetID=7`, file: 'st/product7.htm', dynamicBase: 'https://dyn.example/' });
    expect(html.split('\n')).toEqual([
      '<a href="https://dyn.example/st/cart.asp?add=1&amp;qty=2">',
      '<a href="https://dyn.example/checkout.asp#pay">',
      '<a href="https://dyn.example/search.asp?q=a">',
      '<a href="https://dyn.example/search.asp?q=b">',
      '<a href="https://dyn.example/search.asp?q=c">',
      '<a href="http://example.invalid/x?a=1&amp;b=2">',
      '<a href="mailto:a@example.invalid">',
      '<a href="javascript:void(0)">',
      '<img src="data:image/png;base64,AAAA">',
      '<a href="tel:+15555550100">',
    ]);
  });

  it.each([
    ['<a href="/Special:Search?q=1">', '<a href="https://dyn.example/app/Special:Search?q=1">'],
    ['<a href="//shop.example//double/x.asp">', '<a href="https://dyn.example/app//double/x.asp">'],
    ['<a href="/a:b/c">', '<a href="https://dyn.example/app/a:b/c">'],
  ])('--dynamic-base never reads a path as a scheme or a host: %s', (body, expected) => {
    expect(render({ body, url: `${ORIGIN}/p.asp`, file: 'p.asp.html', dynamicBase: 'https://dyn.example/app/' }).html).toBe(expected);
  });

  it('--dynamic-base with a path keeps the origin\'s path under it', () => {
    const { html } = render({ body: '<a href="/cart.asp?x=1">', url: `${ORIGIN}/p.asp`, file: 'p.asp.html', dynamicBase: 'https://dyn.example/app/' });
    expect(html).toBe('<a href="https://dyn.example/app/cart.asp?x=1">');
  });
});

describe('renderDocument: <base href>', () => {
  it('a base in the file\'s own directory is kept and used', () => {
    const body = `<base href="${ORIGIN}/st/"><a href="product.asp?SKUSetID=1">p</a><a href="cart.asp">c</a>`;
    const { html } = render({ body, url: `${ORIGIN}/st/dir.asp`, file: 'st/dir.asp.html', files: { [`${ORIGIN}/st/product.asp?SKUSetID=1`]: 'st/product1.htm' } });
    expect(html).toBe(`<base href="${ORIGIN}/st/"><a href="product1.htm">p</a><a href="cart.asp">c</a>`);
  });

  it('a base that would misdirect relative links is pointed at the file itself', () => {
    const body = '<base href="/elsewhere/"><a href="x.asp">in</a><a href="cart.asp">out</a><a href="/checkout.asp">root</a>';
    const { html } = render({ body, url: `${ORIGIN}/st/dir.asp`, file: 'st/dir.asp.html', files: { [`${ORIGIN}/elsewhere/x.asp`]: 'elsewhere/x.asp.html' } });
    expect(html).toBe('<base href="dir.asp.html"><a href="../elsewhere/x.asp.html">in</a><a href="/elsewhere/cart.asp">out</a><a href="/checkout.asp">root</a>');
  });
});

describe('renderDocument: price slots and byte fidelity', () => {
  it('replaces each slot with a placeholder at the recorded byte offsets', () => {
    const body = '<meta name="x-price-sku" content="M1"><p>Größe €: <span data-price-sku="S-1">€ 12,99</span></p><b data-price-sku="">9,99</b><a href="x.asp">x</a>';
    const result = render({ body, url: `${ORIGIN}/p.asp`, file: 'p.asp.html', files: { [`${ORIGIN}/x.asp`]: 'x.htm' } });
    expect(result.placeholders.map((p) => p.sku)).toEqual(['S-1', 'M1']);
    for (const placeholder of result.placeholders) {
      expect(result.body.subarray(placeholder.offset, placeholder.offset + placeholder.length).toString('utf8'))
        .toBe(renderPlaceholder('filter', placeholder.sku));
    }
    expect(result.html).toBe('<meta name="x-price-sku" content="M1"><p>Größe €: <span data-price-sku="S-1"><!--prerender:price sku=S-1--></span></p>'
      + '<b data-price-sku=""><!--prerender:price sku=M1--></b><a href="x.htm">x</a>');
  });

  it('a slot with no SKU anywhere is left as it is, with a warning', () => {
    const body = '<b data-price-sku="">9,99</b>';
    const result = render({ body, url: `${ORIGIN}/p.asp`, file: 'p.asp.html' });
    expect(result.html).toBe(body);
    expect(result.placeholders).toEqual([]);
    expect(result.warnings.map((w) => w.message).join()).toMatch(/price slot/);
    expect(result.warnings.map((w) => w.code)).toEqual(['SLOT_NO_SKU']);
  });

  it('a windows-1252 page keeps every byte outside the edits', () => {
    const body = Buffer.from('<p>\x80 \x93caf\xe9\x94 \xff</p><a href="caf\xe9.asp">\xe9</a><span data-price-sku="S">\x80 1</span>\xa0', 'latin1');
    const result = render({ body, url: `${ORIGIN}/e/i.asp`, file: 'e/i.asp.html', charset: 'windows-1252', files: { [`${ORIGIN}/e/caf%C3%A9.asp`]: 'e/café.asp.html' } });
    expect(result.body).toEqual(Buffer.from('<p>\x80 \x93caf\xe9\x94 \xff</p><a href="caf%C3%A9.asp.html">\xe9</a><span data-price-sku="S"><!--prerender:price sku=S--></span>\xa0', 'latin1'));
  });

  it('a page with nothing to change comes back as the same bytes', () => {
    const body = Buffer.from('<p>\x80 no links</p>', 'latin1');
    const result = renderDocument({
      body, type: 'html', charset: 'windows-1252', placeholderMode: 'filter', pricePath: '/price', pageUrl: new URL(`${ORIGIN}/x`), file: 'x.html',
      targetFile: () => null, staticRoot: new URL(`${ORIGIN}/`), dynamicBase: null, crawlOrigins: new Set([ORIGIN]),
    });
    expect(result.body.equals(body)).toBe(true);
  });
});

describe('renderDocument: CSS', () => {
  it('rewrites url() and @import to in-scope files, relative to the stylesheet', () => {
    const css = '@import "print.css";\n@import url(fonts.css);\nbody { background: url(../img/bg.png) }\n.o { background: url(/img/outside.png) }\n';
    const result = render({
      body: css,
      type: 'css',
      url: `${ORIGIN}/assets/css/site.css`,
      file: 'assets/css/site.css',
      files: { [`${ORIGIN}/assets/css/print.css`]: 'assets/css/print.css', [`${ORIGIN}/assets/css/fonts.css`]: 'assets/css/fonts.css', [`${ORIGIN}/assets/img/bg.png`]: 'assets/img/bg.png' },
    });
    expect(result.html).toBe(css);
    const moved = render({
      body: css,
      type: 'css',
      url: `${ORIGIN}/assets/css/site.css`,
      file: 'assets/css/site.css',
      files: { [`${ORIGIN}/assets/img/bg.png`]: 'assets/img/bg.png.png' },
    });
    expect(moved.html).toBe(css.replace('../img/bg.png', '../img/bg.png.png'));
  });
});

describe('applyEdits', () => {
  it('skips an edit inside an earlier one and reports placeholder byte positions', () => {
    const text = Buffer.from('<s>é<a href="x">x</a></s>', 'utf8').toString('latin1');
    const start = text.indexOf('<a');
    const { body, placeholders } = applyEdits(text, [
      { start: text.indexOf('"x"') + 1, end: text.indexOf('"x"') + 2, text: 'y' },
      { start, end: text.indexOf('</s>'), text: '<!--p-->', placeholder: { sku: 'S' } },
    ]);
    expect(body.toString('utf8')).toBe('<s>é<!--p--></s>');
    expect(placeholders).toEqual([{ sku: 'S', offset: Buffer.byteLength('<s>é'), length: 8 }]);
  });

  it('takes the bytes of a Buffer as they are, and keeps an edit past the end within the document', () => {
    const bytes = Buffer.from([0x3c, 0x61, 0xff, 0x00, 0x3e]);
    expect(applyEdits(bytes, [{ start: 2, end: 3, text: 'b' }]).body).toEqual(Buffer.from([0x3c, 0x61, 0x62, 0x00, 0x3e]));
    expect(applyEdits(bytes, [{ start: 4, end: 9, text: 'zz' }]).body).toEqual(Buffer.from([0x3c, 0x61, 0xff, 0x00, 0x7a, 0x7a]));
    expect(applyEdits(bytes, [{ start: 8, end: 8, text: '!' }]).body).toEqual(Buffer.from([0x3c, 0x61, 0xff, 0x00, 0x3e, 0x21]));
  });
});
