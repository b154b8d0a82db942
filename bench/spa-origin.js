#!/usr/bin/env node
// @ts-check
/**
 * The client-rendered shop of fixtures/spa-shop.js as a process of its own,
 * for bench/render-bench.js: prints its root URL, and stops when its stdin closes.
 *
 *   node bench/spa-origin.js PRODUCTS COUNT
 */
import { startSpaShop } from '../fixtures/spa-shop.js';

const shop = await startSpaShop({ products: Number(process.argv[2] ?? 2000), count: Number(process.argv[3] ?? 100) });
process.stdout.write(`${shop.url}\n`);
process.stdin.resume();
process.stdin.on('end', () => { void shop.close().then(() => process.exit(0)); });
