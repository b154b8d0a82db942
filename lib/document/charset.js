// @ts-check
/**
 * BOM, else Content-Type, else a <meta> in the first 1024 bytes, else utf-8, as browsers do.
 * Only for reading URLs: the page itself is never re-encoded. @param {string | undefined} contentType @param {Buffer} body
 */
export function detectCharset(contentType, body) {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  const fromHeader = /charset\s*=\s*["']?([\w.:-]+)/i.exec(contentType ?? '')?.[1];
  if (fromHeader) return fromHeader.toLowerCase();
  const head = body.subarray(0, 1024).toString('latin1');
  const fromMeta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
  return (fromMeta ?? 'utf-8').toLowerCase();
}
