// @ts-check
import { canonicalKey, encodeFilePath, parseHttpUrl, relativeFileUrl } from '../url.js';

/**
 * The new text of every link in one document, and the edits to its bytes. A link is left alone when it already
 * resolves, at the paths where the file is served (`staticRoot`), to the target it had on the live site.
 * @typedef {{ start: number, end: number, text: string, placeholder?: { sku: string } }} Edit
 * @typedef {{ start: number, end: number, value: string, kind: import('./scan-html.js').LinkKind, attr?: string,
 *   key?: string | null, hash?: string }} LinkRef key/hash: the target's canonical URL and fragment if resolved; key null: not http(s)
 * @typedef {{ pageUrl: URL, file: string, links: LinkRef[], base?: { start: number, end: number, value: string } | null,
 *   targetFile: (key: string, kind: import('./scan-html.js').LinkKind) => string | null, staticRoot: URL, dynamicBase?: URL | null,
 *   crawlOrigins: Set<string>, relativeLinks?: boolean, siteUrl?: URL | null }} LinkContext
 *   relativeLinks: links to written files are made relative, so the tree works under any path and from file://;
 *   siteUrl: the public base on which canonical links are made absolute
 */

/** "a.html", "../b/", "?q", "#f", "". @param {string} value */
export function isPathRelative(value) {
  return !/^([a-z][a-z0-9+.-]*:|[/\\])/i.test(value);
}

/** @param {LinkContext} ctx @returns {Edit[]} unsorted edits */
export function planLinkEdits(ctx) {
  const { pageUrl, file, links, base, staticRoot } = ctx;
  /** @type {Edit[]} */ const edits = [];
  const staticDoc = new URL(encodeFilePath(file), staticRoot);
  let docBase = pageUrl;
  let staticBase = staticDoc;
  if (base) {
    docBase = parseHttpUrl(base.value, pageUrl) ?? pageUrl;
    const baseInStatic = parseHttpUrl(base.value, staticDoc);
    if (baseInStatic && sameDirectory(baseInStatic, staticDoc) && !(ctx.relativeLinks && !isPathRelative(base.value))) {
      staticBase = baseInStatic;
    } else {
      // The base would send our relative links elsewhere: point it at the file itself.
      edits.push({ start: base.start, end: base.end, text: encodeFilePath(file.slice(file.lastIndexOf('/') + 1)) });
    }
  }
  /** @type {Resolution} */ const resolution = {
    docBase,
    staticBase,
    // With the same origin and directory live and static, relative links resolve alike: a live one needs no rewrite.
    sameLayout: sameDirectory(docBase, staticBase),
    noBase: !base,
  };
  for (const link of links) {
    const text = newLinkText(link, resolution, ctx);
    if (text === null) continue;
    edits.push({ start: link.start, end: link.end, text: editText(link.attr, text) });
  }
  return edits;
}

/**
 * @param {string | undefined} attr none in CSS; "+name": missing, inserted whole; "=name": bare, gets a value
 * @param {string} text the new URL text
 */
function editText(attr, text) {
  if (!attr) return text;
  const value = escapeAttribute(text);
  if (attr[0] === '+') return ` ${attr.slice(1)}="${value.replace(/"/g, '&quot;')}"`;
  if (attr[0] === '=') return `="${value.replace(/"/g, '&quot;')}"`;
  return value;
}

/** @typedef {{ docBase: URL, staticBase: URL, sameLayout: boolean, noBase: boolean }} Resolution */

/**
 * @param {LinkRef} link @param {Resolution} resolution @param {LinkContext} ctx
 * @returns {string | null} the new URL text, or null to leave it untouched
 */
function newLinkText(link, resolution, ctx) {
  const value = link.value;
  let key = link.key;
  let hash = link.hash ?? '';
  /** @type {URL | null} */ let target = null;
  if (key === undefined) {
    target = parseHttpUrl(value, resolution.docBase);
    key = target ? canonicalKey(target) : null;
    hash = target?.hash ?? '';
  }
  if (key === null) return null; // mailto:, javascript:, data:, tel:, invalid
  if (link.kind === 'canonical') return canonicalText(value, key, hash, ctx);
  if (link.kind === 'form' && value === '') return ownFormText(ctx);
  // A form's action is never a static file: the form stays live, like an out-of-scope link.
  const targetFile = link.kind === 'form' ? null : ctx.targetFile(key, link.kind);
  const local = value === '' || value[0] === '?' || value[0] === '#';
  if (targetFile !== null) {
    const text = safeUrlText(relativeFileUrl(ctx.file, targetFile) + hash);
    if (text === value) return null;
    if (targetFile === ctx.file && resolution.noBase && (value === '' || value[0] === '#')) return null;
    // Relative links work under any path and from file://, unless they climb above the tree
    // (a browser stops "../" at a site's root; a file system and a sub-path do not).
    if (ctx.relativeLinks && (!isPathRelative(value) || (resolution.noBase && climbsOut(value, ctx.file)))) return text;
    // Could the link already reach that file, written another way? Only if it names it.
    const name = text.slice(text.lastIndexOf('/') + 1).split('#')[0];
    if (!value.includes(name) && !local) return text;
    const asServed = parseHttpUrl(value, resolution.staticBase);
    const wanted = new URL(encodeFilePath(targetFile), ctx.staticRoot);
    wanted.hash = hash;
    return asServed && asServed.href === wanted.href ? null : text;
  }
  if (ctx.dynamicBase) {
    target ??= new URL(key + hash);
    if (ctx.crawlOrigins.has(target.origin)) {
      // Concatenate rather than resolve: "/a:b" or "//x" must not read as a scheme or a host.
      const rebased = new URL(ctx.dynamicBase.origin + ctx.dynamicBase.pathname + target.pathname.slice(1) + target.search + target.hash).href;
      return rebased === value ? null : safeUrlText(rebased);
    }
  }
  if (resolution.sameLayout && !local) return null;
  target ??= parseHttpUrl(value, resolution.docBase) ?? new URL(key + hash);
  const asServed = parseHttpUrl(value, resolution.staticBase);
  if (asServed && asServed.href === target.href) return null;
  const text = target.origin === ctx.staticRoot.origin ? target.pathname + target.search + target.hash : target.href;
  return safeUrlText(text);
}

