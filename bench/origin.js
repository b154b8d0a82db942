#!/usr/bin/env node
// @ts-check
/**
 * The benchmark origin: an XBuilder-style shop in its own process.
 *
 *   node bench/origin.js --products 20000 --port 0 [--count 1000] [--workers 1] [--latency-ms 50] [--cpu-us 2000]
 *
 * prints its origin URL (http://127.0.0.1:PORT) as the first line on stdout,
 * then serves until SIGTERM/SIGINT:
 *
 *   /st/dir.asp[?Start=S&Count=C]   C product links (default 1000); the last
 *                                   link is dir.asp?Start=S+C&Count=C
 *   /st/product.asp?SKUSetID=N      a ~15 KB product page, XBuilder-FileName: productN.htm
 *   /st/cart.asp, checkout.asp, search.asp, ...  small dynamic pages (out of the crawl's scope)
 *
 * Every product page is cut, once at start-up, into static Buffers and a few
 * holes (the SKU number, the price, related products...), so a request only
 * formats a handful of short strings and concatenates: the origin costs a
 * few microseconds of CPU per page, far below the crawler it serves.
 */
import cluster from 'node:cluster';
import http from 'node:http';
import { parseBenchArgs } from './lib/args.js';

const HOLE = '\u0000';

/**
 * A page template compiled to static Buffers and named holes.
 * `render` is called once with hole markers; the result is split on them.
 * @param {(hole: (name: string) => string) => string} render
 * @returns {{ parts: Buffer[], holes: string[] }} parts.length === holes.length + 1
 */
export function compileTemplate(render) {
  const text = render((name) => `${HOLE}${name}${HOLE}`);
  const pieces = text.split(HOLE);
  /** @type {Buffer[]} */
  const parts = [];
  /** @type {string[]} */
  const holes = [];
  for (let i = 0; i < pieces.length; i++) {
    if (i % 2 === 0) parts.push(Buffer.from(pieces[i], 'utf8'));
    else holes.push(pieces[i]);
  }
  return { parts, holes };
}

/**
 * @param {{ parts: Buffer[], holes: string[] }} template
 * @param {Record<string, string | Buffer>} values
 */
export function fillTemplate(template, values) {
  const { parts, holes } = template;
  /** @type {Buffer[]} */
  const chunks = new Array(parts.length + holes.length);
  let size = 0;
  for (let i = 0; i < holes.length; i++) {
    chunks[2 * i] = parts[i];
    const value = values[holes[i]];
    const buffer = typeof value === 'string' ? Buffer.from(value, 'latin1') : value;
    chunks[2 * i + 1] = buffer;
    size += parts[i].length + buffer.length;
  }
  chunks[chunks.length - 1] = parts[parts.length - 1];
  size += parts[parts.length - 1].length;
  return Buffer.concat(chunks, size);
}

const CATEGORIES = ['Tents', 'Sleeping bags', 'Backpacks', 'Footwear', 'Jackets', 'Stoves', 'Lighting', 'Navigation'];
const ADJECTIVES = ['lightweight', 'waterproof', 'breathable', 'durable', 'packable', 'insulated', 'reinforced', 'adjustable', 'ventilated', 'recycled'];
const NOUNS = ['shell', 'frame', 'seam', 'zip', 'strap', 'panel', 'hood', 'harness', 'liner', 'buckle', 'pocket', 'sole'];

/**
 * A deterministic paragraph of catalogue prose.
 * @param {number} seed
 * @param {number} sentences
 */
function prose(seed, sentences) {
  let x = seed * 2654435761 >>> 0;
  const pick = (/** @type {string[]} */ list) => {
    x = (x * 1103515245 + 12345) >>> 0;
    return list[(x >>> 8) % list.length];
  };
  const out = [];
  for (let i = 0; i < sentences; i++) {
    out.push(`The ${pick(ADJECTIVES)} ${pick(NOUNS)} and ${pick(ADJECTIVES)} ${pick(NOUNS)} keep it ${pick(ADJECTIVES)} on long trips, with a ${pick(NOUNS)} that stays ${pick(ADJECTIVES)} in wet weather.`);
  }
  return out.join(' ');
}

