// @ts-check
/** Files without price slots: ETag and Last-Modified with 304s, Range, `.br`/`.gz` siblings, `index.html` for directories (never a listing), symlinks checked. */
import fs from 'node:fs';
import { pipeline } from 'node:stream';
import { acceptedEncodings, ifRangeMatches, isNotModified, parseRange } from './http-util.js';
import { isCompressible } from './content-type.js';
import { encodePath, joinInside, realInside } from './paths.js';

/**
 * @typedef {import('./paths.js').ParsedTarget} ParsedTarget
 * @typedef {{ realRoot: string, contentType(key: string): string, cacheControl: string, files?: import('./files.js').FileCache, addRedirects?: boolean }} StaticOptions
 *   addRedirects false: a directory named without its slash is not found (in front of an origin, the path is the origin's)
 */

/** @param {string} abs @returns {Promise<fs.Stats | null>} */
async function statOrNull(abs) {
  try {
    return await fs.promises.stat(abs);
  } catch {
    return null;
  }
}

/**
 * 'not-found' writes nothing: the caller decides; 'redirect' is a 301 to the slash form.
 * @param {import('node:http').IncomingMessage} req @param {import('node:http').ServerResponse} res @param {ParsedTarget} target
 * @param {StaticOptions} options @returns {Promise<'served' | 'not-found' | 'redirect'>}
 */
export async function serveStatic(req, res, target, options) {
  const { realRoot } = options;
  let key = target.path;
  let abs = joinInside(realRoot, key);
  if (abs === null) return 'not-found';
  let st = await statOrNull(abs);
  if (!st) return 'not-found';
  if (st.isDirectory()) {
    key = key === '' ? 'index.html' : `${key}/index.html`;
    abs = joinInside(realRoot, key);
    st = abs ? await statOrNull(abs) : null;
    if (!abs || !st || !st.isFile()) return 'not-found'; // no directory listings
    if (target.path !== '' && !target.dir) {
      if (options.addRedirects === false) return 'not-found';
      res.writeHead(301, { Location: encodePath(target.path) + '/' + target.search, 'Content-Length': 0 });
      res.end();
      return 'redirect';
    }
  } else if (target.dir || !st.isFile()) {
    return 'not-found';
  }
  const real = await realInside(realRoot, abs);
  if (!real) return 'not-found';

  const type = options.contentType(key);
  // A file small enough is served from the hot-file cache, compressed once.
  if (options.files && req.headers.range === undefined) {
    const requestKey = target.dir || target.path === '' ? `${target.path}/` : target.path;
    const entry = await options.files.load(requestKey, abs, real, st, type);
    if (entry) {
      if (!res.destroyed) options.files.send(req, res, entry, requestKey);
      return 'served';
    }
  }
  /** @type {Record<string, string | number>} */ const headers = {
    'Content-Type': type,
    'Cache-Control': options.cacheControl,
    'X-Content-Type-Options': 'nosniff',
  };
  let file = real;
  let size = st.size;
  let mtimeMs = st.mtimeMs;
  let etagSuffix = '';
  const compressible = isCompressible(type);
  if (compressible) headers.Vary = 'Accept-Encoding';
  if (compressible && req.headers.range === undefined) {
    for (const enc of acceptedEncodings(/** @type {string | undefined} */ (req.headers['accept-encoding']))) {
      const sibling = `${abs}.${enc === 'gzip' ? 'gz' : 'br'}`;
      const sst = await statOrNull(sibling);
      // Older than the file: left from an earlier version (a crawl gives a sibling its file's time).
      if (!sst || !sst.isFile() || sst.mtimeMs < st.mtimeMs) continue;
      const sreal = await realInside(realRoot, sibling);
      if (!sreal) continue;
      file = sreal;
      size = sst.size;
      mtimeMs = sst.mtimeMs;
      etagSuffix = enc === 'gzip' ? '-gz' : '-br';
      headers['Content-Encoding'] = enc;
      break;
    }
  }
  const etag = `"${size.toString(16)}-${Math.floor(mtimeMs).toString(16)}${etagSuffix}"`;
  headers.ETag = etag;
  headers['Last-Modified'] = new Date(mtimeMs).toUTCString();
  if (!headers['Content-Encoding']) headers['Accept-Ranges'] = 'bytes';

  if (isNotModified(req.headers, etag, mtimeMs)) {
    delete headers['Content-Type'];
    res.writeHead(304, headers);
    res.end();
    return 'served';
  }

  let status = 200;
  let start = 0;
  let end = size - 1;
  if (!headers['Content-Encoding'] && ifRangeMatches(/** @type {string | undefined} */ (req.headers['if-range']), etag, mtimeMs)) {
    const range = parseRange(req.headers.range, size);
    if (range === 'unsatisfiable') {
      res.writeHead(416, { 'Content-Range': `bytes */${size}`, 'Content-Length': 0, 'Accept-Ranges': 'bytes' });
      res.end();
      return 'served';
    }
    if (range) {
      status = 206;
      start = range.start;
      end = range.end;
      headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
    }
  }
  headers['Content-Length'] = size === 0 ? 0 : end - start + 1;
  res.writeHead(status, headers);
  if (req.method === 'HEAD' || size === 0) {
    res.end();
    return 'served';
  }
  await new Promise((resolve) => {
    pipeline(fs.createReadStream(file, { start, end }), res, () => resolve(undefined));
  });
  return 'served';
}
