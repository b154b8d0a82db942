// @ts-check
import { scanHtml } from './scan-html.js';
import { scanCss } from './css.js';
import { applyEdits, planLinkEdits } from './edits.js';
import { renderPlaceholder } from './placeholders.js';
import { canonicalKey, parseHttpUrl } from '../url.js';

/**
 * One document, HTML or CSS: scanned and its links resolved once in phase one, the scan staged beside the body
 * so phase two neither tokenises nor parses again.
 * @typedef {import('./edits.js').LinkContext} LinkContext @typedef {import('./edits.js').LinkRef} LinkRef
 * @typedef {import('./scan-html.js').Slot} Slot
 * @typedef {{ links: LinkRef[], base: { start: number, end: number, value: string } | null,
 *   slots: Slot[], metaSku: string | null, unclosedSlots: number, nofollow?: boolean }} DocumentScan
 * @typedef {{ body: Buffer, type: 'html' | 'css', charset: string, scan?: DocumentScan,
 *   placeholderMode: import('./placeholders.js').PlaceholderMode, pricePath: string } & Omit<LinkContext, 'links' | 'base'>} RenderInput
 */

/** @param {Buffer} body @param {'html' | 'css'} type @param {string} charset @returns {DocumentScan} */
export function scanDocument(body, type, charset) {
  const text = body.toString('latin1');
  if (type === 'css') {
    const links = scanCss(text).map((ref) => ({ ...ref, kind: /** @type {const} */ ('requisite') }));
    return { links, base: null, slots: [], metaSku: null, unclosedSlots: 0, nofollow: false };
  }
  return scanHtml(text, charset);
}

/** @type {Map<string, { key: string | null, hash: string }>} by base directory and text: menus repeat on every page of a directory; emptied when full */
const resolved = new Map();
const RESOLVED_MAX = 20_000;

/** Sets each link's `key` (canonical target, null when not http(s)) and `hash`. @param {DocumentScan} scan @param {URL} pageUrl */
export function resolveLinks(scan, pageUrl) {
  const docBase = scan.base ? parseHttpUrl(scan.base.value, pageUrl) ?? pageUrl : pageUrl;
  // A reference not empty and starting with neither "?", "#" nor white space resolves alike against any base of the same directory.
  const directory = `${docBase.protocol}//${docBase.host}${docBase.pathname.slice(0, docBase.pathname.lastIndexOf('/') + 1)}\n`;
  for (const link of scan.links) {
    const value = link.value;
    const first = value.charCodeAt(0);
    const cacheable = first > 0x20 && first !== 0x3f /* ? */ && first !== 0x23 /* # */;
    const cacheKey = cacheable ? directory + value : '';
    let found = cacheable ? resolved.get(cacheKey) : undefined;
    if (found === undefined) {
      const target = parseHttpUrl(value, docBase);
      found = { key: target ? canonicalKey(target) : null, hash: target ? target.hash : '' };
      if (cacheable) {
        if (resolved.size >= RESOLVED_MAX) resolved.clear();
        // The text is a slice of its page's: a copy of its own, or the cache keeps every page alive.
        resolved.set(Buffer.from(cacheKey, 'utf16le').toString('utf16le'), found);
      }
    }
    link.key = found.key;
    link.hash = found.hash;
  }
}

/** Link kinds as numbers in a staged scan; 0 and 1 as in older scans. */
export const KIND_CODES = /** @type {const} */ (['navigation', 'requisite', 'form', 'canonical']);

/** A line per link: kind code then key, none when not http(s); URLs hold no line break. @param {{ kind: import('./scan-html.js').LinkKind, key?: string | null }[]} links */
export function linkLines(links) {
  let lines = '';
  for (const link of links) lines += `${KIND_CODES.indexOf(link.kind)}${link.key ?? ''}\n`;
  return lines;
}

/** @param {string} lines @returns {{ key: string | null, kind: import('./scan-html.js').LinkKind }[]} */
export function parseLinkLines(lines) {
  const links = [];
  let at = 0;
  while (at < lines.length) {
    const end = lines.indexOf('\n', at);
    const kind = KIND_CODES[lines.charCodeAt(at) - 48] ?? 'navigation';
    const key = lines.slice(at + 1, end);
    links.push({ key: key === '' ? null : key, kind });
    at = end + 1;
  }
  return links;
}

/** First bytes of a staged scan: "[" (older runs' JSON form), "K", or "N" (nofollow). */
const OLD_FORM = 0x5b;
const NOFOLLOW = 0x4e;

