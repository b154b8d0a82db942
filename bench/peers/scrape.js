#!/usr/bin/env node
// @ts-check
/**
 * website-scraper in a process of its own, so that crawl-bench measures its
 * CPU and memory the way it measures wget's and HTTrack's:
 *
 *   node bench/peers/scrape.js --url URL --directory DIR --concurrency N --accept REGEX
 *
 * follows links (recursive) to the URLs that REGEX matches, and saves them
 * under DIR by site structure; exit 1 on an error. Needs
 * `npm ci --prefix bench/peers` first.
 */
import { parseArgs } from 'node:util';
// @ts-ignore: website-scraper ships no types
import scrape from 'website-scraper';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    directory: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    accept: { type: 'string' },
  },
  strict: true,
});
if (!values.url || !values.directory || !values.accept) {
  process.stderr.write('usage: node bench/peers/scrape.js --url URL --directory DIR --concurrency N --accept REGEX\n');
  process.exit(2);
}
const accept = new RegExp(values.accept);

/** bench/lib/peers.js describes these beside the command. */
const options = {
  urls: [values.url],
  directory: values.directory,
  recursive: true,
  requestConcurrency: Number(values.concurrency),
  // The default, byType, names every product page product_N.asp after a
  // linear search of the names taken: quadratic in the pages.
  filenameGenerator: 'bySiteStructure',
  /** @param {string} url */
  urlFilter: (url) => accept.test(url),
};

try {
  await scrape(options);
} catch (error) {
  process.stderr.write(`website-scraper: ${/** @type {Error} */ (error)?.stack ?? error}\n`);
  process.exitCode = 1;
}
