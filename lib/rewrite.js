// @ts-check
import { canonicalKey, encodeFilePath, parseHttpUrl, relativeFileUrl } from './url.js';

/**
 * Decides the new text of every link in one document (HTML or CSS), and
 * applies edits to the document's bytes. Only values that must change change.
 *
 * The "static context" is where the written file will be served: at the
 * origin's paths (`staticRoot` is the origin), so a link is left alone when it
 * already resolves there to the target it had on the live site.
 */

/**
 * @typedef {{ start: number, end: number, text: string, placeholder?: { sku: string } }} Edit
 * @typedef {{ start: number, end: number, value: string, kind: 'navigation' | 'requisite', attr?: string }} LinkRef
 * @typedef {{
 *   pageUrl: URL,
 *   file: string,
 *   links: LinkRef[],
 *   base?: { start: number, end: number, value: string } | null,
 *   targetFile: (key: string, kind: 'navigation' | 'requisite') => string | null,
 *   staticRoot: URL,
 *   dynamicBase?: URL | null,
 *   crawlOrigins: Set<string>,
 * }} LinkContext
 */

/**
 * @param {LinkContext} ctx
 * @returns {Edit[]} unsorted edits
 */
export function planLinkEdits(ctx) {
  const { pageUrl, file, links, base, staticRoot } = ctx;
  /** @type {Edit[]} */
  const edits = [];
  const staticDoc = new URL(encodeFilePath(file), staticRoot);
  let docBase = pageUrl;
  let staticBase = staticDoc;
  if (base) {
    docBase = parseHttpUrl(base.value, pageUrl) ?? pageUrl;
    const baseInStatic = parseHttpUrl(base.value, staticDoc);
    if (baseInStatic && sameDirectory(baseInStatic, staticDoc)) {
      staticBase = baseInStatic;
    } else {
      // The base would send our relative links elsewhere: point it at the file itself.
      edits.push({ start: base.start, end: base.end, text: encodeFilePath(file.slice(file.lastIndexOf('/') + 1)) });
    }
  }
  for (const link of links) {
    const text = newLinkText(link, docBase, staticBase, ctx);
    if (text !== null) edits.push({ start: link.start, end: link.end, text: link.attr ? escapeAttribute(text) : text });
  }
  return edits;
}

/**
 * @param {LinkRef} link
 * @param {URL} docBase how the link resolved on the live site
 * @param {URL} staticBase how it resolves in the static tree
 * @param {LinkContext} ctx
 * @returns {string | null} the new URL text, or null to leave it untouched
 */
function newLinkText(link, docBase, staticBase, ctx) {
  const target = parseHttpUrl(link.value, docBase);
  if (!target) return null; // mailto:, javascript:, data:, tel:, invalid
  const asServed = parseHttpUrl(link.value, staticBase);
  const targetFile = ctx.targetFile(canonicalKey(target), link.kind);
  if (targetFile !== null) {
    const wanted = new URL(encodeFilePath(targetFile), ctx.staticRoot);
    wanted.hash = target.hash;
    if (asServed && asServed.href === wanted.href) return null;
    return safeUrlText(relativeFileUrl(ctx.file, targetFile) + target.hash);
  }
  if (ctx.dynamicBase && ctx.crawlOrigins.has(target.origin)) {
    // Concatenate rather than resolve: "/a:b" or "//x" must not read as a scheme or a host.
    const rebased = new URL(ctx.dynamicBase.origin + ctx.dynamicBase.pathname + target.pathname.slice(1) + target.search + target.hash).href;
    return rebased === link.value ? null : safeUrlText(rebased);
  }
  if (asServed && asServed.href === target.href) return null;
  const text = target.origin === ctx.staticRoot.origin ? target.pathname + target.search + target.hash : target.href;
  return safeUrlText(text);
}

/** @param {URL} a @param {URL} b */
function sameDirectory(a, b) {
  return a.origin === b.origin && a.pathname.slice(0, a.pathname.lastIndexOf('/')) === b.pathname.slice(0, b.pathname.lastIndexOf('/'));
}

/**
 * Characters that could end a quoted or unquoted attribute, or a CSS url().
 * @param {string} text
 */
function safeUrlText(text) {
  return text.replace(/['"()`<>\s]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

/** @param {string} text */
function escapeAttribute(text) {
  return text.includes('&') ? text.replace(/&/g, '&amp;') : text;
}

/**
 * Apply sorted, non-overlapping edits to a latin1 document and return the
 * bytes, with the byte position of every placeholder edit in the output.
 * @param {string} text latin1
 * @param {Edit[]} edits
 * @returns {{ body: Buffer, placeholders: { sku: string, offset: number, length: number }[] }}
 */
export function applyEdits(text, edits) {
  edits.sort((a, b) => a.start - b.start);
  /** @type {string[]} */
  const pieces = [];
  /** @type {{ sku: string, offset: number, length: number }[]} */
  const placeholders = [];
  let position = 0;
  let written = 0;
  for (const edit of edits) {
    if (edit.start < position) continue; // overlaps an earlier edit (a link inside a price slot)
    pieces.push(text.slice(position, edit.start));
    written += edit.start - position;
    if (edit.placeholder) placeholders.push({ sku: edit.placeholder.sku, offset: written, length: edit.text.length });
    pieces.push(edit.text);
    written += edit.text.length;
    position = edit.end;
  }
  pieces.push(text.slice(position));
  return { body: Buffer.from(pieces.join(''), 'latin1'), placeholders };
}