/** An empty or missing form action submits to the document's own URL, never its <base>. @param {LinkContext} ctx @returns {string | null} */
function ownFormText(ctx) {
  const live = new URL(ctx.pageUrl);
  live.hash = '';
  if (ctx.dynamicBase && ctx.crawlOrigins.has(live.origin)) {
    return safeUrlText(new URL(ctx.dynamicBase.origin + ctx.dynamicBase.pathname + live.pathname.slice(1) + live.search).href);
  }
  const staticDoc = new URL(encodeFilePath(ctx.file), ctx.staticRoot);
  if (staticDoc.href === live.href) return null;
  return safeUrlText(live.origin === ctx.staticRoot.origin ? live.pathname + live.search : live.href);
}

/** Left as written, or made absolute on --site-url; never a relative static path. @param {string} value @param {string} key @param {string} hash @param {LinkContext} ctx @returns {string | null} */
function canonicalText(value, key, hash, ctx) {
  if (!ctx.siteUrl) return null;
  const targetFile = ctx.targetFile(key, 'canonical');
  const text = targetFile !== null ? new URL(encodeFilePath(targetFile), ctx.siteUrl).href + hash : key + hash;
  return text === value ? null : safeUrlText(text);
}

/** Whether a relative link goes above the tree's root ("../../x.html" from "a.html"). @param {string} value @param {string} file */
export function climbsOut(value, file) {
  if (!value.includes('..')) return false;
  let depth = 0;
  for (let i = file.indexOf('/'); i >= 0; i = file.indexOf('/', i + 1)) depth++;
  const end = value.search(/[?#]/);
  const segments = (end < 0 ? value : value.slice(0, end)).split(/[/\\]/);
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i].toLowerCase();
    if (segment === '..' || segment === '%2e%2e' || segment === '.%2e' || segment === '%2e.') {
      if (--depth < 0) return true;
    } else if (segment !== '.' && segment !== '' && i < segments.length - 1) {
      depth++;
    }
  }
  return false;
}

/** @param {URL} a @param {URL} b */
function sameDirectory(a, b) {
  return a.origin === b.origin && a.pathname.slice(0, a.pathname.lastIndexOf('/')) === b.pathname.slice(0, b.pathname.lastIndexOf('/'));
}

/** Characters that could end a quoted or unquoted attribute, or a CSS url(). @param {string} text */
function safeUrlText(text) {
  if (!UNSAFE_IN_URL_TEXT.test(text)) return text;
  return text.replace(/['"()`<>\s]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

const UNSAFE_IN_URL_TEXT = /['"()`<>\s]/;

/** @param {string} text */
function escapeAttribute(text) {
  return text.includes('&') ? text.replace(/&/g, '&amp;') : text;
}

/**
 * Sorted, non-overlapping edits in one exact-size buffer; texts are latin1, already in the document's encoding.
 * @param {Buffer | string} document its bytes, or a latin1 string of them
 * @param {Edit[]} edits @returns {{ body: Buffer, placeholders: { sku: string, offset: number, length: number }[] }}
 */
export function applyEdits(document, edits) {
  const bytes = typeof document === 'string' ? Buffer.from(document, 'latin1') : document;
  edits.sort((a, b) => a.start - b.start);
  // Edits that overlap an earlier one (a link inside a price slot) are dropped first.
  /** @type {Edit[]} */ const kept = [];
  let position = 0;
  let size = bytes.length;
  for (const edit of edits) {
    if (edit.start < position) continue;
    // Clamped to the document: a scan that does not match its body cannot write past it.
    const start = Math.min(edit.start, bytes.length);
    const end = Math.min(Math.max(edit.end, start), bytes.length);
    kept.push(start === edit.start && end === edit.end ? edit : { ...edit, start, end });
    size += edit.text.length - (end - start);
    position = end;
  }
  const body = Buffer.allocUnsafe(size);
  /** @type {{ sku: string, offset: number, length: number }[]} */ const placeholders = [];
  position = 0;
  let written = 0;
  for (const edit of kept) {
    written += bytes.copy(body, written, position, edit.start);
    if (edit.placeholder) placeholders.push({ sku: edit.placeholder.sku, offset: written, length: edit.text.length });
    written += body.write(edit.text, written, 'latin1');
    position = edit.end;
  }
  bytes.copy(body, written, position);
  return { body, placeholders };
}
