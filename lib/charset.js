// @ts-check
/**
 * The charset of a page: from Content-Type, else a <meta> in the first 1024
 * bytes, else utf-8. Used only to read non-ASCII bytes inside URLs; the page
 * itself is never re-encoded.
 * @param {string | undefined} contentType
 * @param {Buffer} body
 */
export function detectCharset(contentType, body) {
  const fromHeader = /charset\s*=\s*["']?([\w.:-]+)/i.exec(contentType ?? '')?.[1];
  if (fromHeader) return fromHeader.toLowerCase();
  const head = body.subarray(0, 1024).toString('latin1');
  const fromMeta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
  return (fromMeta ?? 'utf-8').toLowerCase();
}
