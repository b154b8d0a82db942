// @ts-check
import { scanHtml } from './html/scan.js';
import { scanCss } from './css.js';
import { applyEdits, planLinkEdits } from './rewrite.js';
import { renderPlaceholder } from './placeholders.js';

/**
 * Phase two for one document: rewrite its links and turn its price slots
 * into placeholders. Pure: bytes in, bytes out.
 *
 * @typedef {import('./rewrite.js').LinkContext} LinkContext
 * @typedef {{
 *   body: Buffer, type: 'html' | 'css', charset: string,
 *   placeholderMode: import('./placeholders.js').PlaceholderMode, pricePath: string,
 * } & Omit<LinkContext, 'links' | 'base'>} RenderInput
 */

/**
 * @param {RenderInput} input
 * @returns {{ body: Buffer, placeholders: { sku: string, offset: number, length: number }[], warnings: string[] }}
 */
export function renderDocument(input) {
  const text = input.body.toString('latin1');
  /** @type {string[]} */
  const warnings = [];
  if (input.type === 'css') {
    const links = scanCss(text).map((ref) => ({ ...ref, kind: /** @type {const} */ ('requisite') }));
    const edits = planLinkEdits({ ...input, links, base: null });
    if (edits.length === 0) return { body: input.body, placeholders: [], warnings };
    return { ...applyEdits(text, edits), warnings };
  }
  const scan = scanHtml(text, input.charset);
  const edits = planLinkEdits({ ...input, links: scan.links, base: scan.base });
  for (const slot of scan.slots) {
    const sku = slot.sku ?? scan.metaSku;
    if (sku === null) {
      warnings.push('price slot with an empty data-price-sku and no <meta name="x-price-sku">: left as it is');
      continue;
    }
    const text = renderPlaceholder(input.placeholderMode, sku, { pricePath: input.pricePath });
    edits.push({ start: slot.start, end: slot.end, text, placeholder: { sku } });
  }
  if (scan.unclosedSlots > 0) warnings.push('price slot element is never closed: left as it is');
  if (edits.length === 0) return { body: input.body, placeholders: [], warnings };
  return { ...applyEdits(text, edits), warnings };
}

/**
 * The links of a document, for discovery in phase one.
 * @param {Buffer} body
 * @param {'html' | 'css'} type
 * @param {string} charset
 * @returns {{ links: { value: string, kind: 'navigation' | 'requisite' }[], base: string | null }}
 */
export function discoverLinks(body, type, charset) {
  const text = body.toString('latin1');
  if (type === 'css') return { links: scanCss(text).map((ref) => ({ value: ref.value, kind: 'requisite' })), base: null };
  const scan = scanHtml(text, charset);
  return { links: scan.links, base: scan.base?.value ?? null };
}
