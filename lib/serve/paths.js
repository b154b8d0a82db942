// @ts-check
/**
 * Request paths to files, without escaping the served directory. `parseRequestTarget` takes origin-form and absolute-form
 * targets (RFC 9112 §3.2.2: the host is ignored), decodes the path exactly once and rejects what no file of a static tree
 * needs: backslashes, encoded slashes, NUL and controls, `..`, and dot segments but `.well-known`. `realInside` then checks
 * the real path after symlinks against the real root.
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * @typedef {{ ok: true, path: string, dir: boolean, search: string }} ParsedTarget path: relative, '' for the root; dir: it ended in '/'
 * @typedef {{ ok: false, status: 400 | 404, reason: string, code: 'malformed' | 'hidden' | 'long' }} RejectedTarget
 *   malformed (400) may lead out of the tree; long: a segment no file of a tree has
 */

const MAX_SEGMENT = 255;
/** The authority has no userinfo, slash, space or control. */
export const ABSOLUTE_FORM = /^https?:\/\/[^/?#@\\\s\u0000-\u001f\u007f]+((?:[/?#]).*)?$/is;

/** @param {string | undefined} url req.url, as received @returns {ParsedTarget | RejectedTarget} */
export function parseRequestTarget(url) {
  if (typeof url === 'string' && url.charCodeAt(0) !== 47 /* / */) {
    const absolute = ABSOLUTE_FORM.exec(url);
    if (absolute) url = absolute[1] === undefined || absolute[1] === '' || absolute[1].charCodeAt(0) !== 47 ? `/${absolute[1] ?? ''}` : absolute[1];
  }
  if (typeof url !== 'string' || url.charCodeAt(0) !== 47 /* / */) {
    return { ok: false, status: 400, reason: 'request target must be a path (origin-form) or an absolute http(s) URL', code: 'malformed' };
  }
  let end = url.length;
  const q = url.indexOf('?');
  if (q !== -1) end = q;
  const hash = url.indexOf('#');
  if (hash !== -1 && hash < end) end = hash;
  const raw = url.slice(0, end);
  const search = q === -1 ? '' : url.slice(q, hash > q ? hash : undefined);
  if (raw.includes('\\')) return { ok: false, status: 400, reason: 'backslash in path', code: 'malformed' };
  let decoded = raw;
  if (raw.includes('%')) {
    if (/%(?:2f|5c|00)/i.test(raw)) return { ok: false, status: 400, reason: 'encoded slash, backslash or NUL in path', code: 'malformed' };
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      return { ok: false, status: 400, reason: 'malformed percent-encoding', code: 'malformed' };
    }
  }
  if (/[\u0000-\u001f\u007f\\]/.test(decoded)) return { ok: false, status: 400, reason: 'control character or backslash in path', code: 'malformed' };
  const segments = [];
  for (const segment of decoded.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') return { ok: false, status: 400, reason: '".." in path', code: 'malformed' };
    if (segment.charCodeAt(0) === 46 /* . */ && segment !== '.well-known') return { ok: false, status: 404, reason: 'hidden file', code: 'hidden' };
    if (segment.length > MAX_SEGMENT) return { ok: false, status: 404, reason: 'path segment too long', code: 'long' };
    segments.push(segment);
  }
  const rel = segments.join('/');
  return { ok: true, path: rel, dir: rel !== '' && decoded.endsWith('/'), search };
}

/** The normalised path, or null when unsafe. @param {unknown} file */
export function normalizeManifestPath(file) {
  if (typeof file !== 'string' || file === '' || file.length > 4096) return null;
  if (file.startsWith('/') || file.includes('\\') || /[\u0000-\u001f\u007f]/.test(file)) return null;
  const segments = file.split('/');
  for (const s of segments) {
    if (s === '' || s === '.' || s === '..') return null;
  }
  return segments.join('/');
}

/** A safe Location value. @param {string} rel */
export function encodePath(rel) {
  return '/' + rel.split('/').map(encodeURIComponent).join('/');
}

/** @param {string} realRoot fs.realpath of the served directory @param {string} rel from parseRequestTarget or normalizeManifestPath @returns {string | null} */
export function joinInside(realRoot, rel) {
  const abs = path.join(realRoot, rel);
  return isInside(realRoot, abs) ? abs : null;
}

/** @param {string} realRoot @param {string} abs */
export function isInside(realRoot, abs) {
  return abs === realRoot || abs.startsWith(realRoot.endsWith(path.sep) ? realRoot : realRoot + path.sep);
}

/** After following symlinks. @param {string} realRoot @param {string} abs @returns {Promise<string | null>} */
export async function realInside(realRoot, abs) {
  try {
    const real = await fs.promises.realpath(abs);
    return isInside(realRoot, real) ? real : null;
  } catch {
    return null;
  }
}
