// @ts-check
import { openSync, readFileSync, readSync } from 'node:fs';

/**
 * Byte ranges of local files, read synchronously by a thread that has the
 * time: a crawl's page threads read the staged bytes they rewrite, the
 * re-crawl's HTTP thread the stored links of a page that answered 304. Each
 * file is opened once; its descriptor stays open until the thread ends.
 *
 * @typedef {{ path: string, at: number, length: number }} FileRange
 *   a byte range of a file, or (length -1) the whole file
 */

/** @returns {(range: FileRange) => Buffer} */
export function createRangeReader() {
  /** @type {Map<string, number>} */
  const fds = new Map();
  return (range) => {
    if (range.length < 0) return readFileSync(range.path); // a file of its own: read once, nothing kept open
    let fd = fds.get(range.path);
    if (fd === undefined) {
      fd = openSync(range.path, 'r');
      fds.set(range.path, fd);
    }
    const buffer = Buffer.allocUnsafeSlow(range.length);
    let done = 0;
    while (done < range.length) {
      const read = readSync(fd, buffer, done, range.length - done, range.at + done);
      if (read === 0) throw new Error(`${range.path} is shorter than recorded (${range.length} bytes at ${range.at})`);
      done += read;
    }
    return buffer;
  };
}
