// @ts-check
/**
 * Where a crawl's output goes. Pages, the manifest and the sitemap all reach
 * the output through this one interface; the local tree (`local.js`) is the
 * default, and a remote or in-memory target implements the same five calls.
 *
 * - `write(file, data)` stores a file under its relative name (forward
 *   slashes). Nothing is visible under that name before `commit()`; writing
 *   the same name again replaces the pending content.
 * - `remove(file)` schedules a removal, carried out by `commit()`.
 * - `commit()` makes every pending write and removal visible, the manifest
 *   last, so a reader never sees a manifest that lists a file not yet there.
 * - `abort()` drops what is pending; what was committed before stays.
 *
 * @typedef {Buffer | Uint8Array | string | AsyncIterable<Uint8Array | string>} OutputData
 * @typedef {{
 *   readonly location: string,
 *   init(): Promise<void>,
 *   write(file: string, data: OutputData, options?: { sameTimeAs?: string }): Promise<void>,
 *   remove(file: string): Promise<void>,
 *   commit(): Promise<void>,
 *   abort(): Promise<void>,
 *   existing?(file: string): Promise<number | null>,
 *   reserve?(file: string): Promise<{ path: string, adopt(): Promise<void>, drop(): Promise<void> }>,
 * }} OutputTarget
 *   write's sameTimeAs: give the file the modification time of that other
 *   file once both are committed (precompressed siblings: FILE.gz beside FILE).
 *   existing (optional): the size of a committed file, or null; lets a
 *   re-crawl leave a file as it is when it would write the same bytes.
 *   reserve (optional): a local path, not yet existing, where a worker
 *   thread writes the file's bytes itself (created with O_EXCL, never through
 *   a link); `adopt()` then makes it the pending content of `file`, as
 *   `write` would, and `drop()` forgets it. Targets without it get the bytes
 *   through `write`.
 */
export {};
