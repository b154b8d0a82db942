// @ts-check
/**
 * Where a crawl's output goes. Invariant: nothing written is visible before `commit()`, which shows the manifest last,
 * so no reader sees it list a missing file; `abort()` drops what is pending.
 * @typedef {Buffer | Uint8Array | string | AsyncIterable<Uint8Array | string>} OutputData
 * @typedef {{ readonly location: string, init(): Promise<void>, remove(file: string): Promise<void>, commit(): Promise<void>, abort(): Promise<void>,
 *   write(file: string, data: OutputData, options?: { sameTimeAs?: string }): Promise<void>, existing?(file: string): Promise<number | null>,
 *   reserve?(file: string): Promise<{ path: string, adopt(): Promise<void>, drop(): Promise<void> }> }} OutputTarget
 *   sameTimeAs: take that file's modification time (FILE.gz beside FILE); existing: a committed file's size, so a re-crawl can leave it;
 *   reserve: a new local path (O_EXCL) a worker thread writes itself; `adopt()` makes it the pending content of `file`
 */
export {};
