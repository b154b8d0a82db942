// @ts-check
import mime from 'mime-types';

/**
 * Media types, one table for the whole tool (mime-types): the extension a
 * file of a type gets when it has none, and the type a file is served with
 * when the manifest does not say.
 */

/** @param {string | undefined} contentType */
export function mimeOf(contentType) {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** @param {string | undefined} contentType */
export function isHtmlType(contentType) {
  const type = mimeOf(contentType);
  return type === 'text/html' || type === 'application/xhtml+xml';
}

const JAVASCRIPT = new Set(['text/javascript', 'application/javascript', 'application/x-javascript', 'application/ecmascript', 'text/ecmascript']);

/**
 * The extension (with its dot) a file of this type should have, or undefined
 * for types that have none worth adding (application/octet-stream...).
 * @param {string | undefined} contentType
 */
export function extensionForType(contentType) {
  const type = mimeOf(contentType);
  if (type === '' || type === 'application/octet-stream') return undefined;
  const extension = mime.extension(JAVASCRIPT.has(type) ? 'text/javascript' : type);
  return extension ? `.${extension}` : undefined;
}

/**
 * Whether a file name's extension already says this type (".jpeg" for
 * image/jpeg, ".mjs" for JavaScript).
 * @param {string} name
 * @param {string | undefined} contentType
 */
export function extensionFits(name, contentType) {
  const type = mimeOf(contentType);
  const found = mime.lookup(name);
  if (!found) return false;
  if (found === type || (JAVASCRIPT.has(found) && JAVASCRIPT.has(type))) return true;
  // One of the type's own extensions, though the table serves it as another name of the
  // type (".ico" sent as image/x-icon, served as image/vnd.microsoft.icon; ".mp3" as audio/mp3).
  const dot = name.lastIndexOf('.');
  return (mime.extensions[type] ?? []).includes(name.slice(dot + 1).toLowerCase());
}

/**
 * The type to serve a file with, from its name.
 * @param {string} file
 */
export function typeForPath(file) {
  return mime.lookup(file) || 'application/octet-stream';
}
