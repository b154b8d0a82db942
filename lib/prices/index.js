// @ts-check
/** Price sources: `lookup(sku, zip)` gives the price text or null (fallback), synchronously or by a promise that never rejects. */
import { EventEmitter } from 'node:events';
import { FilePriceSource, priceFileFormat } from './file-source.js';
import { HttpPriceSource, checkUrlTemplate } from './http-source.js';
import { buildTable, lookupTable } from './table.js';

export { FilePriceSource, PriceFileError, parsePriceFile, priceFileFormat } from './file-source.js';
export { InvalidPriceAnswerError } from './answer.js';
export { HttpPriceSource, HTTP_SOURCE_DEFAULTS, checkUrlTemplate } from './http-source.js';
export { normalizeZip } from './zip.js';
export { TtlCache } from './lru.js';
export { DEFAULT_MAX_PRICE_LENGTH } from './table.js';

/**
 * @typedef {{ lookup: (sku: string, zip: string | null) => string | null | Promise<string | null>, close?: () => Promise<void> | void,
 *   description?: string, on?: (event: string, listener: (...args: any[]) => void) => unknown }} PriceSource
 */

/** A source with no prices: every slot gets the fallback. */
export class EmptyPriceSource extends EventEmitter {
  description = 'no price source';
  constructor() {
    super();
  }
  /** @returns {null} */
  lookup() {
    return null;
  }
  async close() {}
}

/** Prices from an object `{ SKU: { ZIP: "text", "*": "default" } }`, fixed. */
export class TablePriceSource extends EventEmitter {
  #table;
  description = 'in-memory price table';
  /** @param {Record<string, Record<string, string | number>>} data @param {{ maxPriceLength?: number }} [options] */
  constructor(data, options = {}) {
    super();
    const rows = [];
    for (const [sku, byZip] of Object.entries(data)) {
      for (const [zip, price] of Object.entries(byZip ?? {})) rows.push({ sku, zip, price, where: `SKU ${JSON.stringify(sku)} zip ${JSON.stringify(zip)}` });
    }
    const { table, problems } = buildTable(rows, options);
    if (problems.length) throw new TypeError(problems.join('; '));
    this.#table = table;
  }
  /** @param {string} sku @param {string | null} zip */
  lookup(sku, zip) {
    return lookupTable(this.#table, sku, zip);
  }
  async close() {}
}

/** @param {string} spec a `prices` option @returns {{ kind: 'http', template: string } | { kind: 'file', file: string, format: 'json' | 'csv' } | { kind: 'invalid', problem: string }} */
export function classifyPriceSpec(spec) {
  if (/^https?:\/\//i.test(spec)) {
    const problem = checkUrlTemplate(spec);
    return problem ? { kind: 'invalid', problem } : { kind: 'http', template: spec };
  }
  const format = priceFileFormat(spec);
  if (!format) return { kind: 'invalid', problem: `--prices ${spec}: expected a .json or .csv file, or an http(s) URL template with {sku} (and {zip})` };
  return { kind: 'file', file: spec, format };
}

/** @param {string} spec a .json/.csv path or an http(s) URL template @param {object} options passed to the source @returns {PriceSource} */
export function openPriceSource(spec, options) {
  const what = classifyPriceSpec(spec);
  if (what.kind === 'invalid') throw new TypeError(what.problem);
  if (what.kind === 'http') return new HttpPriceSource(what.template, options);
  return new FilePriceSource(what.file, options);
}
