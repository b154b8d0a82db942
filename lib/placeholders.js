// @ts-check
/**
 * What a price slot's content becomes in a written page.
 *
 * Contract with the runtime filter (lib/serve): for every slot the manifest
 * records `{ sku, offset, length }`, where `offset` and `length` are BYTE
 * positions of the placeholder text inside the written file. The filter splits
 * the file at those positions once, at start-up, and splices the price in per
 * request; it never parses HTML.
 */

export const PLACEHOLDER_MODES = /** @type {const} */ (['filter', 'ssi', 'esi']);

/** @typedef {typeof PLACEHOLDER_MODES[number]} PlaceholderMode */

/**
 * The SKU as it may appear inside the placeholder: percent-encoded, so that
 * no SKU can close a comment, an attribute or a tag.
 * @param {string} sku
 */
export function encodeSku(sku) {
  return encodeURIComponent(sku).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/**
 * @param {PlaceholderMode} mode
 * @param {string} sku
 * @param {{ pricePath?: string }} [options]
 * @returns {string} ASCII text, safe in any ASCII-compatible page encoding
 */
export function renderPlaceholder(mode, sku, options = {}) {
  const pricePath = options.pricePath ?? '/price';
  const encoded = encodeSku(sku);
  switch (mode) {
    case 'filter':
      return `<!--prerender:price sku=${encoded}-->`;
    case 'ssi':
      return `<!--# include virtual="${pricePath}?sku=${encoded}" -->`;
    case 'esi':
      return `<esi:include src="${pricePath}?sku=${encoded}"/>`;
    default:
      throw new TypeError(`unknown placeholder mode: ${mode}`);
  }
}
