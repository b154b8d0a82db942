// @ts-check
/**
 * A price slot's content in a written page. Contract with the serve filter: the manifest records each slot's
 * `{ sku, offset, length }` in bytes of the file, which the filter splits once, never parsing HTML. Every form is ASCII:
 * filter `<!--prerender:price sku=SKU-42-->`; ssi `<!--# include virtual="/price?sku=SKU-42" -->` (nginx reads the zip
 * from the subrequest's Cookie and $request_uri); esi `<esi:include src="/price?sku=SKU-42"/>` (Varnish reads req_top.url).
 */

export const PLACEHOLDER_MODES = /** @type {const} */ (['filter', 'ssi', 'esi']);

/** @typedef {typeof PLACEHOLDER_MODES[number]} PlaceholderMode */

const SAFE_PRICE_PATH = /^\/[A-Za-z0-9._~/-]*$/;

/** Percent-encoded, so no SKU can close a comment, attribute or tag. @param {string} sku */
export function encodeSku(sku) {
  return encodeURIComponent(sku).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/**
 * @param {PlaceholderMode} mode @param {string} sku @param {{ pricePath?: string }} [options] ssi/esi fragment path, '/price' by default
 * @returns {string} ASCII, safe in any ASCII-compatible page encoding
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
