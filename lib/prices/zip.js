// @ts-check
/** The one plausibility rule for zip codes: 3 to 10 ASCII letters, digits, spaces and hyphens, alphanumeric at both ends. */

const PLAUSIBLE_ZIP = /^[A-Za-z0-9](?:[A-Za-z0-9 -]{1,8})[A-Za-z0-9]$/;

/** @param {unknown} value @returns {string | null} the normalised zip, or null when not plausible */
export function normalizeZip(value) {
  if (typeof value !== 'string') return null;
  if (value.length === 0 || value.length > 32) return null;
  const trimmed = value.trim();
  if (!PLAUSIBLE_ZIP.test(trimmed)) return null;
  return trimmed.toUpperCase();
}