/** Descriptions differ between pages: one of these blocks per product. */
const DESCRIPTION_VARIANTS = 32;

/** @param {number} variant */
function descriptionBlock(variant) {
  const paragraphs = [];
  for (let p = 0; p < 11; p++) paragraphs.push(`<p>${prose(variant * 16 + p, 7)}</p>`);
  const specs = [];
  for (let s = 0; s < 14; s++) {
    specs.push(`<tr><th scope="row">${NOUNS[(variant + s) % NOUNS.length]}</th><td>${ADJECTIVES[(variant * 3 + s) % ADJECTIVES.length]}, ${10 + ((variant * 7 + s * 13) % 90)} mm</td></tr>`);
  }
  return `<section class="description">
<h2>Description</h2>
${paragraphs.join('\n')}
<ul class="features">
${[0, 1, 2, 3, 4, 5].map((f) => `<li>${ADJECTIVES[(variant + f) % ADJECTIVES.length]} ${NOUNS[(variant * 5 + f) % NOUNS.length]}</li>`).join('\n')}
</ul>
</section>
<section class="specs">
<h2>Specifications</h2>
<table class="spec-table">
${specs.join('\n')}
</table>
</section>
`;
}

const NAV = [
  ['/', 'Home'],
  ['/st/dir.asp', 'All products'],
  ...CATEGORIES.map((name, i) => [`/st/category.asp?cat=${i + 1}`, name]),
  ['/st/search.asp?adv=1', 'Advanced search'],
  ['/st/account.asp', 'My account'],
  ['/st/wishlist.asp', 'Wish list'],
  ['/st/cart.asp', 'Cart'],
  ['/st/checkout.asp', 'Checkout'],
  ['/help/shipping.html', 'Shipping'],
  ['/help/returns.html', 'Returns'],
  ['/contact.asp', 'Contact us'],
];

const FOOTER = [
  ['/about.html', 'About us'], ['/stores.asp', 'Stores'], ['/careers.html', 'Careers'], ['/press.html', 'Press'],
  ['/help/faq.html', 'FAQ'], ['/help/sizes.html', 'Size guide'], ['/terms.html', 'Terms'], ['/privacy.html', 'Privacy'],
  ['/st/newsletter.asp', 'Newsletter'], ['/sitemap.asp', 'Site map'],
];

