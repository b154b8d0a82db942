// @ts-check
/**
 * The XBuilder-style catalogue shop: `prerender demo` runs it, and the test
 * suite's fixture (fixtures/shop.js) is this shop plus routes of its own.
 *
 * /st/dir.asp lists products `count` at a time and links to its next page;
 * /st/product.asp?SKUSetID=N names itself with XBuilder-FileName: productN.htm
 * (odd N use the X-Builder-FileName spelling); cart, checkout and search are
 * dynamic. /st/cart.asp?add=N (or a POST of add=N) keeps the cart in a
 * cookie; POST /st/login.asp (user=NAME) sets a session cookie and answers 303
 * to the checkout; POST /st/checkout.asp places a signed-in visitor's order.
 * /st/old.asp answers 301 to the catalogue. /st/price.asp?sku=SKU-N&zip=Z is
 * the price endpoint: the price of SKU-N for zip Z, as text. POST /st/zip.asp
 * (zip=Z) keeps the visitor's zip in a cookie and answers 303 to the Referer.
 *
 * With `demo`, a person browses it: `/` leads to the catalogue, a product
 * page has buttons that POST to the cart and ask the price for a zip, and its
 * price is the visitor's (the zip cookie or parameter).
 */
import http from 'node:http';
import { once } from 'node:events';

/** The catalogue's paths: the demo's crawl scope, and its root's path. */
export const SHOP_PATHS = Object.freeze({ root: '/st/dir.asp', scope: ['/st/dir.asp', '/st/product.asp'] });

/**
 * @typedef {{ products: number, count: number, demo: boolean }} ShopOptions
 * @typedef {Record<string, string>} Cookies
 */

/**
 * The price of product `n` for a zip: its list price, plus 25 cents per unit
 * of the zip's first digit (a shipping zone); no zip, the list price.
 * @param {number} n
 * @param {string | null} [zip]
 */
export function shopPrice(n, zip) {
  const zone = zip && /^\d/.test(zip) ? Number(zip[0]) : 0;
  return `$${(n + 0.99 + zone * 0.25).toFixed(2)}`;
}

/** @param {string | undefined} header @returns {Cookies} */
export function parseCookies(header) {
  return Object.fromEntries(String(header ?? '').split(/;\s*/).filter((c) => c.includes('=')).map((c) => [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)]));
}

/**
 * @param {http.ServerResponse} res
 * @param {number} status @param {string} body @param {Record<string, string | string[]>} [headers]
 */
export function sendHtml(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers });
  res.end(body);
}

/**
 * A request's form body, read whole (the shop's forms are a few bytes; more is cut at 64 KiB).
 * @param {http.IncomingMessage} req
 * @returns {Promise<URLSearchParams>}
 */
async function formBody(req) {
  let body = '';
  req.setEncoding('utf8');
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 65_536) break;
  }
  return new URLSearchParams(body);
}

/**
 * Answers the shop's own routes; false when the path is none of them.
 * @param {ShopOptions} options
 * @param {http.IncomingMessage} req @param {http.ServerResponse} res @param {URL} url
 * @returns {boolean}
 */
export function handleShopRequest(options, req, res, url) {
  const cookies = parseCookies(req.headers.cookie);
  const send = (/** @type {number} */ status, /** @type {string} */ body, /** @type {Record<string, string | string[]>} */ headers = {}) => sendHtml(res, status, body, headers);
  switch (url.pathname) {
    case '/st/dir.asp':
      send(200, cataloguePage(options, url));
      return true;
    case '/st/product.asp': {
      const n = Number(url.searchParams.get('SKUSetID'));
      if (!Number.isInteger(n) || n < 1 || n > options.products) send(404, 'no such product');
      else send(200, productPage(options, n, url.searchParams.get('zip') ?? cookies.zip ?? null), { [n % 2 === 0 ? 'XBuilder-FileName' : 'X-Builder-FileName']: `product${n}.htm` });
      return true;
    }
    case '/st/cart.asp':
      if (req.method === 'POST') void formBody(req).then((form) => cart(res, cookies, form.get('add')));
      else cart(res, cookies, url.searchParams.get('add'));
      return true;
    case '/st/login.asp':
      if (req.method !== 'POST') send(200, '<html><body>dynamic /st/login.asp <form method="post" action="login.asp"><input name="user"><button>Sign in</button></form></body></html>');
      else {
        void formBody(req).then((form) => {
          const user = form.get('user') ?? '';
          if (!/^\w{1,20}$/.test(user)) return send(403, 'bad user');
          res.writeHead(303, { location: '/st/checkout.asp', 'set-cookie': [`session=u-${user}; Path=/; HttpOnly`, 'seen=1; Path=/'], 'content-length': 0 });
          res.end();
        });
      }
      return true;
    case '/st/checkout.asp': {
      const user = cookies.session?.startsWith('u-') ? cookies.session.slice(2) : null;
      const items = cookies.cart ? cookies.cart.split('.').length : 0;
      if (req.method === 'POST') {
        req.resume();
        req.on('end', () => (user ? send(200, `<html><body>order placed for ${user}: ${items} item(s)</body></html>`) : send(401, 'sign in first')));
      } else send(200, `<html><body>dynamic /st/checkout.asp ${user ? `signed in as ${user}` : 'not signed in'}, ${items} item(s)</body></html>`);
      return true;
    }
    case '/st/search.asp':
      send(200, `<html><body>dynamic ${url.pathname}</body></html>`);
      return true;
    case '/st/zip.asp':
      // The visitor's zip in a cookie, then back to the page the form was on (its path only).
      void formBody(req).then((form) => {
        const zip = (form.get('zip') ?? '').trim();
        let back = SHOP_PATHS.root;
        try {
          const referer = new URL(String(req.headers.referer));
          if (!referer.pathname.startsWith('//')) back = referer.pathname + referer.search; // never another host
        } catch { /* no referer: the catalogue */ }
        const cookie = /^[A-Za-z0-9 -]{3,10}$/.test(zip) ? `zip=${encodeURIComponent(zip)}; Path=/` : 'zip=; Path=/; Max-Age=0';
        res.writeHead(303, { location: back, 'set-cookie': cookie, 'content-length': 0 });
        res.end();
      });
      return true;
    case '/st/old.asp':
      res.writeHead(301, { location: '/st/dir.asp', 'content-length': 0 });
      res.end();
      return true;
    case '/st/price.asp': {
      const n = Number(/^SKU-(\d+)$/.exec(url.searchParams.get('sku') ?? '')?.[1] ?? NaN);
      if (!(n >= 1 && n <= options.products)) send(404, 'unknown sku', { 'content-type': 'text/plain' });
      else send(200, shopPrice(n, url.searchParams.get('zip')), { 'content-type': 'text/plain; charset=utf-8' });
      return true;
    }
    case '/':
      if (!options.demo) return false;
      res.writeHead(302, { location: SHOP_PATHS.root, 'content-length': 0 });
      res.end();
      return true;
    default:
      return false;
  }
}

