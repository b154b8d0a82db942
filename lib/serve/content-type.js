// @ts-check
/** By extension, for files the manifest does not describe; text types carry no charset, since a wrong label is worse than none. */
import { typeForPath } from '../naming/mime.js';

/** @param {string} file */
export function contentTypeFor(file) {
  return typeForPath(file);
}

/** Worth compressing (precompressed siblings are looked for). @param {string} type */
export function isCompressible(type) {
  return /^text\/|\+xml|\+json|^application\/(?:json|javascript|xml|xhtml|manifest|rss|atom|wasm)|^image\/svg/i.test(type);
}

/** Safe to send as a header, else null. @param {unknown} value */
export function safeContentType(value) {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) return null;
  if (!/^[\x20-\x7e]+$/.test(value)) return null;
  if (!/^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+/.test(value.trim())) return null;
  return value.trim();
}
