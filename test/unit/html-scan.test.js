// @ts-check
import { describe, expect, it } from 'vitest';
import { scanHtml, srcsetUrls } from '../../lib/document/scan-html.js';
import { scanCss } from '../../lib/document/css.js';
import { ENC_INDEX } from '../../fixtures/site.js';
import { normalizeUrl } from '../../lib/url.js';

/**
 * Scan a document given as a JS string (UTF-8 on the wire) the way the
 * crawler does: as latin1, so offsets are byte offsets.
 * @param {string | Buffer} doc
 * @param {string} [charset]
 */
function scan(doc, charset = 'utf-8') {
  const bytes = Buffer.isBuffer(doc) ? doc : Buffer.from(doc, 'utf8');
  const text = bytes.toString('latin1');
  const result = scanHtml(text, charset);
  return {
    ...result,
    bytes,
    found: result.links.map((link) => ({
      raw: bytes.subarray(link.start, link.end).toString('utf8'),
      value: link.value,
      kind: link.kind,
      tag: link.tag,
      attr: link.attr,
    })),
  };
}

describe('scanHtml: every link form, with exact source spans', () => {
  it.each([
    // [doc, [{ raw, value, kind, tag, attr }]]
    ['<a href="page.asp?id=1">x</a>', [{ raw: 'page.asp?id=1', value: 'page.asp?id=1', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ["<a href='page.asp'>x</a>", [{ raw: 'page.asp', value: 'page.asp', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<a href=page.asp?id=5>x</a>', [{ raw: 'page.asp?id=5', value: 'page.asp?id=5', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<a href=page.asp?id=5 class=x>x</a>', [{ raw: 'page.asp?id=5', value: 'page.asp?id=5', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<A HREF="/Up.asp">x</A>', [{ raw: '/Up.asp', value: '/Up.asp', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<a href = "sp.asp" >x</a>', [{ raw: 'sp.asp', value: 'sp.asp', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<a href="  padded.asp  ">x</a>', [{ raw: 'padded.asp', value: 'padded.asp', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<a href="dir.asp?Start=3&amp;Count=2">n</a>', [{ raw: 'dir.asp?Start=3&amp;Count=2', value: 'dir.asp?Start=3&Count=2', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<a href="x.asp?a=1&#38;b=2&#x26;c=3">n</a>', [{ raw: 'x.asp?a=1&#38;b=2&#x26;c=3', value: 'x.asp?a=1&b=2&c=3', kind: 'navigation', tag: 'a', attr: 'href' }]],
    // An unterminated named reference followed by "=" stays as written in an attribute (HTML spec).
    ['<a href="x.asp?id=1&copy=2">n</a>', [{ raw: 'x.asp?id=1&copy=2', value: 'x.asp?id=1&copy=2', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<a href="page.asp#frag">x</a>', [{ raw: 'page.asp#frag', value: 'page.asp#frag', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<a href="//h.example/x">x</a>', [{ raw: '//h.example/x', value: '//h.example/x', kind: 'navigation', tag: 'a', attr: 'href' }]],
    ['<area href="area.asp" alt="">', [{ raw: 'area.asp', value: 'area.asp', kind: 'navigation', tag: 'area', attr: 'href' }]],
    ['<link rel="stylesheet" href="s.css">', [{ raw: 's.css', value: 's.css', kind: 'requisite', tag: 'link', attr: 'href' }]],
    ['<link rel="shortcut icon" href="/f.ico">', [{ raw: '/f.ico', value: '/f.ico', kind: 'requisite', tag: 'link', attr: 'href' }]],
    ['<link rel="next" href="p2.asp">', [{ raw: 'p2.asp', value: 'p2.asp', kind: 'navigation', tag: 'link', attr: 'href' }]],
    ['<img src="i.png">', [{ raw: 'i.png', value: 'i.png', kind: 'requisite', tag: 'img', attr: 'src' }]],
    ['<script src="a.js"></script>', [{ raw: 'a.js', value: 'a.js', kind: 'requisite', tag: 'script', attr: 'src' }]],
    ['<iframe src="f.asp"></iframe>', [{ raw: 'f.asp', value: 'f.asp', kind: 'navigation', tag: 'iframe', attr: 'src' }]],
    ['<embed src="m.swf">', [{ raw: 'm.swf', value: 'm.swf', kind: 'requisite', tag: 'embed', attr: 'src' }]],
    ['<source src="v.mp4">', [{ raw: 'v.mp4', value: 'v.mp4', kind: 'requisite', tag: 'source', attr: 'src' }]],
    ['<form action="go.asp" method="post"></form>', [{ raw: 'go.asp', value: 'go.asp', kind: 'form', tag: 'form', attr: 'action' }]],
    ['<form action="" method="get"></form>', [{ raw: '', value: '', kind: 'form', tag: 'form', attr: 'action' }]],
    ['<form method="get"><input name="q"></form>', [{ raw: '', value: '', kind: 'form', tag: 'form', attr: '+action' }]],
    ['<meta http-equiv="refresh" content="5; url=next.asp">', [{ raw: 'next.asp', value: 'next.asp', kind: 'navigation', tag: 'meta', attr: 'content' }]],
    ['<META HTTP-EQUIV="Refresh" CONTENT="0;URL=next.asp?a=1&amp;b=2">', [{ raw: 'next.asp?a=1&amp;b=2', value: 'next.asp?a=1&b=2', kind: 'navigation', tag: 'meta', attr: 'content' }]],
    ["<meta http-equiv=\"refresh\" content=\"0; URL='q.asp'\">", [{ raw: 'q.asp', value: 'q.asp', kind: 'navigation', tag: 'meta', attr: 'content' }]],
    ['<meta http-equiv="refresh" content="url=only.asp">', [{ raw: 'only.asp', value: 'only.asp', kind: 'navigation', tag: 'meta', attr: 'content' }]],
    ['<meta http-equiv="refresh" content="30">', []],
    ['<meta name="description" content="http://not.a/link">', []],
    ['<a href="">empty</a><a name="x">no href</a><a href>bare</a>', []],
    ['<!-- <a href="c.asp">x</a> --><script>var s = \'<a href="s.asp">\';</script><textarea><a href="t.asp"></textarea>', []],
  ])('%s', (doc, expected) => {
    expect(scan(doc).found).toEqual(expected);
  });

  it('javascript:, mailto: and data: links are reported with their text (the rewriter leaves them)', () => {
    const { found } = scan('<a href="mailto:a@b">m</a><a href="javascript:void(0)">j</a><img src="data:image/png;base64,AAAA">');
    expect(found.map((link) => link.value)).toEqual(['mailto:a@b', 'javascript:void(0)', 'data:image/png;base64,AAAA']);
  });

  it('srcset: one span per candidate URL', () => {
    const { found } = scan('<img src="a.png" srcset="a.png 1x, b@2x.png 2x,c.png 3x"><source srcset="\n  w1.png 100w,\n  w2.png   200w\n">');
    expect(found.map((link) => [link.raw, link.attr, link.kind])).toEqual([
      ['a.png', 'src', 'requisite'],
      ['a.png', 'srcset', 'requisite'],
      ['b@2x.png', 'srcset', 'requisite'],
      ['c.png', 'srcset', 'requisite'],
      ['w1.png', 'srcset', 'requisite'],
      ['w2.png', 'srcset', 'requisite'],
    ]);
  });

  it.each([
    ['a.png', [['a.png']]],
    ['a.png 1x', [['a.png']]],
    ['a.png 1x, b.png 2x', [['a.png'], ['b.png']]],
    ['a.png,b.png', [['a.png,b.png']]], // a URL runs to white space; commas inside belong to it
    ['a.png, b.png', [['a.png'], ['b.png']]],
    ['a.png 100w,b.png 200w', [['a.png'], ['b.png']]],
    ['  , a.png  ,  ', [['a.png']]],
    ['x.png?a=1,2 1x', [['x.png?a=1,2']]],
    ['data:image/png;base64,AAA= 1x, y.png 2x', [['data:image/png;base64,AAA='], ['y.png']]],
    ['', []],
  ])('srcsetUrls(%j)', (raw, expected) => {
    expect(srcsetUrls(raw).map(([start, end]) => [raw.slice(start, end)])).toEqual(expected);
  });

  it('<base href>: the first one, with its span', () => {
    const doc = '<head><base href=" /base/sub/ "><base href="/second/"></head>';
    const result = scan(doc);
    expect(result.base?.value).toBe('/base/sub/');
    expect(doc.slice(/** @type {any} */ (result.base).start, /** @type {any} */ (result.base).end)).toBe(' /base/sub/ ');
    expect(scan('<base target="_blank">').base).toBeNull();
  });

  it('CSS in <style> and style attributes', () => {
    const doc = '<style>body { background: url(bg.png) } @import "p.css";</style><div style="background:url(\'t.png\')"></div>';
    expect(scan(doc).found.map((link) => [link.raw, link.value, link.tag, link.kind])).toEqual([
      ['bg.png', 'bg.png', 'style', 'requisite'],
      ['p.css', 'p.css', 'style', 'requisite'],
      ['t.png', 't.png', 'div', 'requisite'],
    ]);
  });

  it('entities are decoded once in a style attribute, never inside <style> (raw text)', () => {
    expect(scan('<div style="background:url(bg.png?a=1&amp;amp;b=2)"></div>').links.map((link) => link.value)).toEqual(['bg.png?a=1&amp;b=2']);
    expect(scan('<style>.a { background: url(a.png?x=1&amp;y=2) }</style>').links.map((link) => link.value)).toEqual(['a.png?x=1&amp;y=2']);
  });

  it('a style attribute\'s url() quoted with character references: the URL is what they enclose', () => {
    for (const quote of ['&quot;', '&#39;', '&#34;', '&apos;', '&#x27;']) {
      const doc = `<div style="background:url(${quote}/assets/bg.png?a=1&amp;b=2${quote})"></div>`;
      const [link] = scan(doc).links;
      expect(link.value).toBe('/assets/bg.png?a=1&b=2');
      expect(doc.slice(link.start, link.end)).toBe('/assets/bg.png?a=1&amp;b=2');
    }
    // Not a pair: left as CSS reads it.
    expect(scan('<div style="background:url(&quot;/a.png)"></div>').links.map((link) => link.value)).toEqual(['"/a.png']);
  });

  it('offsets are byte offsets in a UTF-8 page with multi-byte text before the links', () => {
    const doc = '<title>Größe “€”</title><a href="Größe.asp?q=€">x</a>\u{1F600}<img src="b.png">';
    const result = scan(doc);
    expect(result.found.map((link) => [link.raw, link.value])).toEqual([
      ['Größe.asp?q=€', 'Größe.asp?q=€'],
      ['b.png', 'b.png'],
    ]);
    const bytes = Buffer.from(doc, 'utf8');
    expect(result.links[1].start).toBe(bytes.indexOf('b.png'));
  });

  it('a windows-1252 page: spans point at the original bytes, values are read in the page charset', () => {
    const result = scan(ENC_INDEX, 'windows-1252');
    /** @param {string} raw latin1 */
    const linkAt = (raw) => {
      const found = result.links.find((link) => ENC_INDEX.subarray(link.start, link.end).equals(Buffer.from(raw, 'latin1')));
      if (!found) throw new Error(`no link spanning ${JSON.stringify(raw)}`);
      return found;
    };
    const base = 'http://h.example/enc/index.asp';
    expect(normalizeUrl(linkAt('caf\xe9.asp').value, base)).toBe('http://h.example/enc/caf%C3%A9.asp');
    expect(normalizeUrl(linkAt('plain.asp').value, base)).toBe('http://h.example/enc/plain.asp');
    expect(normalizeUrl(linkAt('/search.asp?q=caf\xe9').value, base)).toBe('http://h.example/search.asp?q=caf%E9');
    expect(result.slots).toHaveLength(1);
    expect(result.slots[0].sku).toBe('SKU-é');
    expect(ENC_INDEX.subarray(result.slots[0].start, result.slots[0].end)).toEqual(Buffer.from('\x80 9,99', 'latin1'));
  });

  it('windows-1252 bytes 0x80-0x9F are read as windows-1252 (not C1 controls), whatever the Node version', () => {
    const text = Buffer.from('<a href="prix\x80\x93a\x94.asp">x</a>', 'latin1').toString('latin1');
    expect(normalizeUrl(scanHtml(text, 'windows-1252').links[0].value, 'http://h.example/')).toBe(normalizeUrl('prix€“a”.asp', 'http://h.example/'));
  });

  it('a query on a windows-1252 page keeps the page\'s bytes, as browsers send them', () => {
    const text = Buffer.from('<a href="caf\xe9.asp?q=caf\xe9\x80#caf\xe9">x</a>', 'latin1').toString('latin1');
    expect(normalizeUrl(scanHtml(text, 'windows-1252').links[0].value, 'http://h.example/')).toBe('http://h.example/caf%C3%A9.asp?q=caf%E9%80');
    const utf8 = Buffer.from('<a href="café.asp?q=café">x</a>', 'utf8').toString('latin1');
    expect(normalizeUrl(scanHtml(utf8, 'utf-8').links[0].value, 'http://h.example/')).toBe('http://h.example/caf%C3%A9.asp?q=caf%C3%A9');
  });

  it('the same path in UTF-8 and in windows-1252 leads to the same URL', () => {
    const text = '<a href="café.asp">x</a><a href="/crème brûlée/ÿ©">y</a>';
    const base = 'http://h.example/d/';
    const utf8 = scan(Buffer.from(text, 'utf8'), 'utf-8').links.map((link) => normalizeUrl(link.value, base));
    const cp1252 = scan(Buffer.from(text, 'latin1'), 'windows-1252').links.map((link) => normalizeUrl(link.value, base));
    expect(utf8).toEqual(['http://h.example/d/caf%C3%A9.asp', 'http://h.example/cr%C3%A8me%20br%C3%BBl%C3%A9e/%C3%BF%C2%A9']);
    expect(cp1252).toEqual(utf8);
  });
});

describe('scanHtml: price slots', () => {
  /**
   * @param {string} doc
   */
  function slots(doc) {
    const result = scan(doc);
    return {
      slots: result.slots.map((slot) => ({ sku: slot.sku, content: result.bytes.subarray(slot.start, slot.end).toString('utf8') })),
      metaSku: result.metaSku,
      unclosedSlots: result.unclosedSlots,
    };
  }

  it('the content of an element with data-price-sku', () => {
    expect(slots('<p>Price: <span class="p" data-price-sku="SKU-1">€ 12,99</span> each</p>').slots).toEqual([{ sku: 'SKU-1', content: '€ 12,99' }]);
  });

  it('nested elements of the same name close the slot at the right tag', () => {
    expect(slots('<div data-price-sku="S"><div>€ <b>1</b></div>,49</div><div>after</div>').slots)
      .toEqual([{ sku: 'S', content: '<div>€ <b>1</b></div>,49' }]);
  });

  it('an empty value takes the page\'s <meta name="x-price-sku">, wherever the meta is', () => {
    const before = slots('<meta name="x-price-sku" content="META-1"><b data-price-sku="">$1</b>');
    expect(before.slots).toEqual([{ sku: null, content: '$1' }]);
    expect(before.metaSku).toBe('META-1');
    const after = slots('<b data-price-sku>$1</b><meta name="X-Price-SKU" content=" META-2 ">');
    expect(after.metaSku).toBe('META-2');
    expect(after.slots[0].sku).toBeNull();
  });

  it('entities in the SKU are decoded', () => {
    expect(slots('<i data-price-sku="A&amp;B">1</i>').slots).toEqual([{ sku: 'A&B', content: '1' }]);
  });

  it('several slots, an empty one, and an unclosed one', () => {
    const result = slots('<i data-price-sku="1">a</i><i data-price-sku="2"></i><td data-price-sku="3">c');
    expect(result.slots).toEqual([{ sku: '1', content: 'a' }, { sku: '2', content: '' }]);
    expect(result.unclosedSlots).toBe(1);
  });
});

describe('scanCss', () => {
  it('url() in every quoting, @import with and without url(), comments skipped', () => {
    const css = '@import "a.css";\n@import \'b.css\' screen;\n@import url(c.css);\nx { background: url( "d.png" ) url(\'e.png\') URL(f.png) }\n/* url(no.png) */ y { background: url(data:image/png;base64,AA) }';
    const refs = scanCss(css);
    expect(refs.map((ref) => [css.slice(ref.start, ref.end), ref.value])).toEqual([
      ['a.css', 'a.css'],
      ['b.css', 'b.css'],
      ['c.css', 'c.css'],
      ['d.png', 'd.png'],
      ['e.png', 'e.png'],
      ['f.png', 'f.png'],
      ['data:image/png;base64,AA', 'data:image/png;base64,AA'],
    ]);
  });

  it('adds the offset of CSS embedded in HTML', () => {
    const refs = scanCss('a{background:url(x.png)}', 100);
    expect(refs[0].start).toBe(100 + 'a{background:url('.length);
  });
});

describe('htmlparser2, loaded in part', () => {
  it('is the package\'s own Tokenizer, QuoteType and Parser', async () => {
    const whole = await import('htmlparser2');
    const part = await import('../../lib/document/htmlparser.js');
    expect([part.Tokenizer, part.QuoteType, part.Parser]).toEqual([whole.Tokenizer, whole.QuoteType, whole.Parser]);
  });

  it('falls back to the package entry when the two files are not beside it (a later htmlparser2 moved them)', async () => {
    const whole = await import('htmlparser2');
    const { loadParser } = await import('../../lib/document/htmlparser.js');
    const moved = await loadParser(new URL('./no-such-dir/index.js', import.meta.url).href);
    expect([moved.Tokenizer, moved.QuoteType, moved.Parser]).toEqual([whole.Tokenizer, whole.QuoteType, whole.Parser]);
  });
});
