// @ts-check
import { once } from 'node:events';
import { UsageError } from '../errors.js';
import { EXIT } from './exit-codes.js';
import { formatSummary } from './report.js';

/**
 * `prerender demo`: a thin shell over lib/demo/ (the Demo steps), printing what each did and what to try.
 * @typedef {import('./index.js').Io} Io
 */

/**
 * @param {import('commander').Command} program
 * @param {Io} io
 * @param {(code: number) => void} setExitCode
 */
export function addDemoCommand(program, io, setExitCode) {
  program
    .command('demo')
    .description('a first run with no site of your own: crawl a demo shop, then serve the tree in front of it with prices filled')
    .option('-p, --port <port>', 'the front\'s port (0 picks a free one) (default: 8080)')
    .option('-o, --out <dir>', 'where the tree is written: absent, empty, or an earlier demo\'s (default: prerender-demo)')
    .option('--no-serve', 'crawl the shop, print the command, and exit')
    .addHelpText('after', `
The demo starts a small XBuilder-style catalogue shop on 127.0.0.1: a
self-paginated /st/dir.asp, product pages named by their X-Builder-FileName
header, a cart, a checkout, and a price endpoint with prices by zip code.

It crawls the shop into OUT with the same code as "prerender crawl", and
prints that command. It then serves OUT in front of the live shop, as
"prerender serve OUT --origin" does, and prints what to open: a product
page, the cart, a price by zip. Run the printed commands against your own
site next.

Ctrl-C stops the front and the shop. Exit status: 0 with --no-serve, the
crawl whole; 1 the crawl failed pages; 2 usage error, or OUT holds files that
are not an earlier demo's (DEMO_OUT_IN_USE); 130 interrupted, the way a
served demo always ends. More: docs/demo.md.`)
    .action(async (flags) => {
      setExitCode(await demoAction(flags, io));
    });
}

/**
 * @param {{ port?: string, out?: string, serve: boolean }} flags
 * @param {Io} io
 */
async function demoAction(flags, io) {
  const port = flags.port === undefined ? undefined : /^\d{1,5}$/.test(flags.port) ? Number(flags.port) : NaN;
  if (Number.isNaN(port)) throw new UsageError(`--port must be a whole number from 0 to 65535, got ${JSON.stringify(flags.port)}`);
  const { Demo } = await import('../demo/index.js');
  const logger = { warn: (/** @type {string} */ m) => void io.stderr.write(`prerender demo: ${m}\n`) };
  const demo = new Demo({ port, out: flags.out, cwd: io.cwd, signal: io.signal, logger });
  const say = (/** @type {string} */ text) => io.stdout.write(text);
  try {
    if (flags.serve) await demo.checkPort();
    const shop = await demo.startShop();
    say(`The demo shop runs at ${shop.origin}/ (the live site: catalogue, cart, checkout, prices).\n`);
    say(`Crawling it with:\n  prerender ${shellWords(demo.crawlPlan().argv)}\n\n`);
    const result = await demo.crawl();
    say(formatSummary(result));
    if (result.interrupted) return EXIT.INTERRUPTED;
    if (result.failed > 0 || !result.complete) return EXIT.PAGES_FAILED;
    if (!flags.serve) return EXIT.OK;
    const url = await demo.serve();
    say(guide(url, await demo.links(), demo));
    if (io.signal) {
      if (!io.signal.aborted) await once(io.signal, 'abort');
    } else {
      await new Promise(() => {}); // served until the process ends
    }
    io.stderr.write('prerender demo: stopping the front and the shop\n');
    return EXIT.INTERRUPTED;
  } catch (error) {
    // Ctrl-C before the crawl fetched anything: nothing to serve.
    if (/** @type {{ code?: string }} */ (error)?.code === 'ABORTED') return EXIT.INTERRUPTED;
    throw error;
  } finally {
    await demo.close();
  }
}

/**
 * What to open and what to try, then the commands to run against one's own site.
 * @param {string} url the front
 * @param {import('../demo/index.js').DemoLinks} links
 * @param {import('../demo/index.js').Demo} demo
 */
function guide(url, links, demo) {
  const [plain, first, second] = links.prices;
  const shop = /** @type {{ origin: string }} */ (demo.shop);
  return `
The tree is served in front of the shop at ${url}/
Open:
  ${links.catalogue}
      the catalogue, from the tree; its links lead to the product files
  ${links.product}
      a product page: the file ${links.productFile}, named by the shop's X-Builder-FileName header
  ${links.productWithZip}
      its price for zip ${first.zip}: ${first.price} (${plain.price} with no zip); the page's "Show my price" keeps a zip in a cookie
Try:
  "Add to cart" on a product page POSTs to /st/cart.asp: the front passes it to the live shop.
  curl -i -d add=3 ${links.cart}
  curl -s --cookie zip=${second.zip} ${links.product} | grep Price     # ${second.price}
The demo ran these commands; run them with your own site's URLs:
  prerender ${shellWords(demo.crawlPlan().argv)}
  prerender ${shellWords(demo.servePlan().argv)}
(the shop at ${shop.origin} lives as long as the demo). Ctrl-C stops.
`;
}

/**
 * Arguments as a shell reads them back: single-quoted when they hold anything but safe characters.
 * @param {string[]} argv
 */
export function shellWords(argv) {
  return argv.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`)).join(' ');
}
