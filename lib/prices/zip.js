// @ts-check
/**
 * Zip codes: the one rule for what counts as a plausible zip, shared by the
 * request path (query/cookie) and the price tables.
 *
 * Plausible: after trimming, 3 to 10 characters of ASCII letters, digits,
 * spaces and hyphens, starting and ending with a letter or digit
 * ("12345", "1234 AB", "SW1A 1AA", "K1A-0B1"). Compared case-insensitively:
 * the normalised form is upper case.
 */

const PLAUSIBLE_ZIP = /^[A-Za-z0-9](?:[A-Za-z0-9 -]{1,8})[A-Za-z0-9]$/;

/**
 * @param {unknown} value
 * @returns {string | null} the normalised zip, or null when not plausible
 */
export function normalizeZip(value) {
  if (typeof value !== 'string') return null;
  if (value.length === 0 || value.length > 32) return null;
  const trimmed = value.trim();
  if (!PLAUSIBLE_ZIP.test(trimmed)) return null;
  return trimmed.toUpperCase();
}
