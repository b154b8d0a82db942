// @ts-check
import { Tokenizer, QuoteType } from 'htmlparser2';
import { decodeHTMLAttribute } from 'entities';
import { scanCss } from './css.js';
import { TextDecoder } from 'node:util';

/** A URL between quotes written as character references (`&quot;…&quot;`, `&#39;…&#39;`). */
const ENTITY_QUOTED = /^(&(?:quot|apos|#34|#x22|#39|#x27);)(.*)\1$/is;
/** The ASCII whitespace browsers strip around a URL (never 0xA0 or 0x85: they are bytes of characters here). */
const LEADING_SPACE = /^[\t\n\f\r ]+/;
const TRAILING_SPACE = /[\t\n\f\r ]+$/;

/**
 * Whether a tag already has an attribute of this name (the caller pushes a new one). From 16 attributes a
 * name set is kept, so a tag with thousands does not cost their square.
 * @param {{ name: string }[]} attributes a tag's own list (a new one each tag)
 * @param {string} name
 */
function hasAttribute(attributes, name) {
  if (attributes.length < 16) {
    for (let i = 0; i < attributes.length; i++) if (attributes[i].name === name) return true;
    return false;
  }
  let names = NAMES_OF.get(attributes);
  if (!names) {
    names = new Set(attributes.map((attribute) => attribute.name));
    NAMES_OF.set(attributes, names);
  }
  if (names.has(name)) return true;
  names.add(name);
  return false;
}

/** @type {WeakMap<object, Set<string>>} hasAttribute's names, by a tag's list */
const NAMES_OF = new WeakMap();

/**
 * One pass over an HTML page finding every link and price slot with exact offsets. The page is a latin1
 * string (a char per byte): offsets are byte offsets and any ASCII-compatible encoding survives untouched.
 */

/**
 * @typedef {'navigation' | 'requisite' | 'form' | 'canonical'} LinkKind
 *   navigation: a link to follow (a, area, iframe, link, meta refresh); requisite: what a page needs to
 *   display (img, script, stylesheet, CSS url()); form: an action, never crawled nor made static (a form
 *   replaces the query); canonical: the public URL (rel=canonical, og:url), never a relative static path
 * @typedef {{ start: number, end: number, value: string, kind: LinkKind, tag: string, attr: string }} Link
 *   start/end: byte offsets of the URL text (never the quotes); attr "+action": a <form> without one,
 *   start = end after the tag name, where ` action="…"` may be inserted; attr "=action"/"=formaction": a
 *   bare one, start = end after the name, where `="…"` may go; value: entities decoded, charset applied
 * @typedef {{ start: number, end: number, value: string } | null} BaseHref
 * @typedef {{ start: number, end: number, sku: string | null }} Slot
 *   start/end: byte offsets of the element's content; sku null: take the page's meta
 * @typedef {{ links: Link[], base: BaseHref, slots: Slot[], metaSku: string | null, unclosedSlots: number, nofollow: boolean }} ScanResult
 *   nofollow: a <meta name="robots"> says nofollow
 */

/** Tag -> attribute -> kind. `link` and `meta` are handled apart. */
const URL_ATTRIBUTES = /** @type {Record<string, Record<string, LinkKind>>} */ ({
  a: { href: 'navigation' },
  area: { href: 'navigation' },
  form: { action: 'form' },
  button: { formaction: 'form' },
  iframe: { src: 'navigation' },
  frame: { src: 'navigation' },
  img: { src: 'requisite', srcset: 'requisite' },
  script: { src: 'requisite' },
  source: { src: 'requisite', srcset: 'requisite' },
  embed: { src: 'requisite' },
  audio: { src: 'requisite' },
  video: { src: 'requisite', poster: 'requisite' },
  track: { src: 'requisite' },
  input: { src: 'requisite', formaction: 'form' },
  object: { data: 'requisite' },
});

const REQUISITE_RELS = /(^|\s)(stylesheet|icon|shortcut|apple-touch-icon|preload|prefetch|modulepreload|manifest|mask-icon)(\s|$)/i;

const CANONICAL_REL = /(^|\s)canonical(\s|$)/i;

const VOID_ELEMENTS = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);

/**
 * @param {string} text the page as latin1
 * @param {string} [charset] the page's charset, to decode non-ASCII URLs
 * @returns {ScanResult}
 */
export function scanHtml(text, charset = 'utf-8') {
  /** @type {Link[]} */
  const links = [];
  /** @type {Slot[]} */
  const slots = [];
  /** @type {BaseHref} */
  let base = null;
  /** @type {string | null} */
  let metaSku = null;
  let unclosedSlots = 0;
  let nofollow = false;

  // The tag being read.
  let tagName = '';
  let tagNameEnd = 0;
  /** @type {{ name: string, start: number, end: number, quote: number }[]} */
  let attributes = [];
  let attributeName = '';
  let dataStart = -1;
  let dataEnd = -1;
  let inStyle = false;
  let styleStart = 0;

  // The open price slot, if any: nesting depth of its tag name.
  /** @type {{ tag: string, depth: number, start: number, sku: string | null } | null} */
  let slot = null;

  const decoder = makeDecoder(charset, true);
  const rawDecoder = makeDecoder(charset, false); // raw text (<style>): no entities
  /** @param {number} start @param {number} end */
  const valueAt = (start, end) => decoder(text.slice(start, end));

  /** @param {string} name */
  const attribute = (name) => attributes.find((a) => a.name === name);

  /** @param {{ start: number, end: number }} attr @param {LinkKind} kind @param {string} attrName */
  const addLink = (attr, kind, attrName) => {
    const raw = text.slice(attr.start, attr.end);
    // ASCII whitespace only: 0xA0 or 0x85 may end a character ("à" is C3 A0 in UTF-8).
    const trimmedStart = attr.start + (LEADING_SPACE.exec(raw)?.[0].length ?? 0);
    const trimmedEnd = attr.end - (TRAILING_SPACE.exec(raw)?.[0].length ?? 0);
    if (trimmedEnd <= trimmedStart) {
      // action="" submits to the page's own URL: on a static page that is its file, so it is a link too.
      if (kind === 'form') links.push({ start: attr.start, end: attr.end, value: '', kind, tag: tagName, attr: attrName });
      return;
    }
    links.push({ start: trimmedStart, end: trimmedEnd, value: valueAt(trimmedStart, trimmedEnd), kind, tag: tagName, attr: attrName });
  };

  const finishOpenTag = () => {
    const tag = tagName;
    // A form without an action submits to the page's own URL, its file once written: the rewrite may
    // insert one after the tag name (attr "+action").
    if (tag === 'form' && !attribute('action')) links.push({ start: tagNameEnd, end: tagNameEnd, value: '', kind: 'form', tag, attr: '+action' });
    if (slot && tag === slot.tag && !VOID_ELEMENTS.has(tag)) slot.depth++;
    const map = URL_ATTRIBUTES[tag];
    for (const attr of attributes) {
      const kind = map?.[attr.name];
      if (attr.quote === QuoteType.NoValue) {
        // A bare `action` (or `formaction`) submits to the page's own URL: the rewrite may give it a value (attr "=action").
        if (kind === 'form') links.push({ start: attr.end, end: attr.end, value: '', kind, tag, attr: `=${attr.name}` });
        continue;
      }
      if (kind) {
        if (attr.name === 'srcset') addSrcset(attr);
        else addLink(attr, kind, attr.name);
      } else if (attr.name === 'background') {
        addLink(attr, 'requisite', 'background');
      } else if (attr.name === 'style') {
        for (const ref of scanCss(text.slice(attr.start, attr.end), attr.start)) {
          // In an attribute the url() quotes may be character references (&quot;): the URL is what they enclose.
          const quoted = ENTITY_QUOTED.exec(text.slice(ref.start, ref.end));
          if (quoted) links.push({ start: ref.start + quoted[1].length, end: ref.end - quoted[1].length, value: decoder(quoted[2]), kind: 'requisite', tag, attr: 'style' });
          else links.push({ ...ref, value: decoder(ref.value), kind: 'requisite', tag, attr: 'style' });
        }
      }
    }
    if (tag === 'link') {
      const href = attribute('href');
      if (href && href.quote !== QuoteType.NoValue) {
        const rel = attribute('rel');
        const relText = rel ? text.slice(rel.start, rel.end) : '';
        addLink(href, REQUISITE_RELS.test(relText) ? 'requisite' : CANONICAL_REL.test(relText) ? 'canonical' : 'navigation', 'href');
      }
    } else if (tag === 'base') {
      const href = attribute('href');
      if (href && base === null && href.quote !== QuoteType.NoValue) {
        base = { start: href.start, end: href.end, value: valueAt(href.start, href.end).trim() };
      }
    } else if (tag === 'meta') {
      handleMeta();
    }
    const sku = attribute('data-price-sku');
    if (sku && !slot && !VOID_ELEMENTS.has(tag)) {
      const value = sku.quote === QuoteType.NoValue ? '' : valueAt(sku.start, sku.end).trim();
      slot = { tag, depth: 1, start: -1, sku: value === '' ? null : value };
    }
  };

  const handleMeta = () => {
    const name = attribute('name');
    const httpEquiv = attribute('http-equiv');
    const property = attribute('property');
    const content = attribute('content');
    if (!content || content.quote === QuoteType.NoValue) return;
    const metaName = name ? text.slice(name.start, name.end).trim().toLowerCase() : '';
    if (metaName === 'x-price-sku') {
      metaSku = valueAt(content.start, content.end).trim() || metaSku;
    } else if (metaName === 'robots' && /(^|[\s,])(nofollow|none)([\s,]|$)/i.test(text.slice(content.start, content.end))) {
      nofollow = true;
    }
    if (property && text.slice(property.start, property.end).trim().toLowerCase() === 'og:url') {
      addLink(content, 'canonical', 'content');
    }
    if (httpEquiv && text.slice(httpEquiv.start, httpEquiv.end).trim().toLowerCase() === 'refresh') {
      // content="5; url=next.asp" -> the URL part only
      const raw = text.slice(content.start, content.end);
      // The quotes may be character references (url=&quot;…&quot;).
      const match = /^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(['"]|&(?:quot|apos|#0*34|#x0*22|#0*39|#x0*27);)?/i.exec(raw);
      if (!match) return;
      const start = content.start + match[0].length;
      let end = content.end;
      const tail = text.slice(start, end);
      const quote = match[1] ?? '';
      const quoteEnd = quote.length === 1 ? tail.indexOf(quote) : quote ? tail.toLowerCase().indexOf(quote.toLowerCase()) : -1;
      if (quoteEnd >= 0) end = start + quoteEnd;
      if (!/url\s*=|[;,]/i.test(raw.slice(0, match[0].length))) return; // "5" alone: no URL
      addLink({ start, end }, 'navigation', 'content');
    }
  };

  /** @param {{ start: number, end: number }} attr */
  const addSrcset = (attr) => {
    for (const [from, to] of srcsetUrls(text.slice(attr.start, attr.end))) {
      const start = attr.start + from;
      const end = attr.start + to;
      links.push({ start, end, value: valueAt(start, end), kind: 'requisite', tag: tagName, attr: 'srcset' });
    }
  };

  const tokenizer = new Tokenizer({ decodeEntities: false }, {
    onopentagname(start, end) {
      tagName = text.slice(start, end).toLowerCase();
      tagNameEnd = end;
      attributes = [];
    },
    onattribname(start, end) {
      attributeName = text.slice(start, end).toLowerCase();
      dataStart = -1;
    },
    onattribdata(start, end) {
      if (dataStart < 0) dataStart = start;
      dataEnd = end;
    },
    onattribentity() {},
    onattribend(quote, end) {
      if (dataStart < 0) { dataStart = end; dataEnd = end; }
      if (quote === QuoteType.NoValue) dataStart = dataEnd = end;
      // Browsers drop a repeated attribute (the first counts): it is no link.
      if (hasAttribute(attributes, attributeName)) { dataStart = -1; return; }
      attributes.push({ name: attributeName, start: dataStart, end: quote === QuoteType.Unquoted ? end : dataEnd, quote });
      dataStart = -1;
    },
    onopentagend(end) {
      finishOpenTag();
      if (slot && slot.start < 0) slot.start = end + 1;
      if (tagName === 'style') { inStyle = true; styleStart = end + 1; }
    },
    onselfclosingtag(end) {
      finishOpenTag();
      if (slot && slot.start < 0) { // <span data-price-sku="1"/>: nothing to fill
        if (slot.tag === tagName) slot = null; else slot.start = end + 1;
      } else if (slot && slot.tag === tagName) slot.depth--;
    },
    onclosetag(start, end) {
      const name = text.slice(start, end).toLowerCase();
      if (name === 'style' && inStyle) {
        inStyle = false;
        for (const ref of scanCss(text.slice(styleStart, start - 2), styleStart)) {
          links.push({ ...ref, value: rawDecoder(ref.value), kind: 'requisite', tag: 'style', attr: '' });
        }
      }
      if (slot && name === slot.tag && --slot.depth === 0) {
        slots.push({ start: slot.start, end: start - 2, sku: slot.sku });
        slot = null;
      }
    },
    ontext() {},
    ontextentity() {},
    oncdata() {},
    oncomment() {},
    ondeclaration() {},
    onprocessinginstruction() {},
    onend() {},
  });
  tokenizer.write(text);
  tokenizer.end();
  if (slot) unclosedSlots++;
  return { links, base, slots, metaSku, unclosedSlots, nofollow };
}

/**
 * A decoder from a latin1 slice to the URL text a browser would resolve: entities decoded (attributes),
 * path read in the page's charset, a legacy charset's query percent-encoded in that charset, not UTF-8.
 * @param {string} charset
 * @param {boolean} entities decode HTML entities (attribute values) or not (raw text)
 * @returns {(latin1: string) => string}
 */
function makeDecoder(charset, entities) {
  const legacy = legacyCharset(charset);
  /** @type {((bytes: Buffer) => string) | undefined} */
  let decodeBytes;
  /** @type {Map<string, string> | undefined} */
  let toBytes;
  /** bytes in the page's charset, then entities: the text a browser sees */
  const read = (/** @type {string} */ raw) => {
    let text = raw;
    if (/[^\x00-\x7f]/.test(text)) {
      decodeBytes ??= bytesDecoder(charset);
      text = decodeBytes(Buffer.from(text, 'latin1'));
    }
    return entities && text.includes('&') ? decodeHTMLAttribute(text) : text;
  };
  return (latin1) => {
    const text = read(latin1);
    if (!legacy) return text;
    // A legacy page's query goes in its charset, found in the text the browser sees: "&#38;" starts no fragment.
    const queryStart = text.indexOf('?');
    if (queryStart < 0) return text;
    const hashStart = text.indexOf('#', queryStart);
    const queryEnd = hashStart < 0 ? text.length : hashStart;
    const query = text.slice(queryStart, queryEnd);
    if (!/[^\x00-\x7f]/.test(query)) return text;
    const encoded = query.replace(/[^\x00-\x7f]/gu, (char) => {
      toBytes ??= reverseTableOf(charset);
      // Not in the charset: browsers send it as a numeric character reference.
      return toBytes.get(char) ?? encodeURIComponent(`&#${char.codePointAt(0)};`);
    });
    return text.slice(0, queryStart) + encoded + text.slice(queryEnd);
  };
}

/** @type {Map<string, Map<string, string>>} reverseTable by charset label (a site's pages share one or two) */
const REVERSE_TABLES = new Map();

/** reverseTable, made once per charset. @param {string} charset */
function reverseTableOf(charset) {
  let table = REVERSE_TABLES.get(charset);
  if (!table) {
    table = reverseTable(charset);
    if (REVERSE_TABLES.size >= 16) REVERSE_TABLES.clear(); // labels come from pages: bounded
    REVERSE_TABLES.set(charset, table);
  }
  return table;
}

/** Character -> its byte, percent-encoded, for a single-byte charset's upper half. @param {string} charset */
function reverseTable(charset) {
  const decode = bytesDecoder(charset);
  /** @type {Map<string, string>} */
  const table = new Map();
  for (let byte = 0x80; byte <= 0xff; byte++) {
    const char = decode(Buffer.from([byte]));
    if (char !== '\ufffd' && !table.has(char)) table.set(char, `%${byte.toString(16).toUpperCase()}`);
  }
  return table;
}

/**
 * Single-byte legacy charsets, whose bytes browsers keep in a query. Not double-byte ones: WHATWG's
 * encoders differ from Node's decoders in too many places.
 * @param {string} charset
 */
function legacyCharset(charset) {
  return /^(windows-125\d|cp125\d|iso-8859-\d+|iso8859-\d+|latin-?1|l1|us-ascii|ascii|koi8-[ru])$/i.test(charset);
}

/** windows-1252 0x80-0x9F (WHATWG: also "iso-8859-1", "ascii"); some Node versions decode them as C1 controls. */
const WINDOWS_1252_HIGH = '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

/** @param {string} charset @returns {(bytes: Buffer) => string} */
function bytesDecoder(charset) {
  if (/^(windows-1252|cp1252|iso-8859-1|iso8859-1|latin-?1|l1|us-ascii|ascii)$/i.test(charset)) {
    return (bytes) => {
      let out = '';
      for (const byte of bytes) out += byte >= 0x80 && byte <= 0x9f ? WINDOWS_1252_HIGH[byte - 0x80] : String.fromCharCode(byte);
      return out;
    };
  }
  let decoder;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return (bytes) => decoder.decode(bytes);
}

/**
 * A srcset value's URL spans, per the HTML spec: a URL runs to the next white space (trailing commas
 * excluded), a descriptor to the next comma outside parentheses.
 * @param {string} raw @returns {[number, number][]}
 */
export function srcsetUrls(raw) {
  /** @type {[number, number][]} */
  const spans = [];
  const isSpace = (/** @type {string} */ c) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f';
  let i = 0;
  while (i < raw.length) {
    while (i < raw.length && (isSpace(raw[i]) || raw[i] === ',')) i++;
    if (i >= raw.length) break;
    const start = i;
    while (i < raw.length && !isSpace(raw[i])) i++;
    let end = i;
    let endedWithComma = false;
    while (end > start && raw[end - 1] === ',') { end--; endedWithComma = true; }
    if (end > start) spans.push([start, end]);
    if (endedWithComma) continue;
    let depth = 0;
    while (i < raw.length && !(raw[i] === ',' && depth === 0)) {
      if (raw[i] === '(') depth++;
      else if (raw[i] === ')' && depth > 0) depth--;
      i++;
    }
  }
  return spans;
}
