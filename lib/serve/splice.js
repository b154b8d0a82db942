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