/** The product page, with holes: n, name, price, category, catId, dirLink, related1..5, relname1..5, desc. */
const PRODUCT = compileTemplate((h) => `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${h('name')} | Acme Outdoor</title>
<meta name="description" content="${h('name')}: ${h('category')} from Acme Outdoor, delivered in 2 to 4 days.">
<link rel="stylesheet" href="/css/shop.css?v=20240611">
<link rel="icon" href="/favicon.ico">
<script src="/js/shop.js?v=20240611" defer></script>
<script>window.dataLayer = window.dataLayer || []; window.dataLayer.push({ page: 'product', sku: 'SKU-${h('n')}' });</script>
</head>
<body class="product-page">
<header class="site-header">
<a class="logo" href="/"><img src="/img/logo.svg" alt="Acme Outdoor" width="160" height="40"></a>
<form class="search" action="search.asp" method="get"><input type="search" name="q" placeholder="Search the shop"><button type="submit">Search</button></form>
<nav class="main-nav">
<ul>
${NAV.map(([href, text]) => `<li><a href="${href}">${text}</a></li>`).join('\n')}
</ul>
</nav>
</header>
<nav class="breadcrumb"><a href="/">Home</a> &gt; <a href="${h('dirLink')}">All products</a> &gt; <a href="category.asp?cat=${h('catId')}">${h('category')}</a> &gt; <span>${h('name')}</span></nav>
<main id="content">
<article class="product" itemscope itemtype="https://schema.org/Product">
<div class="gallery"><img src="/img/products/${h('n')}-large.jpg" alt="${h('name')}" width="600" height="600" itemprop="image"></div>
<div class="buy-box">
<h1 itemprop="name">${h('name')}</h1>
<p class="sku">Item SKU-${h('n')}</p>
<p class="price">Price: <span data-price-sku="SKU-${h('n')}">${h('price')}</span></p>
<form class="add-to-cart" action="cart.asp" method="post"><input type="hidden" name="add" value="${h('n')}"><input type="number" name="qty" value="1" min="1"><button type="submit">Add to cart</button></form>
<p><a class="quick-add" href="cart.asp?add=${h('n')}&amp;qty=1">Add to cart</a> &middot; <a href="/st/checkout.asp?buy=${h('n')}">Buy now</a> &middot; <a href="wishlist.asp?add=${h('n')}">Save to wish list</a></p>
</div>
${h('desc')}<section class="related">
<h2>Customers also viewed</h2>
<ul>
<li><a href="product.asp?SKUSetID=${h('related1')}">${h('relname1')}</a></li>
<li><a href="product.asp?SKUSetID=${h('related2')}">${h('relname2')}</a></li>
<li><a href="/st/product.asp?SKUSetID=${h('related3')}">${h('relname3')}</a></li>
<li><a href="product.asp?SKUSetID=${h('related4')}">${h('relname4')}</a></li>
<li><a href="product.asp?SKUSetID=${h('related5')}#reviews">${h('relname5')}</a></li>
</ul>
</section>
<section class="reviews" id="reviews">
<h2>Reviews</h2>
<p>Rated 4.${h('rating')} out of 5. <a href="reviews.asp?sku=${h('n')}">Read all reviews</a> or <a href="reviews.asp?sku=${h('n')}&amp;write=1">write one</a>.</p>
</section>
</article>
</main>
<footer class="site-footer">
<ul>
${FOOTER.map(([href, text]) => `<li><a href="${href}">${text}</a></li>`).join('\n')}
</ul>
<p>&copy; 2024 Acme Outdoor Ltd. Prices include VAT. <a href="/st/search.asp?q=">Search</a></p>
</footer>
</body>
</html>
`);

const DESCRIPTIONS = Array.from({ length: DESCRIPTION_VARIANTS }, (_, i) => Buffer.from(descriptionBlock(i), 'utf8'));

/**
 * @param {number} n
 */
const productName = (n) => `${CATEGORIES[n % CATEGORIES.length].replace(/s$/, '')} ${ADJECTIVES[n % ADJECTIVES.length]} ${n}`;

/**
 * Five related products, all within 1..products.
 * @param {number} n
 * @param {number} products
 */
export function relatedProducts(n, products) {
  const wrap = (/** @type {number} */ m) => ((m - 1) % products + products) % products + 1;
  return [wrap(n + 1), wrap(n - 1), wrap(n + 7), wrap(n * 31 + 3), wrap(n * 7919 + 11)];
}

/**
 * The dir.asp link for the directory page that lists product n.
 * @param {number} n
 * @param {number} count
 */
function dirLinkFor(n, count) {
  const start = Math.floor((n - 1) / count) * count + 1;
  return start === 1 ? 'dir.asp' : `dir.asp?Start=${start}&amp;Count=${count}`;
}

/**
 * @param {number} n
 * @param {number} products
 * @param {number} count
 */
