// @ts-check
/**
 * An output target in memory, for tests of the engine's seams: what is
 * committed is in `files`; `failOn` makes writes of matching names fail
 * (ENAMETOOLONG: a failure of that one file, not of the disk).
 * @param {{ failOn?: (file: string) => boolean }} [options]
 */
export function memoryTarget(options = {}) {
  /** @type {Map<string, Buffer>} */
  const files = new Map();
  /** @type {Map<string, Buffer>} */
  const pending = new Map();
  /** @type {Set<string>} */
  const removals = new Set();
  /** @type {string[]} every write attempted, in order */
  const writes = [];
  let commits = 0;
  let aborts = 0;
  return {
    location: 'memory:',
    files,
    writes,
    get commits() { return commits; },
    get aborts() { return aborts; },
    async init() {},
    /**
     * @param {string} file
     * @param {import('../../lib/output/target.js').OutputData} data
     */
    async write(file, data) {
      writes.push(file);
      /** @type {Buffer[]} */
      const chunks = [];
      if (typeof data === 'string' || data instanceof Uint8Array) {
        chunks.push(Buffer.from(data));
      } else {
        for await (const chunk of data) chunks.push(Buffer.from(chunk));
      }
      if (options.failOn?.(file)) throw Object.assign(new Error(`ENAMETOOLONG: name too long, open '${file}'`), { code: 'ENAMETOOLONG' });
      pending.set(file, Buffer.concat(chunks));
      removals.delete(file);
    },
    /** @param {string} file */
    async remove(file) {
      pending.delete(file);
      removals.add(file);
    },
    async commit() {
      commits++;
      for (const [file, data] of pending) files.set(file, data);
      for (const file of removals) files.delete(file);
      pending.clear();
      removals.clear();
    },
    async abort() {
      aborts++;
      pending.clear();
      removals.clear();
    },
  };
}
