// @ts-check
/**
 * Content types by extension, for files the manifest does not describe.
 * Text types carry no charset: we do not know it, and a wrong label is worse
 * than none (the page's own <meta charset> or the browser decides).
 */
import path from 'node:path';

/** @type {Record<string, string>} */
const TYPES = {
  '.html': 'text/html', '.htm': 'text/html', '.shtml': 'text/html', '.xhtml': 'application/xhtml+xml',
  '.css': 'text/css', '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json',
  '.map': 'application/json', '.xml': 'application/xml', '.txt': 'text/plain', '.csv': 'text/csv',
  '.md': 'text/markdown', '.webmanifest': 'application/manifest+json', '.rss': 'application/rss+xml',
  '.atom': 'application/atom+xml', '.svg': 'image/svg+xml', '.png': 'image/png', '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp', '.avif': 'image/avif',
  '.ico': 'image/x-icon', '.bmp': 'image/bmp', '.tif': 'image/tiff', '.tiff': 'image/tiff',
  '.woff': 'font/woff', '.woff2': 'font/woff2', '.ttf': 'font/ttf', '.otf': 'font/otf',
  '.eot': 'application/vnd.ms-fontobject', '.pdf': 'application/pdf', '.zip': 'application/zip',
  '.gz': 'application/gzip', '.br': 'application/octet-stream', '.wasm': 'application/wasm',
  '.mp4': 'video/mp4', '.webm': 'video/webm', '.mp3': 'audio/mpeg', '.ogg': 'audio/ogg',
  '.wav': 'audio/wav', '.swf': 'application/x-shockwave-flash',
};

/** @param {string} file */
export function contentTypeFor(file) {
  return TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

/** Worth compressing (precompressed siblings are looked for). @param {string} type */
export function isCompressible(type) {
  return /^text\/|\+xml|\+json|^application\/(?:json|javascript|xml|xhtml|manifest|rss|atom|wasm)|^image\/svg/i.test(type);
}

/**
 * A Content-Type value safe to send as a header, else null.
 * @param {unknown} value
 */
export function safeContentType(value) {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) return null;
  if (!/^[\x20-\x7e]+$/.test(value)) return null;
  if (!/^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+/.test(value.trim())) return null;
  return value.trim();
}