export function productPage(n, products, count) {
  const related = relatedProducts(n, products);
  const category = n % CATEGORIES.length;
  return fillTemplate(PRODUCT, {
    n: String(n),
    name: productName(n),
    price: `$${(n % 500) + 9}.99`,
    category: CATEGORIES[category],
    catId: String(category + 1),
    dirLink: dirLinkFor(n, count),
    related1: String(related[0]), relname1: productName(related[0]),
    related2: String(related[1]), relname2: productName(related[1]),
    related3: String(related[2]), relname3: productName(related[2]),
    related4: String(related[3]), relname4: productName(related[3]),
    related5: String(related[4]), relname5: productName(related[4]),
    rating: String(n % 10),
    desc: DESCRIPTIONS[n % DESCRIPTION_VARIANTS],
  });
}

/**
 * A directory page: `count` products from `start`, then a link to the next page.
 * @param {number} start
 * @param {number} count
 * @param {number} products
 */
export function dirPage(start, count, products) {
  const last = Math.min(products, start + count - 1);
  const rows = [];
  for (let n = start; n <= last; n++) rows.push(`<li><a href="product.asp?SKUSetID=${n}">${productName(n)}</a></li>`);
  const next = last < products ? `<p class="pager"><a href="dir.asp?Start=${last + 1}&amp;Count=${count}">Next ${count}</a></p>\n` : '';
  return Buffer.from(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>All products ${start}-${last} | Acme Outdoor</title>
<link rel="stylesheet" href="/css/shop.css?v=20240611"></head>
<body class="directory">
<header><a href="/">Acme Outdoor</a> <a href="cart.asp">Cart</a> <a href="checkout.asp">Checkout</a>
<form action="search.asp"><input name="q"></form></header>
<h1>All products ${start} to ${last}</h1>
<ul class="product-list">
${rows.join('\n')}
</ul>
${next}</body></html>
`, 'utf8');
}

/**
 * Whether product n's page differs from the default at a churn of `percent` (deterministic from n).
 * @param {number} n
 * @param {number} percent
 */
export const isChangedProduct = (n, percent) => ((Math.imul(n, 2654435761) >>> 0) % 100) < percent;

/**
 * /sitemap.xml: every product page, each with the same <lastmod>.
 * @param {number} products
 * @param {string} lastmod
 */
function sitemapOf(products, lastmod) {
  const entries = [];
  for (let n = 1; n <= products; n++) entries.push(`<url><loc>/st/product.asp?SKUSetID=${n}</loc><lastmod>${lastmod}</lastmod></url>`);
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${entries.join('\n')}\n</urlset>\n`);
}

/**
 * The origin's request handler.
 * @param {{ products: number, count: number, changed?: number, etag?: boolean, lastmod?: string }} options
 *   changed: the percentage of products whose page differs from the default
 *   (a marker at its end; which products, deterministic from their number),
 *   to measure re-crawls at a given churn; etag: send ETags and answer a
 *   matching If-None-Match with 304; lastmod: serve /sitemap.xml, every
 *   product dated so
 */
