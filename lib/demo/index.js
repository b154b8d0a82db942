// @ts-check
/**
 * `prerender demo`: the catalogue shop on 127.0.0.1, crawled into OUT as
 * `prerender crawl` does, then served in front of the shop with prices filled,
 * as `prerender serve OUT --origin` does. The steps are methods, so that the
 * CLI can say what each did before the next starts.
 */
import fs from 'node:fs';
import net from 'node:net';
import { once } from 'node:events';
import path from 'node:path';
import { DemoError, UsageError } from '../errors.js';
import { Crawler } from '../crawler/index.js';
import { readManifest } from '../output/manifest/index.js';
import { createServer, listenError, listenOn } from '../serve/index.js';
import { SHOP_PATHS, shopPrice, startDemoShop } from './shop.js';

/** @typedef {import('../crawler/index.js').CrawlResult} CrawlResult */

export const DEMO_DEFAULTS = Object.freeze({ out: 'prerender-demo', port: 8080 });

/** The product, and the zips, the guide shows. */
const SHOWN = Object.freeze({ product: 3, zips: ['10001', '94103'] });

/** A manifest root of an earlier demo: the shop's catalogue on a port of 127.0.0.1. */
const DEMO_ROOT = /^http:\/\/127\.0\.0\.1:\d{1,5}\/st\/dir\.asp$/;

/**
 * @typedef {{ out?: string, port?: number, cwd?: string, signal?: AbortSignal, logger?: import('../serve/options.js').Logger }} DemoOptions
 *   out: the tree's directory, as the user gave it (relative to cwd); port: the front's (0 picks a free one)
 * @typedef {{ catalogue: string, product: string, productFile: string, productWithZip: string, cart: string, sku: string, prices: { zip: string | null, price: string }[] }} DemoLinks
 */

export class Demo {
  /** @type {Awaited<ReturnType<typeof startDemoShop>> | null} */
  shop = null;
  /** @type {import('../serve/server.js').PrerenderServer | null} */
  server = null;
  /** @type {CrawlResult | null} */
  result = null;
  /** The front's URL, once it listens. @type {string | null} */
  url = null;

  /** @param {DemoOptions} [options] */
  constructor(options = {}) {
    const { out = DEMO_DEFAULTS.out, port = DEMO_DEFAULTS.port } = options;
    if (typeof out !== 'string' || out === '') throw new UsageError(`demo: --out must be a directory, got ${JSON.stringify(out)}`);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`demo: --port must be a whole number from 0 to 65535, got ${JSON.stringify(port)}`);
    /** The options, defaults filled. */
    this.options = { ...options, out, port };
    /** OUT as an absolute path. */
    this.out = path.resolve(options.cwd ?? process.cwd(), out);
  }

  /** Before the shop and the crawl: the front's port is free (a port in use is a UsageError, not a crawl wasted). */
  async checkPort() {
    if (this.options.port === 0) return;
    const probe = net.createServer();
    probe.listen(this.options.port, '127.0.0.1');
    try {
      await Promise.race([once(probe, 'listening'), once(probe, 'error').then(([e]) => Promise.reject(e))]);
    } catch (error) {
      throw listenError(error, '127.0.0.1', this.options.port);
    } finally {
      if (probe.listening) await new Promise((resolve) => probe.close(resolve));
    }
  }

  /** Starts the shop, once OUT is known to be free for it. */
  async startShop() {
    await checkOut(this.out);
    this.shop = await startDemoShop();
    return this.shop;
  }

  /**
   * The crawl of the shop: the options given to the Crawler, and the same crawl as a command line.
   * @returns {{ argv: string[], options: import('../crawler/index.js').CrawlerOptions }}
   */
  crawlPlan() {
    const shop = this.#shop();
    return {
      argv: ['crawl', shop.url, '-i', ...SHOP_PATHS.scope, '-o', this.options.out],
      options: { roots: [shop.url], include: [...SHOP_PATHS.scope], out: this.out },
    };
  }

  /** Crawls the shop into OUT, as the crawl plan's command does. @returns {Promise<CrawlResult>} */
  async crawl() {
    const crawler = new Crawler({ ...this.crawlPlan().options, signal: this.options.signal });
    this.result = await crawler.run();
    return this.result;
  }

  /**
   * The front's options: the serve command's arguments, and createServer's options.
   * The price timeout is longer than serve's: the shop answers from this same process, busy or not.
   */
  servePlan() {
    const shop = this.#shop();
    return {
      argv: ['serve', this.options.out, '--origin', shop.origin, '--prices', shop.priceTemplate, '--port', String(this.options.port)],
      options: { root: this.out, origin: shop.origin, prices: shop.priceTemplate, port: this.options.port, host: '127.0.0.1', priceTimeoutMs: 3000, logger: this.options.logger },
    };
  }

  /** Serves OUT in front of the shop; resolves with the front's URL. */
  async serve() {
    this.server = createServer(this.servePlan().options);
    this.url = await listenOn(this.server);
    return this.url;
  }

  /**
   * What to open, read from the manifest: the shown product's file and its prices by zip.
   * @returns {Promise<DemoLinks>}
   */
  async links() {
    if (this.url === null) throw new UsageError('demo: links() needs serve() first');
    const manifest = await readManifest(this.out);
    const page = manifest.pages.find((p) => new URL(p.url).searchParams.get('SKUSetID') === String(SHOWN.product));
    if (!page) throw new DemoError(`demo: the crawl wrote no page for product ${SHOWN.product}; see ${path.join(this.out, 'prerender-manifest.json')}`, { code: 'DEMO_CRAWL' });
    const product = `${this.url}/${page.file.split('/').map(encodeURIComponent).join('/')}`;
    return {
      catalogue: `${this.url}${SHOP_PATHS.root}`,
      product,
      productFile: page.file,
      productWithZip: `${product}?zip=${SHOWN.zips[0]}`,
      cart: `${this.url}/st/cart.asp`,
      sku: `SKU-${SHOWN.product}`,
      prices: [null, ...SHOWN.zips].map((zip) => ({ zip, price: shopPrice(SHOWN.product, zip) })),
    };
  }

  /** Stops the front (requests in flight finish, within serve's drain timeout), then the shop. */
  async close() {
    const { server, shop } = this;
    this.server = null;
    this.shop = null;
    try {
      if (server) await (server.listening ? server.drain() : server.priceFilter.close());
    } finally {
      await shop?.close();
    }
  }

  #shop() {
    if (!this.shop) throw new UsageError('demo: startShop() first');
    return this.shop;
  }
}

/**
 * OUT must be free for the demo: absent, empty, or an earlier demo's tree (which the crawl
 * then replaces). Anything else might be the user's own crawl, which a demo crawl would prune.
 * @param {string} out
 */
async function checkOut(out) {
  let entries;
  try {
    entries = await fs.promises.readdir(out);
  } catch (error) {
    const code = /** @type {NodeJS.ErrnoException} */ (error).code;
    if (code === 'ENOENT') return;
    if (code !== 'ENOTDIR') throw error;
    throw new DemoError(`demo: ${out} is a file; give --out a directory of its own`, { code: 'DEMO_OUT_IN_USE' });
  }
  if (entries.length === 0) return;
  const manifest = await readManifest(out).catch(() => null);
  if (manifest && manifest.roots.length > 0 && manifest.roots.every((root) => DEMO_ROOT.test(root))) return;
  throw new DemoError(`demo: ${out} holds files that are not an earlier demo's, which the demo's crawl would replace; give another --out, or remove it`, { code: 'DEMO_OUT_IN_USE' });
}