/**
 * "K" or "N", the `linkLines`, an empty line, then compact JSON: a page carried over by a 304 reads just the links.
 * @param {DocumentScan} scan @param {string} [lines] its linkLines, when the caller has them
 */
export function encodeScan(scan, lines = linkLines(scan.links)) {
  return Buffer.from(`${scan.nofollow ? 'N' : 'K'}${lines}\n${JSON.stringify([
    scan.links.map((link) => [link.start, link.end, link.attr ?? '', link.value, link.hash ?? '']),
    scan.base,
    scan.slots.map((slot) => [slot.start, slot.end, slot.sku]),
    scan.metaSku,
    scan.unclosedSlots,
  ])}`);
}

/** The empty line's position. @param {Buffer} buffer */
function linesEnd(buffer) {
  return buffer[1] === 0x0a ? 1 : buffer.indexOf('\n\n', 1) + 1;
}

/** @param {Buffer} buffer from encodeScan @returns {{ links: { key?: string | null, kind: import('./scan-html.js').LinkKind }[], nofollow: boolean }} */
export function decodeLinks(buffer) {
  if (buffer[0] === OLD_FORM) {
    const { links, nofollow } = decodeScan(buffer);
    return { links, nofollow: nofollow === true };
  }
  return { links: parseLinkLines(buffer.toString('utf8', 1, linesEnd(buffer))), nofollow: buffer[0] === NOFOLLOW };
}

/** @param {Buffer} buffer from encodeScan, or older runs' JSON @returns {DocumentScan} */
export function decodeScan(buffer) {
  if (buffer[0] === OLD_FORM) {
    const [links, base, slots, metaSku, unclosedSlots, nofollow] = JSON.parse(buffer.toString('utf8'));
    return {
      links: links.map((/** @type {any[]} */ l) => ({ start: l[0], end: l[1], kind: KIND_CODES[l[2]] ?? 'navigation', attr: l[3], value: l[4], key: l[5], hash: l[6] })),
      base,
      slots: slots.map((/** @type {any[]} */ s) => ({ start: s[0], end: s[1], sku: s[2] })),
      metaSku,
      unclosedSlots,
      nofollow: nofollow === 1,
    };
  }
  const end = linesEnd(buffer);
  const lines = buffer.toString('utf8', 1, end);
  const [links, base, slots, metaSku, unclosedSlots] = JSON.parse(buffer.toString('utf8', end + 1));
  /** @type {LinkRef[]} */ const refs = new Array(links.length);
  // The lines and the JSON list the same links in the same order.
  for (let i = 0, at = 0; i < links.length; i++) {
    const next = lines.indexOf('\n', at);
    if (next < 0) throw new Error('staged scan has fewer link lines than links');
    const l = links[i];
    refs[i] = {
      start: l[0], end: l[1], kind: KIND_CODES[lines.charCodeAt(at) - 48] ?? 'navigation', attr: l[2], value: l[3],
      key: next > at + 1 ? lines.slice(at + 1, next) : null, hash: l[4],
    };
    at = next + 1;
  }
  return {
    links: refs,
    base,
    slots: slots.map((/** @type {any[]} */ s) => ({ start: s[0], end: s[1], sku: s[2] })),
    metaSku,
    unclosedSlots,
    nofollow: buffer[0] === NOFOLLOW,
  };
}

/**
 * Links rewritten, price slots made placeholders; pure, bytes in and bytes out.
 * @param {RenderInput} input
 * @returns {{ body: Buffer, placeholders: { sku: string, offset: number, length: number }[], warnings: { code: import('../warnings.js').WarningCode, message: string }[] }}
 */
export function renderDocument(input) {
  const scan = input.scan ?? scanDocument(input.body, input.type, input.charset);
  /** @type {{ code: import('../warnings.js').WarningCode, message: string }[]} */ const warnings = [];
  const edits = planLinkEdits({ ...input, links: scan.links, base: scan.base });
  for (const slot of scan.slots) {
    const sku = slot.sku ?? scan.metaSku;
    if (sku === null) {
      warnings.push({ code: 'SLOT_NO_SKU', message: 'price slot with an empty data-price-sku and no <meta name="x-price-sku">: left as it is' });
      continue;
    }
    const text = renderPlaceholder(input.placeholderMode, sku, { pricePath: input.pricePath });
    edits.push({ start: slot.start, end: slot.end, text, placeholder: { sku } });
  }
  if (scan.unclosedSlots > 0) warnings.push({ code: 'SLOT_UNCLOSED', message: 'price slot element is never closed: left as it is' });
  if (edits.length === 0) return { body: input.body, placeholders: [], warnings };
  return { ...applyEdits(input.body, edits), warnings };
}
