// @ts-check
/**
 * Splitting a page at its placeholders (once) and joining it with values
 * (per request). Pure Buffer work; see gzip.js for the compressed form.
 */

/**
 * @param {Buffer} buf the page
 * @param {{ offset: number, length: number }[]} slots in file order, not overlapping
 * @returns {Buffer[]} slots.length + 1 parts (views into buf, not copies)
 */
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

/**
 * @param {Buffer[]} parts n + 1 parts
 * @param {Buffer[]} values n values
 * @returns {Buffer}
 */
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
 * The chunks to write for parts joined with values, without copying the
 * page: parts of at least `direct` bytes are written as they are (the kernel
 * copies them into the socket; copying them here first cost most of a filled
 * request's CPU), and each run of smaller pieces between them (prices, the
 * short text between two slots) is joined into one chunk, so a page of many
 * small slots is still a few chunks. Concatenating the chunks gives
 * joinParts(parts, values).
 * @param {Buffer[]} parts n + 1 parts
 * @param {Buffer[]} values n values
 * @param {number} [direct] the smallest part written as it is
 * @returns {{ chunks: Buffer[], length: number }}
 */
export function chunkParts(parts, values, direct = 1024) {
  /** @type {Buffer[]} */
  const chunks = [];
  /** @type {Buffer[]} */
  let run = [];
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
