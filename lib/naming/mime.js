// @ts-check
import mime from 'mime-types';

/** Media types, one table for the whole tool (mime-types): extensions to add, types to serve. */

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

/** The extension (with its dot) for this type, or undefined when none is worth adding. @param {string | undefined} contentType */
export function extensionForType(contentType) {
  const type = mimeOf(contentType);
  if (type === '' || type === 'application/octet-stream') return undefined;
  const extension = mime.extension(JAVASCRIPT.has(type) ? 'text/javascript' : type);
  return extension ? `.${extension}` : undefined;
}

/** Whether the name's extension already says this type (".jpeg" for image/jpeg). @param {string} name @param {string | undefined} contentType */
export function extensionFits(name, contentType) {
  const type = mimeOf(contentType);
  const found = mime.lookup(name);
  if (!found) return false;
  if (found === type || (JAVASCRIPT.has(found) && JAVASCRIPT.has(type))) return true;
  // Also one of the type's aliases' extensions (".ico" sent as image/x-icon).
  const dot = name.lastIndexOf('.');
  return (mime.extensions[type] ?? []).includes(name.slice(dot + 1).toLowerCase());
}

/** The type to serve a file with, from its name. @param {string} file */
export function typeForPath(file) {
  return mime.lookup(file) || 'application/octet-stream';
}
