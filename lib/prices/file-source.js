// @ts-check
/** Prices from a JSON or CSV file, reloaded on change; a failed reload keeps the last good prices and says why. */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { PrerenderError } from '../errors.js';
import { parsePriceCsv, parsePriceJson } from './parse.js';
import { buildTable, lookupTable } from './table.js';

/** An unusable price file (malformed, a bad row), carried by `reload-error` with a stable code. */
export class PriceFileError extends PrerenderError {
  code = 'PRICE_FILE_INVALID';
}

/** @typedef {import('./table.js').PriceTable} PriceTable @typedef {{ warn(message: string): void, info?(message: string): void }} Logger */

/** @param {string} file @returns {'json' | 'csv' | null} */
export function priceFileFormat(file) {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.json') return 'json';
  if (ext === '.csv') return 'csv';
  return null;
}

/** @param {string} text @param {'json' | 'csv'} format @param {{ maxPriceLength?: number }} [options] @returns {PriceTable} or a PriceFileError thrown */
export function parsePriceFile(text, format, options = {}) {
  let rows;
  try {
    rows = format === 'json' ? parsePriceJson(text) : parsePriceCsv(text);
  } catch (error) {
    throw new PriceFileError(/** @type {Error} */ (error).message, { cause: error });
  }
  const { table, problems } = buildTable(rows, options);
  if (problems.length > 0) throw new PriceFileError(problems.join('; '));
  return table;
}

export class FilePriceSource extends EventEmitter {
  /** @type {PriceTable} */ #table = new Map();
  #file;
  #format;
  #options;
  /** @type {string | null} signature (inode, size, mtime) of the last file we tried */
  #seen = null;
  /** @type {fs.FSWatcher | null} */ #watcher = null;
  /** @type {NodeJS.Timeout | null} */ #poll = null;
  /** @type {NodeJS.Timeout | null} */ #debounce = null;
  /** @type {Promise<void> | null} */ #running = null;
  #again = false;
  #closed = false;
  /** @type {Date | null} */ loadedAt = null;

  /**
   * Loads synchronously, so a bad file fails at start-up, then watches unless `watch` is false.
   * @param {string} file @param {{ maxPriceLength?: number, watch?: boolean, pollIntervalMs?: number, debounceMs?: number, logger?: Logger }} [options]
   */
  constructor(file, options = {}) {
    super();
    const format = priceFileFormat(file);
    if (!format) throw new Error(`price file ${file} must end in .json or .csv`);
    this.#file = path.resolve(file);
    this.#format = format;
    this.#options = { watch: true, pollIntervalMs: 2000, debounceMs: 50, ...options };
    const st = fs.statSync(this.#file);
    this.#seen = signature(st);
    this.#table = parsePriceFile(fs.readFileSync(this.#file, 'utf8'), format, options);
    this.loadedAt = new Date();
    if (this.#options.watch) this.#watch();
  }

  get description() {
    return `${this.#format.toUpperCase()} file ${this.#file}`;
  }

  get size() {
    return this.#table.size;
  }

  /** @param {string} sku @param {string | null} zip normalised zip, or null @returns {string | null} */
  lookup(sku, zip) {
    return lookupTable(this.#table, sku, zip);
  }

  #watch() {
    try {
      this.#watcher = fs.watch(path.dirname(this.#file), { persistent: false }, (_event, name) => {
        if (name === null || name === path.basename(this.#file)) this.#schedule();
      });
      this.#watcher.on('error', () => {
        // Directory gone or watch unsupported: the poll below still runs.
        this.#watcher?.close();
        this.#watcher = null;
      });
    } catch {
      this.#watcher = null; // fs.watch unsupported here (some network file systems): rely on polling
    }
    this.#poll = setInterval(() => this.#schedule(), this.#options.pollIntervalMs);
    this.#poll.unref();
  }

  #schedule() {
    if (this.#closed) return;
    if (this.#debounce) clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => {
      this.#debounce = null;
      void this.check();
    }, this.#options.debounceMs);
    this.#debounce.unref();
  }

  /** Reload if the file changed since the last attempt; never rejects. @returns {Promise<void>} */
  check() {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#reload().finally(() => {
      this.#running = null;
      if (this.#again && !this.#closed) {
        this.#again = false;
        void this.check();
      }
    });
    return this.#running;
  }

  async #reload() {
    let st;
    try {
      st = await fs.promises.stat(this.#file);
    } catch (error) {
      const sig = 'missing';
      if (this.#seen !== sig) {
        this.#seen = sig;
        this.#fail(error);
      }
      return;
    }
    const sig = signature(st);
    if (sig === this.#seen) return;
    let table;
    try {
      const text = await fs.promises.readFile(this.#file, 'utf8');
      const after = signature(await fs.promises.stat(this.#file));
      if (after !== sig) {
        // Written while we read it: read again once the writer is done.
        this.#again = true;
        return;
      }
      this.#seen = sig;
      table = parsePriceFile(text, this.#format, this.#options);
    } catch (error) {
      this.#seen = sig;
      this.#fail(error);
      return;
    }
    if (this.#closed) return;
    this.#table = table;
    this.loadedAt = new Date();
    this.#options.logger?.info?.(`prices: reloaded ${this.#file} (${table.size} SKUs)`);
    this.emit('reload', { skus: table.size });
  }

  /** @param {unknown} error */
  #fail(error) {
    const reason = error instanceof Error ? error.message : String(error);
    const kept = this.loadedAt ? `keeping the prices loaded at ${this.loadedAt.toISOString()}` : 'no prices loaded';
    this.#options.logger?.warn(`prices: could not reload ${this.#file}: ${reason}; ${kept}`);
    this.emit('reload-error', error);
  }

  async close() {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = null;
    if (this.#poll) clearInterval(this.#poll);
    if (this.#debounce) clearTimeout(this.#debounce);
    await this.#running;
  }
}

/** @param {fs.Stats} st */
function signature(st) {
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
}