/** @param {ShopOptions} options @param {URL} url */
function cataloguePage({ products, count }, url) {
  const start = Number(url.searchParams.get('Start') ?? 1);
  const size = Number(url.searchParams.get('Count') ?? count);
  const last = Math.min(products, start + size - 1);
  let body = '<!DOCTYPE html><html><head><title>Catalogue</title></head><body><ul>\n';
  for (let n = start; n <= last; n++) body += `<li><a href="product.asp?SKUSetID=${n}">Product ${n}</a></li>\n`;
  body += '</ul>';
  if (last < products) body += `<a href="dir.asp?Start=${last + 1}&amp;Count=${size}">next</a>`;
  return body + '<a href="/st/cart.asp">cart</a> <form action="search.asp"><input name="q"></form></body></html>\n';
}

/** @param {ShopOptions} options @param {number} n @param {string | null} zip the visitor's, in demo mode */
function productPage({ products, demo }, n, zip) {
  const next = n < products ? `<a href="product.asp?SKUSetID=${n + 1}">next</a>` : '';
  const prev = n > 1 ? `<a href="/st/product.asp?SKUSetID=${n - 1}#top">previous</a>` : '';
  // The demo's forms, both the live shop's: the cart, and the zip kept in a cookie (the price filter reads it).
  const forms = demo
    ? `<form method="post" action="cart.asp"><input type="hidden" name="add" value="${n}"><button>Add to cart</button></form>
<form method="post" action="zip.asp"><label>Your zip <input name="zip" size="6"></label> <button>Show my price</button></form>
`
    : '';
  return `<!DOCTYPE html><html><head><title>Product ${n}</title></head><body id="top">
<h1>Product ${n}</h1>
<p>Price: <span data-price-sku="SKU-${n}">${shopPrice(n, demo ? zip : null)}</span></p>
${forms}<a href="cart.asp?add=${n}&amp;qty=1">add to cart</a>
<a href="/st/checkout.asp">checkout</a>
<form action="search.asp" method="get"><input name="q"></form>
<a href="dir.asp">catalogue</a> ${prev} ${next}
</body></html>
`;
}

/** @param {http.ServerResponse} res @param {Cookies} cookies @param {string | null} add */
function cart(res, cookies, add) {
  const items = [...(cookies.cart ? cookies.cart.split('.') : []), ...(add && /^\d+$/.test(add) ? [add] : [])];
  sendHtml(res, 200, `<html><body>dynamic /st/cart.asp <h1>Your cart</h1><p id="cart">${items.map((n) => `Product ${n}`).join(', ') || 'empty'}</p><a href="/st/checkout.asp">checkout</a></body></html>`,
    add ? { 'set-cookie': `cart=${items.join('.')}; Path=/` } : {});
}

/**
 * The demo's shop on its own server, until `close()`.
 * @param {{ products?: number, count?: number, host?: string, port?: number }} [options]
 * @returns {Promise<{ origin: string, url: string, priceTemplate: string, close: () => Promise<void> }>}
 */
export async function startDemoShop({ products = 25, count = 10, host = '127.0.0.1', port = 0 } = {}) {
  const options = { products, count, demo: true };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://shop.invalid');
    if (!handleShopRequest(options, req, res, url)) sendHtml(res, 404, '<html><body>not found</body></html>');
  });
  server.listen(port, host);
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error))]);
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  const origin = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  return {
    origin,
    url: `${origin}${SHOP_PATHS.root}`,
    priceTemplate: `${origin}/st/price.asp?sku={sku}&zip={zip}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
