// @ts-check
/**
 * URL normalisation: one canonical string per page, so each page is fetched once
 * (no fragment, WHATWG defaults, uppercase percent-encoding, unreserved decoded).
 */

const PERCENT = /%([0-9a-fA-F]{2})/g;
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** @param {string} text a path or query @returns {string} */
function normalizePercent(text) {
  if (!text.includes('%')) return text;
  return text.replace(PERCENT, (match, hex) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : '%' + hex.toUpperCase();
  });
}

/** The canonical URL object, or null when not http(s) (mailto:, javascript:, data:, invalid...). @param {string} raw @param {string | URL} [base] @returns {URL | null} */
export function parseHttpUrl(raw, base) {
  let url;
  try {
    url = new URL(raw, base);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  return url;
}

/** The canonical key of an http(s) URL: no fragment, normalised encoding. @param {URL} url @returns {string} */
export function canonicalKey(url) {
  const pathname = normalizePercent(url.pathname);
  const search = normalizePercent(url.search);
  return `${url.protocol}//${url.host}${pathname}${search}`;
}

/** Absolute, or relative to `base`. @param {string} raw @param {string | URL} [base] @returns {string | null} canonical URL, or null when not http(s) */
export function normalizeUrl(raw, base) {
  const url = parseHttpUrl(raw, base);
  return url ? canonicalKey(url) : null;
}

/** What a URL path segment may hold as it is (RFC 3986 pchar): the rest is percent-encoded. */
const NOT_PCHAR = /[^A-Za-z0-9\-._~!$&+,;=:@]+/gu;

/** Encoding only what a path must, so links stay readable. @param {string} file @returns {string} */
export function encodeFilePath(file) {
  if (PLAIN_PATH.test(file)) return file; // most names: nothing to encode
  return file
    .split('/')
    .map((segment) => segment.replace(NOT_PCHAR, (run) => encodeURIComponent(run).replace(/['()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())))
    .join('/');
}

/** A path of pchar segments: encoded, it is itself. */
const PLAIN_PATH = /^[A-Za-z0-9\-._~!$&+,;=:@/]*$/u;

/** Both files under the output root. @param {string} from @param {string} to @returns {string} */
export function relativeFileUrl(from, to) {
  // Rewriting calls this for every link of every page: plain string scans, no arrays.
  const fromDir = from.lastIndexOf('/') + 1; // `from`'s directories: from[0, fromDir)
  let common = 0;
  const limit = Math.min(fromDir, to.length);
  for (let i = 0; i < limit; i++) {
    const c = from.charCodeAt(i);
    if (c !== to.charCodeAt(i)) break;
    if (c === 0x2f) common = i + 1;
  }
  let ups = 0;
  for (let i = common; i < fromDir; i++) if (from.charCodeAt(i) === 0x2f) ups++;
  const rest = to.slice(common);
  const relative = '../'.repeat(ups) + encodeFilePath(rest);
  // A first segment with a colon would read as a scheme ("a:b.html").
  if (ups === 0 && /^[^/]*:/.test(rest)) return './' + relative;
  return relative;
}
