// @ts-check
/**
 * What a price slot's content becomes in a written page. Contract with the serve filter: the manifest
 * records each slot's `{ sku, offset, length }` in BYTES of the written file; the filter splits there
 * once and splices prices per request, never parsing HTML. All forms are ASCII, the same bytes in any
 * ASCII-compatible encoding:
 * - filter: `<!--prerender:price sku=SKU-42-->`, filled by `prerender serve`;
 * - ssi: `<!--# include virtual="/price?sku=SKU-42" -->`, filled by nginx, which reads the zip from the
 *   subrequest's Cookie and $request_uri, so pages do not depend on the zip parameter's name;
 * - esi: `<esi:include src="/price?sku=SKU-42"/>`, filled by Varnish/Fastly/Akamai (VCL reads req_top.url).
 */

export const PLACEHOLDER_MODES = /** @type {const} */ (['filter', 'ssi', 'esi']);

/** @typedef {typeof PLACEHOLDER_MODES[number]} PlaceholderMode */

/** A price path that is safe inside an SSI/ESI attribute value. */
const SAFE_PRICE_PATH = /^\/[A-Za-z0-9._~/-]*$/;

/**
 * The SKU inside a placeholder, percent-encoded so no SKU can close a comment, attribute or tag.
 * @param {string} sku
 */
export function encodeSku(sku) {
  return encodeURIComponent(sku).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/**
 * @param {PlaceholderMode} mode @param {string} sku
 * @param {{ pricePath?: string }} [options] pricePath: ssi/esi fragment location (default '/price'), SAFE_PRICE_PATH
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
