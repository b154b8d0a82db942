#!/usr/bin/env node
// @ts-check
/**
 * The client-rendered shop of fixtures/spa-shop.js as a process of its own,
 * for bench/render-bench.js: prints its root URL, and stops when its stdin closes.
 *
 *   node bench/spa-origin.js PRODUCTS COUNT
 */
import { startSpaShop } from '../fixtures/spa-shop.js';
import { parseBenchArgs, usageError } from './lib/args.js';

const USAGE = `usage: node bench/spa-origin.js PRODUCTS COUNT
The client-rendered shop of fixtures/spa-shop.js as a process of its own, for
bench/render-bench.js: PRODUCTS products (default 2000), COUNT products per
directory page (default 100); prints its root URL, and stops when its stdin closes.`;

const { positionals } = parseBenchArgs('spa-origin', {}, USAGE, { allowPositionals: true });
for (const [name, text] of /** @type {const} */ ([['PRODUCTS', positionals[0]], ['COUNT', positionals[1]]])) {
  if (text !== undefined && !(Number.isSafeInteger(Number(text)) && Number(text) >= 1)) usageError('spa-origin', `${name} must be a whole number >= 1, got ${JSON.stringify(text)}`);
}
const shop = await startSpaShop({ products: Number(positionals[0] ?? 2000), count: Number(positionals[1] ?? 100) });
process.stdout.write(`${shop.url}\n`);
process.stdin.resume();
process.stdin.on('end', () => { void shop.close().then(() => process.exit(0)); });
