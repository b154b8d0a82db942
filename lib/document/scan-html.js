// @ts-check
import { Tokenizer, QuoteType } from './htmlparser.js';
import { decodeHTMLAttribute } from 'entities/decode';
import { scanCss } from './css.js';
import { TextDecoder } from 'node:util';

/** A URL between quotes written as character references (`&quot;…&quot;`). */
const ENTITY_QUOTED = /^(&(?:quot|apos|#34|#x22|#39|#x27);)(.*)\1$/is;
/** The ASCII whitespace browsers strip around a URL; never 0xA0 or 0x85, which are bytes of characters here. */
const LEADING_SPACE = /^[\t\n\f\r ]+/;
const TRAILING_SPACE = /[\t\n\f\r ]+$/;

/**
 * Pushing a new attribute is the caller's job. From 16 attributes a set of names is kept, so a tag with thousands costs no square.
 * @param {{ name: string }[]} attributes a tag's own list @param {string} name
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
 * One pass over an HTML page finds every link and price slot with its exact offsets. The page is a latin1 string,
 * so offsets are byte offsets and any ASCII-compatible encoding survives untouched.
 * @typedef {'navigation' | 'requisite' | 'form' | 'canonical'} LinkKind form: never crawled nor pointed at a static file,
 *   since a form replaces the query with its fields; canonical: the page's public URL, never made relative
 * @typedef {{ start: number, end: number, value: string, kind: LinkKind, tag: string, attr: string }} Link
 *   start/end: byte offsets of the URL text, quotes excluded; value: entities decoded, the page's charset applied.
 *   attr "+action": a form without an action, start = end after its tag name, where the rewrite may insert ` action="…"`;
 *   attr "=action" or "=formaction": a bare attribute, start = end after its name, where the rewrite may insert `="…"`
 * @typedef {{ start: number, end: number, value: string } | null} BaseHref
 * @typedef {{ start: number, end: number, sku: string | null }} Slot the element's content; sku null: take the page's meta
 * @typedef {{ links: Link[], base: BaseHref, slots: Slot[], metaSku: string | null, unclosedSlots: number, nofollow: boolean }} ScanResult
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

/** @param {string} text the page as latin1 @param {string} [charset] to decode non-ASCII URLs @returns {ScanResult} */
export function scanHtml(text, charset = 'utf-8') {
  const scan = new HtmlScan(text, charset);
  const tokenizer = new Tokenizer({ decodeEntities: false }, scan);
  tokenizer.write(text);
  tokenizer.end();
  const { links, base, slots, metaSku, nofollow } = scan;
  return { links, base, slots, metaSku, unclosedSlots: scan.slot ? 1 : 0, nofollow };
}

/** Every field is set here, so that the tokenizer calls into one shape. */
class HtmlScan {
  /** @type {Link[]} */ links = [];
  /** @type {Slot[]} */ slots = [];
  /** @type {BaseHref} */ base = null;
  /** @type {string | null} */ metaSku = null;
  nofollow = false;
  // The tag being read.
  tagName = '';
  tagNameEnd = 0;
  /** @type {{ name: string, start: number, end: number, quote: number }[]} */ attributes = [];
  attributeName = '';
  dataStart = -1;
  dataEnd = -1;
  inStyle = false;
  styleStart = 0;
  /** @type {{ tag: string, depth: number, start: number, sku: string | null } | null} the open slot; depth counts its tag name */
  slot = null;

  /** @param {string} text @param {string} charset */
  constructor(text, charset) {
    this.text = text;
    this.decoder = makeDecoder(charset, true);
    this.rawDecoder = makeDecoder(charset, false); // raw text (<style>): no entities
  }

  /** @param {number} start @param {number} end */
  valueAt(start, end) {
    return this.decoder(this.text.slice(start, end));
  }

  /** @param {string} name */
  attribute(name) {
    return this.attributes.find((a) => a.name === name);
  }

  /** @param {number} start @param {number} end */
  onopentagname(start, end) {
    this.tagName = this.text.slice(start, end).toLowerCase();
    this.tagNameEnd = end;
    this.attributes = [];
  }

  /** @param {number} start @param {number} end */
  onattribname(start, end) {
    this.attributeName = this.text.slice(start, end).toLowerCase();
    this.dataStart = -1;
  }

  /** @param {number} start @param {number} end */
  onattribdata(start, end) {
    if (this.dataStart < 0) this.dataStart = start;
    this.dataEnd = end;
  }

  /** @param {number} quote @param {number} end */
  onattribend(quote, end) {
    if (this.dataStart < 0) { this.dataStart = end; this.dataEnd = end; }
    if (quote === QuoteType.NoValue) this.dataStart = this.dataEnd = end;
    // A repeated attribute is dropped by browsers (the first one counts): it is no link.
    if (hasAttribute(this.attributes, this.attributeName)) { this.dataStart = -1; return; }
    this.attributes.push({ name: this.attributeName, start: this.dataStart, end: quote === QuoteType.Unquoted ? end : this.dataEnd, quote });
    this.dataStart = -1;
  }

  /** @param {number} end */
  onopentagend(end) {
    this.finishOpenTag();
    if (this.slot && this.slot.start < 0) this.slot.start = end + 1;
    if (this.tagName === 'style') { this.inStyle = true; this.styleStart = end + 1; }
  }

  /** @param {number} end */
  onselfclosingtag(end) {
    this.finishOpenTag();
    const slot = this.slot;
    if (slot && slot.start < 0) { // <span data-price-sku="1"/>: nothing to fill
      if (slot.tag === this.tagName) this.slot = null; else slot.start = end + 1;
    } else if (slot && slot.tag === this.tagName) slot.depth--;
  }

  /** @param {number} start @param {number} end */
  onclosetag(start, end) {
    const name = this.text.slice(start, end).toLowerCase();
    if (name === 'style' && this.inStyle) {
      this.inStyle = false;
      for (const ref of scanCss(this.text.slice(this.styleStart, start - 2), this.styleStart)) {
        this.links.push({ ...ref, value: this.rawDecoder(ref.value), kind: 'requisite', tag: 'style', attr: '' });
      }
    }
    const slot = this.slot;
    if (slot && name === slot.tag && --slot.depth === 0) {
      this.slots.push({ start: slot.start, end: start - 2, sku: slot.sku });
      this.slot = null;
    }
  }

  onattribentity() {}
  ontext() {}
  ontextentity() {}
  oncdata() {}
  oncomment() {}
  ondeclaration() {}
  onprocessinginstruction() {}
  onend() {}

  finishOpenTag() {
    const tag = this.tagName;
    // A form without an action submits to the page's own URL, which becomes its file: the rewrite may insert one.
    if (tag === 'form' && !this.attribute('action')) this.links.push({ start: this.tagNameEnd, end: this.tagNameEnd, value: '', kind: 'form', tag, attr: '+action' });
    if (this.slot && tag === this.slot.tag && !VOID_ELEMENTS.has(tag)) this.slot.depth++;
    const map = URL_ATTRIBUTES[tag];
    for (const attr of this.attributes) {
      const kind = map?.[attr.name];
      if (attr.quote === QuoteType.NoValue) {
        // A bare `action` is an empty one: the rewrite may give it a value.
        if (kind === 'form') this.links.push({ start: attr.end, end: attr.end, value: '', kind, tag, attr: `=${attr.name}` });
        continue;
      }
      if (kind) {
        if (attr.name === 'srcset') this.addSrcset(attr);
        else this.addLink(attr, kind, attr.name);
      } else if (attr.name === 'background') {
        this.addLink(attr, 'requisite', 'background');
      } else if (attr.name === 'style') {
        this.addStyle(attr);
      }
    }
    if (tag === 'link') this.handleLink();
    else if (tag === 'base') this.handleBase();
    else if (tag === 'meta') this.handleMeta();
    const sku = this.attribute('data-price-sku');
    if (sku && !this.slot && !VOID_ELEMENTS.has(tag)) {
      const value = sku.quote === QuoteType.NoValue ? '' : this.valueAt(sku.start, sku.end).trim();
      this.slot = { tag, depth: 1, start: -1, sku: value === '' ? null : value };
    }
  }

  /** @param {{ start: number, end: number }} attr @param {LinkKind} kind @param {string} attrName */
  addLink(attr, kind, attrName) {
    const raw = this.text.slice(attr.start, attr.end);
    // Not bytes 0xA0 or 0x85: they end "à" in UTF-8 (C3 A0) or "あ" in Shift_JIS (82 A0).
    const trimmedStart = attr.start + (LEADING_SPACE.exec(raw)?.[0].length ?? 0);
    const trimmedEnd = attr.end - (TRAILING_SPACE.exec(raw)?.[0].length ?? 0);
    if (trimmedEnd <= trimmedStart) {
      // action="" submits to the page's own URL: on a static page that is its file, so it is a link too.
      if (kind === 'form') this.links.push({ start: attr.start, end: attr.end, value: '', kind, tag: this.tagName, attr: attrName });
      return;
    }
    this.links.push({ start: trimmedStart, end: trimmedEnd, value: this.valueAt(trimmedStart, trimmedEnd), kind, tag: this.tagName, attr: attrName });
  }

  /** @param {{ start: number, end: number }} attr */
  addSrcset(attr) {
    for (const [from, to] of srcsetUrls(this.text.slice(attr.start, attr.end))) {
      const start = attr.start + from;
      const end = attr.start + to;
      this.links.push({ start, end, value: this.valueAt(start, end), kind: 'requisite', tag: this.tagName, attr: 'srcset' });
    }
  }

  /** @param {{ start: number, end: number }} attr a style attribute */
  addStyle(attr) {
    const { text, tagName: tag } = this;
    for (const ref of scanCss(text.slice(attr.start, attr.end), attr.start)) {
      // In an attribute the quotes of url(&quot;/bg.png&quot;) may be character references.
      const quoted = ENTITY_QUOTED.exec(text.slice(ref.start, ref.end));
      if (quoted) this.links.push({ start: ref.start + quoted[1].length, end: ref.end - quoted[1].length, value: this.decoder(quoted[2]), kind: 'requisite', tag, attr: 'style' });
      else this.links.push({ ...ref, value: this.decoder(ref.value), kind: 'requisite', tag, attr: 'style' });
    }
  }

  handleLink() {
    const href = this.attribute('href');
    if (!href || href.quote === QuoteType.NoValue) return;
    const rel = this.attribute('rel');
    const relText = rel ? this.text.slice(rel.start, rel.end) : '';
    this.addLink(href, REQUISITE_RELS.test(relText) ? 'requisite' : CANONICAL_REL.test(relText) ? 'canonical' : 'navigation', 'href');
  }

  handleBase() {
    const href = this.attribute('href');
    if (href && this.base === null && href.quote !== QuoteType.NoValue) {
      this.base = { start: href.start, end: href.end, value: this.valueAt(href.start, href.end).trim() };
    }
  }

  handleMeta() {
    const { text } = this;
    const name = this.attribute('name');
    const httpEquiv = this.attribute('http-equiv');
    const property = this.attribute('property');
    const content = this.attribute('content');
    if (!content || content.quote === QuoteType.NoValue) return;
    const metaName = name ? text.slice(name.start, name.end).trim().toLowerCase() : '';
    if (metaName === 'x-price-sku') {
      this.metaSku = this.valueAt(content.start, content.end).trim() || this.metaSku;
    } else if (metaName === 'robots' && /(^|[\s,])(nofollow|none)([\s,]|$)/i.test(text.slice(content.start, content.end))) {
      this.nofollow = true;
    }
    if (property && text.slice(property.start, property.end).trim().toLowerCase() === 'og:url') {
      this.addLink(content, 'canonical', 'content');
    }
    if (httpEquiv && text.slice(httpEquiv.start, httpEquiv.end).trim().toLowerCase() === 'refresh') this.addRefresh(content);
  }

  /** content="5; url=next.asp": the URL part only, perhaps quoted with character references. @param {{ start: number, end: number }} content */
  addRefresh(content) {
    const raw = this.text.slice(content.start, content.end);
    const match = /^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(['"]|&(?:quot|apos|#0*34|#x0*22|#0*39|#x0*27);)?/i.exec(raw);
    if (!match) return;
    const start = content.start + match[0].length;
    let end = content.end;
    const tail = this.text.slice(start, end);
    const quote = match[1] ?? '';
    const quoteEnd = quote.length === 1 ? tail.indexOf(quote) : quote ? tail.toLowerCase().indexOf(quote.toLowerCase()) : -1;
    if (quoteEnd >= 0) end = start + quoteEnd;
    if (!/url\s*=|[;,]/i.test(raw.slice(0, match[0].length))) return; // "5" alone: no URL
    this.addLink({ start, end }, 'navigation', 'content');
  }
}

/**
 * From the page's latin1 bytes to the URL a browser would resolve: entities decoded, read in the page's charset,
 * and a query in a legacy charset percent-encoded in that charset, as browsers do.
 * @param {string} charset @param {boolean} entities decode HTML entities (attribute values) or not (raw text)
 * @returns {(latin1: string) => string}
 */
function makeDecoder(charset, entities) {
  const legacy = legacyCharset(charset);
  /** @type {((bytes: Buffer) => string) | undefined} */ let decodeBytes;
  /** @type {Map<string, string> | undefined} */ let toBytes;
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
    // Found in the text the browser sees: the "#" of "&#38;" starts no fragment.
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

/** @type {Map<string, Map<string, string>>} by charset label; a site's pages share one or two */
const REVERSE_TABLES = new Map();

/** @param {string} charset */
function reverseTableOf(charset) {
  let table = REVERSE_TABLES.get(charset);
  if (!table) {
    table = reverseTable(charset);
    if (REVERSE_TABLES.size >= 16) REVERSE_TABLES.clear(); // labels come from pages: bounded
    REVERSE_TABLES.set(charset, table);
  }
  return table;
}

/** Character -> its byte percent-encoded, for a single-byte charset's upper half. @param {string} charset */
function reverseTable(charset) {
  const decode = bytesDecoder(charset);
  /** @type {Map<string, string>} */ const table = new Map();
  for (let byte = 0x80; byte <= 0xff; byte++) {
    const char = decode(Buffer.from([byte]));
    if (char !== '\ufffd' && !table.has(char)) table.set(char, `%${byte.toString(16).toUpperCase()}`);
  }
  return table;
}

/**
 * Single-byte legacy charsets, whose bytes a query keeps as browsers do. Double-byte ones are not:
 * WHATWG's encoders differ from Node's decoders in too many places.
 * @param {string} charset
 */
function legacyCharset(charset) {
  return /^(windows-125\d|cp125\d|iso-8859-\d+|iso8859-\d+|latin-?1|l1|us-ascii|ascii|koi8-[ru])$/i.test(charset);
}

/** windows-1252 bytes 0x80-0x9F, also meant by "iso-8859-1" and "ascii": some Node versions decode them as C1 controls. */
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

/** Per the HTML spec: a URL runs to white space, less trailing commas; a descriptor runs to a comma outside parentheses. @param {string} raw @returns {[number, number][]} */
export function srcsetUrls(raw) {
  /** @type {[number, number][]} */ const spans = [];
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
