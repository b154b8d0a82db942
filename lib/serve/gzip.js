// @ts-check
/**
 * Gzip for filled pages without compressing per request: each static part is deflated once, ending in a sync flush on a
 * byte boundary; per request the prices go in as stored blocks, and the header and trailer are added: one ordinary gzip member.
 */
import zlib from 'node:zlib';

const HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03]);

/** @param {Buffer[]} parts the page split at its placeholders @returns {Buffer[]} only the last ends the stream */
export function deflateParts(parts) {
  return parts.map((part, i) =>
    zlib.deflateRawSync(part, {
      level: 6,
      finishFlush: i === parts.length - 1 ? zlib.constants.Z_FINISH : zlib.constants.Z_SYNC_FLUSH,
    }),
  );
}

/** Not final, for up to 65535 bytes. @param {Buffer} data @returns {Buffer[]} */
function storedBlocks(data) {
  /** @type {Buffer[]} */ const out = [];
  for (let start = 0; start < data.length; start += 0xffff) {
    const chunk = data.subarray(start, Math.min(data.length, start + 0xffff));
    const len = chunk.length;
    out.push(Buffer.from([0x00, len & 0xff, len >>> 8, ~len & 0xff, (~len >>> 8) & 0xff]), chunk);
  }
  return out;
}

/** @param {Buffer[]} parts identity parts, for CRC and length @param {Buffer[]} deflated from deflateParts(parts) @param {Buffer[]} values encoded, one per slot @returns {Buffer} */
export function gzipFilled(parts, deflated, values) {
  /** @type {Buffer[]} */ const pieces = [HEADER];
  let crc = 0;
  let size = 0;
  for (let i = 0; i < parts.length; i++) {
    // Empty buffers skipped: zlib.crc32 of an empty, detached buffer answers 0 instead of the running value.
    if (parts[i].length > 0) crc = zlib.crc32(parts[i], crc);
    size += parts[i].length;
    pieces.push(deflated[i]);
    if (i < values.length && values[i].length > 0) {
      crc = zlib.crc32(values[i], crc);
      size += values[i].length;
      pieces.push(...storedBlocks(values[i]));
    }
  }
  const trailer = Buffer.allocUnsafe(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(size >>> 0, 4);
  pieces.push(trailer);
  return Buffer.concat(pieces);
}