export function createHandler({ products, count, changed = 0, etag = false, lastmod }) {
  const isChanged = (/** @type {number} */ n) => isChangedProduct(n, changed);
  const sitemap = lastmod === undefined ? null : sitemapOf(products, lastmod);
  const CHANGED = Buffer.from(`<!-- changed since the first crawl (${changed}% churn) -->\n`);
  /** @type {Map<string, Buffer>} */
  const dirCache = new Map();
  const small = (/** @type {string} */ path) => Buffer.from(`<!DOCTYPE html><html><head><title>Acme Outdoor</title></head><body><p>dynamic page ${path.replace(/[<&]/g, '')}</p><a href="/">Home</a></body></html>\n`);

  /**
   * @param {http.ServerResponse} res
   * @param {number} status
   * @param {Buffer} body
   * @param {string} [fileName]
   * @param {string} [tag] an ETag
   */
  const send = (res, status, body, fileName, tag) => {
    /** @type {Record<string, string | number>} */
    const headers = { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length };
    if (fileName) headers['xbuilder-filename'] = fileName;
    if (tag) headers.etag = tag;
    res.writeHead(status, headers);
    res.end(body);
  };

  /** @param {string} query @param {string} name */
  const param = (query, name) => {
    for (const pair of query.split('&')) {
      const eq = pair.indexOf('=');
      if (eq > 0 && pair.slice(0, eq).toLowerCase() === name) return pair.slice(eq + 1);
    }
    return undefined;
  };

  /** @param {http.IncomingMessage} req @param {http.ServerResponse} res */
  return (req, res) => {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const path = q < 0 ? raw : raw.slice(0, q);
    const query = q < 0 ? '' : raw.slice(q + 1);
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'POST') return send(res, 405, small('method'));
    if (path === '/sitemap.xml' && sitemap) {
      res.writeHead(200, { 'content-type': 'application/xml', 'content-length': sitemap.length });
      return res.end(sitemap);
    }
    switch (path) {
      case '/st/product.asp': {
        const n = Number(param(query, 'skusetid'));
        if (!Number.isInteger(n) || n < 1 || n > products) return send(res, 404, small('no such product'));
        const different = changed > 0 && isChanged(n);
        const tag = etag ? `"p${n}-${different ? changed : 0}"` : undefined;
        if (tag && req.headers['if-none-match'] === tag) {
          res.writeHead(304, { etag: tag, 'xbuilder-filename': `product${n}.htm` });
          return res.end();
        }
        const page = productPage(n, products, count);
        return send(res, 200, different ? Buffer.concat([page, CHANGED]) : page, `product${n}.htm`, tag);
      }
      case '/st/dir.asp': {
        const start = Number(param(query, 'start') ?? 1);
        const size = Number(param(query, 'count') ?? count);
        if (!Number.isInteger(start) || start < 1 || !Number.isInteger(size) || size < 1 || size > 10_000) return send(res, 404, small('bad page'));
        const key = `${start}:${size}`;
        let body = dirCache.get(key);
        if (!body) {
          body = dirPage(start, size, products);
          if (dirCache.size < 10_000) dirCache.set(key, body);
        }
        return send(res, 200, body);
      }
      default:
        return send(res, path === '/' || path.startsWith('/st/') || path.startsWith('/help/') || path.endsWith('.html') || path.endsWith('.asp') ? 200 : 404, small(path));
    }
  };
}

/**
 * @param {{
 *   products: number, count: number, port: number, host: string, changed?: number, etag?: boolean,
 *   latencyMs?: number, cpuUs?: number, onRequest?: (target: string) => void, lastmod?: string,
 * }} options
 *   latencyMs: every answer waits this long first (a remote origin, a slow application server);
 *   cpuUs: every request first spends this many microseconds of CPU (a known cost per dynamic page);
 *   onRequest: called with each request target as it arrives (tests count fetches and measure rates)
 * @returns {Promise<http.Server>}
 */
