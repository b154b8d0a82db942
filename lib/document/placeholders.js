// @ts-check
/**
 * What a price slot's content becomes in a written page.
 *
 * Contract with the runtime filter (lib/serve): for every slot the manifest
 * records `{ sku, offset, length }`, where `offset` and `length` are BYTE
 * positions of the placeholder text inside the written file. The filter splits
 * the file at those positions once, at start-up, and splices the price in per
 * request; it never parses HTML.
 *
 * The three forms (all pure ASCII, so they are the same bytes in any
 * ASCII-compatible page encoding):
 * - filter: `<!--prerender:price sku=SKU-42-->`, filled by `prerender serve`.
 * - ssi:    `<!--# include virtual="/price?sku=SKU-42" -->`, filled by nginx
 *   (templates/nginx). The zip is not in the placeholder: an SSI subrequest
 *   carries the page's Cookie header and $request_uri, and the nginx config
 *   reads the zip from those (checked with Debian's nginx 1.22), so pages do
 *   not depend on the zip parameter's name.
 * - esi:    `<esi:include src="/price?sku=SKU-42"/>`, filled by Varnish /
 *   Fastly / Akamai (templates/varnish). Varnish's ESI subrequest carries the
 *   page's headers, and the VCL reads the page's URL from req_top.url.
 */

export const PLACEHOLDER_MODES = /** @type {const} */ (['filter', 'ssi', 'esi']);

/** @typedef {typeof PLACEHOLDER_MODES[number]} PlaceholderMode */

/** A price path that is safe inside an SSI/ESI attribute value. */
const SAFE_PRICE_PATH = /^\/[A-Za-z0-9._~/-]*$/;

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
 * @param {{ pricePath?: string }} [options] pricePath: the fragment location
 *   for ssi/esi (default '/price'); '/' followed by letters, digits, '.', '_',
 *   '~', '-' and '/' only.
 * @returns {string} ASCII text, safe in any ASCII-compatible page encoding
 */
export function renderPlaceholder(mode, sku, options = {}) {
  const pricePath = options.pricePath ?? '/price';
  const encoded = encodeSku(sku);
  switch (mode) {
    case 'filter':
      return `<!--prerender:price sku=${encoded}-->`;
    case 'ssi':
      checkPricePath(pricePath);
      return `<!--# include virtual="${pricePath}?sku=${encoded}" -->`;
    case 'esi':
      checkPricePath(pricePath);
      return `<esi:include src="${pricePath}?sku=${encoded}"/>`;
    default:
      throw new TypeError(`unknown placeholder mode: ${mode}`);
  }
}

/** @param {string} pricePath */
function checkPricePath(pricePath) {
  if (!SAFE_PRICE_PATH.test(pricePath)) {
    throw new TypeError(`price path ${JSON.stringify(pricePath)} must be "/" followed by letters, digits, ".", "_", "~", "-" or "/"`);
  }
}
