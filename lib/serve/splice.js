// @ts-check
/** A page split at its placeholders once, joined with values per request; see gzip.js for the compressed form. */

/** @param {Buffer} buf @param {{ offset: number, length: number }[]} slots in file order, not overlapping @returns {Buffer[]} views into buf */
export function splitAtSlots(buf, slots) {
  const parts = [];
  let at = 0;
  for (const slot of slots) {
    parts.push(buf.subarray(at, slot.offset));
    at = slot.offset + slot.length;
  }
  parts.push(buf.subarray(at));
  return parts;
}

/** @param {Buffer[]} parts n + 1 @param {Buffer[]} values n @returns {Buffer} */
export function joinParts(parts, values) {
  const pieces = new Array(parts.length + values.length);
  for (let i = 0; i < values.length; i++) {
    pieces[2 * i] = parts[i];
    pieces[2 * i + 1] = values[i];
  }
  pieces[pieces.length - 1] = parts[parts.length - 1];
  return Buffer.concat(pieces);
}

/**
 * Parts of at least `direct` bytes go out as they are: copying them first cost most of a filled request's CPU. Each run of
 * smaller pieces between them is joined into one chunk, so a page of many slots is still a few chunks.
 * @param {Buffer[]} parts n + 1 @param {Buffer[]} values n @param {number} [direct] @returns {{ chunks: Buffer[], length: number }}
 */
export function chunkParts(parts, values, direct = 1024) {
  /** @type {Buffer[]} */ const chunks = [];
  /** @type {Buffer[]} */ let run = [];
  let runBytes = 0;
  let length = 0;
  const flush = () => {
    if (run.length === 1) chunks.push(run[0]);
    else if (run.length > 1) chunks.push(Buffer.concat(run, runBytes));
    run = [];
    runBytes = 0;
  };
  const n = values.length;
  for (let i = 0; i <= n; i++) {
    const part = parts[i];
    length += part.length;
    if (part.length >= direct) {
      flush();
      chunks.push(part);
    } else if (part.length > 0) {
      run.push(part);
      runBytes += part.length;
    }
    if (i < n) {
      const value = values[i];
      length += value.length;
      if (value.length > 0) {
        run.push(value);
        runBytes += value.length;
      }
    }
  }
  flush();
  return { chunks, length };
}