export function startOrigin({ products, count, port, host, changed = 0, etag = false, latencyMs = 0, cpuUs = 0, onRequest, lastmod }) {
  const handler = createHandler({ products, count, changed, etag, lastmod });
  /** @type {http.RequestListener} */
  const listener = latencyMs > 0 || cpuUs > 0 || onRequest
    ? (req, res) => {
      onRequest?.(req.url ?? '/');
      if (cpuUs > 0) spendCpu(cpuUs);
      if (latencyMs > 0) setTimeout(() => handler(req, res), latencyMs);
      else handler(req, res);
    }
    : handler;
  const server = http.createServer({ keepAliveTimeout: 30_000 }, listener);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/**
 * Busy until this process has used `us` more microseconds of CPU: counted in
 * CPU time, not wall time, so that a busy machine does not shorten it.
 * @param {number} us
 */
export function spendCpu(us) {
  const start = process.cpuUsage();
  for (let i = 0; i < 1e9; i++) {
    const used = process.cpuUsage(start);
    if (used.user + used.system >= us) return;
  }
}

const USAGE = `usage: node bench/origin.js --products 20000 --port 0 [--count 1000] [--workers 1] [--latency-ms 50] [--cpu-us 2000]
The benchmark origin: an XBuilder-style shop in its own process. Prints its
origin URL (http://127.0.0.1:PORT) as the first line on stdout, then serves
until SIGTERM/SIGINT:
  /st/dir.asp[?Start=S&Count=C]   C product links (default 1000); the last
                                  link is dir.asp?Start=S+C&Count=C
  /st/product.asp?SKUSetID=N      a ~15 KB product page, XBuilder-FileName: productN.htm
  /st/cart.asp, checkout.asp, search.asp, ...  small dynamic pages (out of the crawl's scope)
Options:
  --products N     products in the shop (default 20000)
  --port N         port to listen on, 0 for a free one (default 0)
  --host HOST      address to listen on (default 127.0.0.1)
  --count N        product links per dir.asp page (default 1000)
  --workers N      processes sharing the port (node:cluster; default 1)
  --latency-ms N   every answer waits N ms first (a remote origin; default 0)
  --cpu-us N       every request first spends N microseconds of CPU (a known cost per page; default 0)
  --changed P      P % of the product pages differ from the default (re-crawl churn; default 0)
  --etag           send ETags and answer a matching If-None-Match with 304`;

async function main() {
  const { values } = parseBenchArgs('origin', {
    products: { type: 'string', default: '20000' },
    count: { type: 'string', default: '1000' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    workers: { type: 'string', default: '1' },
    changed: { type: 'string', default: '0' },
    etag: { type: 'boolean', default: false },
    'latency-ms': { type: 'string', default: '0' },
    'cpu-us': { type: 'string', default: '0' },
  }, USAGE);
  const products = Number(values.products);
  const count = Number(values.count);
  const port = Number(values.port);
  const workers = Number(values.workers);
  const latencyMs = Number(values['latency-ms']);
  const cpuUs = Number(values['cpu-us']);
  for (const [name, value, min] of /** @type {[string, number, number][]} */ ([['products', products, 1], ['count', count, 1], ['port', port, 0], ['workers', workers, 1], ['latency-ms', latencyMs, 0], ['cpu-us', cpuUs, 0]])) {
    if (!Number.isInteger(value) || value < min) {
      process.stderr.write(`origin: --${name} must be a whole number >= ${min}\n`);
      process.exitCode = 2;
      return;
    }
  }
  const options = { products, count, port, host: /** @type {string} */ (values.host), changed: Number(values.changed), etag: values.etag === true, latencyMs, cpuUs };

  if (workers === 1) {
    const server = await startOrigin(options);
    const address = /** @type {import('node:net').AddressInfo} */ (server.address());
    process.stdout.write(`http://${options.host}:${address.port}\n`);
    const stop = () => { server.closeAllConnections(); server.close(); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    return;
  }

  if (cluster.isPrimary) {
    // Workers share one listening port; the primary only prints it.
    let printed = false;
    for (let i = 0; i < workers; i++) cluster.fork();
    cluster.on('listening', (_worker, address) => {
      if (!printed) {
        printed = true;
        process.stdout.write(`http://${options.host}:${address.port}\n`);
      }
    });
    // The primary ends once its workers have: each one's IPC channel would keep it alive otherwise.
    const stop = () => {
      const alive = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
      if (alive.length === 0) process.exit(0);
      cluster.on('exit', () => { if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0); });
      for (const worker of alive) worker.kill('SIGTERM');
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  } else {
    const server = await startOrigin(options);
    // A worker's IPC channel to the primary keeps it alive: it exits once its server has closed.
    process.on('SIGTERM', () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
    process.on('SIGINT', () => {}); // the primary passes Ctrl-C on as SIGTERM
  }
}

if (process.argv[1] && import.meta.url === (await import('node:url')).pathToFileURL(process.argv[1]).href) {
  await main();
}
