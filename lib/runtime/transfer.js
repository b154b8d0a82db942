// @ts-check
/** Bytes handed to another thread are transferred, not cloned. Kept apart so threads load nothing else. */

/** The buffer's own when it spans all of it, else a copy: never a slice of Node's shared pool. @param {Buffer} buffer @returns {ArrayBuffer} */
export function transferable(buffer) {
  const whole = buffer.byteOffset === 0 && buffer.byteLength === buffer.buffer.byteLength && buffer.buffer instanceof ArrayBuffer;
  return whole ? /** @type {ArrayBuffer} */ (buffer.buffer) : copyOf([buffer]);
}

/** One new ArrayBuffer with these buffers one after the other. @param {Buffer[]} buffers */
export function copyOf(buffers) {
  let length = 0;
  for (const buffer of buffers) length += buffer.length;
  const data = new ArrayBuffer(length);
  const view = new Uint8Array(data);
  let at = 0;
  for (const buffer of buffers) {
    view.set(buffer, at);
    at += buffer.length;
  }
  return data;
}
