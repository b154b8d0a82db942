// @ts-check
/**
 * The front's tests: the fixture shop crawled as the front serves it, and a
 * small HTTP client that sends bodies and keeps every Set-Cookie.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { crawl } from '../../lib/crawler/index.js';

/** The price of every product's slot in the front tests. */
export const FRONT_PRICES = Object.fromEntries([1, 2, 3, 4, 5].map((n) => [`SKU-${n}`, { '*': `$${n}.50` }]));

/**
 * Crawls the shop's catalogue and products, and /st/old.asp (a 301), into `out`.
 * @param {{ url: string, origin: string }} shop
 * @param {string} out
 * @param {{ placeholders?: 'filter' | 'ssi' | 'esi' }} [options]
 */
export async function crawlShopForFront(shop, out, { placeholders = 'filter' } = {}) {
  await crawl({ roots: [shop.url, `${shop.origin}/st/old.asp`], out, placeholders, include: ['/st/dir.asp', '/st/product.asp', '/st/old.asp'] });
  const manifest = JSON.parse(fs.readFileSync(path.join(out, 'prerender-manifest.json'), 'utf8'));
  if (!manifest.redirects.some((/** @type {{ url: string }} */ r) => r.url.endsWith('/st/old.asp'))) throw new Error('the crawl recorded no redirect for /st/old.asp');
  return manifest;
}

/**
 * @typedef {{ status: number, headers: http.IncomingHttpHeaders, rawHeaders: string[], text: string }} Answer
 */

/**
 * One request, verbatim target, optional body; every header kept.
 * @param {number} port
 * @param {string} target
 * @param {{ method?: string, headers?: Record<string, string | string[]>, body?: string | Buffer, timeoutMs?: number }} [options]
 * @returns {Promise<Answer>}
 */
export function send(port, target, { method = 'GET', headers = {}, body, timeoutMs = 10_000 } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method, headers, agent: false }, (res) => {
      /** @type {Buffer[]} */
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: /** @type {number} */ (res.statusCode), headers: res.headers, rawHeaders: res.rawHeaders, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms for ${target}`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A visitor's cookies: `Set-Cookie` answers kept, sent back as `Cookie`.
 */
export class CookieJar {
  /** @type {Map<string, string>} */
  cookies = new Map();

  /** @param {Answer} answer */
  keep(answer) {
    for (const line of [answer.headers['set-cookie'] ?? []].flat()) {
      const pair = line.split(';')[0];
      this.cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
    }
    return answer;
  }

  get header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/**
 * The text of the first price slot of a shop page.
 * @param {string} html
 */
export function shopPrice(html) {
  return /<span data-price-sku="[^"]*">([^]*?)<\/span>/.exec(html)?.[1];
}
