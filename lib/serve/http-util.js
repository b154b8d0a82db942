// @ts-check
/** Accept-Encoding negotiation, conditional requests, Range and error pages, for the filter and the static handler. */

/** Preferred first by q-value, br on a tie; `q=0` refuses, `*` counts for both. @param {string | undefined} header @returns {('br' | 'gzip')[]} */
export function acceptedEncodings(header) {
  if (!header) return [];
  /** @type {Record<string, number>} */ const q = {};
  for (const item of header.split(',')) {
    const [name, ...params] = item.trim().toLowerCase().split(';');
    let weight = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m) weight = Number(m[1]);
    }
    if (name) q[name.trim()] = Number.isFinite(weight) ? weight : 0;
  }
  /** @type {{ enc: 'br' | 'gzip', w: number }[]} */ const out = [];
  for (const enc of /** @type {const} */ (['br', 'gzip'])) {
    const w = q[enc] ?? (enc === 'gzip' ? q['x-gzip'] : undefined) ?? q['*'];
    if (w !== undefined && w > 0) out.push({ enc, w });
  }
  // The client's preference first; on a tie, br (smaller).
  if (out.length === 2 && out[1].w > out[0].w) out.reverse();
  return out.map((e) => e.enc);
}

/** Browsers send a handful of distinct values. @type {Map<string, ('br' | 'gzip')[]>} */
const PREFERRED = new Map();

/** @param {string | undefined} header @returns {('br' | 'gzip')[]} */
export function preferredEncodings(header) {
  if (!header) return [];
  let found = PREFERRED.get(header);
  if (!found) {
    found = acceptedEncodings(header);
    if (PREFERRED.size >= 256) PREFERRED.clear();
    if (header.length <= 256) PREFERRED.set(header, found);
  }
  return found;
}

/** If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2). @param {import('node:http').IncomingHttpHeaders} headers @param {string} etag @param {number} mtimeMs */
export function isNotModified(headers, etag, mtimeMs) {
  const inm = headers['if-none-match'];
  if (inm !== undefined) {
    if (inm.trim() === '*') return true;
    const bare = etag.replace(/^W\//, '');
    return inm.split(',').some((tag) => tag.trim().replace(/^W\//, '') === bare);
  }
  const ims = headers['if-modified-since'];
  if (ims !== undefined) {
    const since = Date.parse(ims);
    if (Number.isNaN(since)) return false;
    return Math.floor(mtimeMs / 1000) * 1000 <= since;
  }
  return false;
}

/** A single range. @param {string | undefined} header @param {number} size @returns {null | 'unsatisfiable' | { start: number, end: number }} null: the whole file */
export function parseRange(header, size) {
  if (!header) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return null; // multiple ranges or another unit: the whole file is a valid answer
  const [, a, b] = m;
  if (a === '' && b === '') return null;
  let start;
  let end;
  if (a === '') {
    const suffix = Number(b);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(a);
    end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
    if (b !== '' && Number(b) < start) return null;
  }
  if (!Number.isSafeInteger(start) || start >= size) return 'unsatisfiable';
  return { start, end };
}

/** Strong ETag or exact date. @param {string | undefined} header @param {string} etag @param {number} mtimeMs */
export function ifRangeMatches(header, etag, mtimeMs) {
  if (header === undefined) return true;
  const value = header.trim();
  if (value.startsWith('"') || value.startsWith('W/')) return !etag.startsWith('W/') && value === etag;
  const date = Date.parse(value);
  return !Number.isNaN(date) && Math.floor(mtimeMs / 1000) * 1000 === date;
}

/** @type {Record<number, string>} */
const TITLES = { 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed', 500: 'Internal Server Error', 503: 'Service Unavailable' };

/**
 * A small HTML page, or the tree's own 404 page.
 * @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res @param {number} status
 * @param {{ body?: Buffer, contentType?: string, headers?: Record<string, string> }} [custom]
 */
export function sendError(req, res, status, custom = {}) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const title = TITLES[status] ?? 'Error';
  const body = custom.body ?? Buffer.from(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>${status} ${title}</title></head><body><h1>${status} ${title}</h1></body></html>\n`);
  res.writeHead(status, {
    'Content-Type': custom.contentType ?? 'text/html; charset=utf-8',
    'Content-Length': body.length,
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    ...custom.headers,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
