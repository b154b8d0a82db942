// @ts-check
import path from 'node:path';
import { coerceOption } from '../options/crawl-options.js';
import { UsageError } from '../errors.js';
import { EXIT } from './exit-codes.js';

/** `serve` and `front`: the tree served alone or in front of the live site (docs/front.md). @typedef {import('./index.js').Io} Io */

/** @param {import('commander').Command} program @param {Io} io @param {(code: number) => void} setExitCode */
export function addServeCommands(program, io, setExitCode) {
  addServe(program, io, setExitCode);
  addFront(program, io, setExitCode);
}

/** @param {import('commander').Command} program @param {Io} io @param {(code: number) => void} setExitCode */
function addServe(program, io, setExitCode) {
  program
    .command('serve')
    .description('serve a prerendered tree, filling price placeholders per visitor')
    .argument('<dir>', 'the tree written by "prerender crawl"')
    .option('-p, --port <port>', 'port to listen on (0 picks a free one) (default: 8080)')
    .option('--host <host>', 'address to listen on (default: 127.0.0.1)')
    .option('--prices <source>', 'price source: a .json or .csv file, or an http(s) URL template with {sku} and {zip}')
    .option('--zip-param <name>', 'query parameter holding the zip code (default: zip)')
    .option('--zip-cookie <name>', 'cookie holding the zip code (default: zip)')
    .option('--default-zip <zip>', 'zip code to assume when the visitor gives none')
    .option('--fallback <text>', 'text shown when no price is known or the price source is down')
    .option('--cache-bytes <n>', 'memory for cached pages and files, all their compressed forms counted (k/m/g suffix allowed) (default: 512m)')
    .option('--max-rss <n>', 'resident memory the server keeps under by holding fewer cached pages when the rest of the process grows; "off" for no bound (k/m/g suffix allowed) (default: --cache-bytes + 96m, so that the process stays under --cache-bytes + 150m)')
    .option('--drain-timeout <ms>', 'on SIGTERM/SIGINT, how long requests in flight may take to finish before the server exits; a second signal exits at once (default: 10000)')
    // In front of the live site (lib/front/, docs/front.md).
    .option('--origin <url>', 'the live site: what the tree does not hold (cart, checkout, search, POSTs) is proxied there, e.g. http://127.0.0.1:8000')
    .option('--origin-host <host>', 'Host header sent to the origin (default: the host of --origin)')
    .option('--dynamic <pattern>', 'URL pattern always sent to the origin, even if the tree holds it (repeatable; as --include)', (value, list) => [...(list ?? []), value])
    .option('--trust-proxy', 'take X-Forwarded-For/-Proto/-Host from the client (only behind a proxy of your own)')
    .option('--route-header', 'without --origin: answer what the tree does not hold with 404 and X-Prerender-Route: origin (the tree backend of "prerender front --varnish")')
    .option('--origin-timeout <ms>', 'how long the origin may take to send its headers, then between chunks of its body; beyond: 504 (default: 30000)')
    .option('--origin-connect-timeout <ms>', 'how long connecting to the origin may take; beyond: 504 (default: 5000)')
    .option('--origin-connections <n>', 'requests to the origin at once, over kept-alive connections; more wait (default: 64)')
    .addHelpText('after', `
Prices: --prices prices.json | prices.csv | 'http://shop/price.asp?sku={sku}&zip={zip}'
(one SKU per request) | 'http://shop/prices.asp?skus={skus}&zip={zip}' (many SKUs per
request, a JSON object by SKU back: use it when the endpoint can).
Stopping: SIGTERM or Ctrl-C stops accepting connections, lets requests in flight
finish (at most --drain-timeout), then exits 0; a second signal exits at once.`)
    .action(async (dir, flags) => {
      const { runServeCommand } = await import('../serve/index.js');
      const { cacheBytes, maxRss, drainTimeout, originTimeout, originConnectTimeout, originConnections, ...options } = flags;
      originLimits(options, { originTimeout, originConnectTimeout, originConnections });
      if (cacheBytes !== undefined) options.pageCacheBytes = coerceOption({ name: 'pageCacheBytes', flags: '--cache-bytes <n>', type: 'bytes', min: 1024 * 1024, description: '' }, cacheBytes);
      if (maxRss !== undefined) options.maxRssBytes = /^off$/i.test(maxRss) ? null : coerceOption({ name: 'maxRssBytes', flags: '--max-rss <n>', type: 'bytes', min: 1024 * 1024, description: '' }, maxRss);
      if (drainTimeout !== undefined) options.drainTimeoutMs = coerceOption({ name: 'drainTimeoutMs', flags: '--drain-timeout <ms>', type: 'integer', min: 0, description: '' }, drainTimeout);
      if (options.port !== undefined) {
        // Digits only: "" (an empty $PORT) is not 0, nor "0x1F90" 8080.
        const port = /^\d{1,5}$/.test(String(options.port)) ? Number(options.port) : NaN;
        if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a whole number from 0 to 65535, got ${JSON.stringify(options.port)}`);
        options.port = port;
      }
      await runServeCommand(dir, options, { stdout: io.stdout, stderr: io.stderr, signal: io.signal ?? new AbortController().signal });
      setExitCode(EXIT.OK);
    });
}

/** @param {import('commander').Command} program @param {Io} io @param {(code: number) => void} setExitCode */
function addFront(program, io, setExitCode) {
  program
    .command('front')
    .description('write the nginx or Varnish configuration that serves the tree in front of the live site (docs/front.md)')
    .argument('<dir>', 'the tree written by "prerender crawl"')
    .option('--nginx', 'write an nginx server {} (OUT/prerender-front.nginx.conf)')
    .option('--varnish', 'write a VCL (OUT/prerender-front.vcl)')
    .option('--output <file>', 'write there instead of into OUT (with --nginx or --varnish)')
    .option('--origin <url>', 'the live site, e.g. http://127.0.0.1:8000')
    .option('--origin-host <host>', 'Host header sent to the origin (default: the host of --origin)')
    .option('--dynamic <pattern>', 'URL pattern always sent to the origin (repeatable; as --include)', (value, list) => [...(list ?? []), value])
    .option('--trust-proxy', 'take X-Forwarded-For/-Proto/-Host from the client (only behind a proxy of your own)')
    .option('--listen <port>', 'nginx: what to listen on (default: 8080)')
    .option('--root <dir>', 'nginx: the tree as nginx finds it, e.g. /srv/prerender/current (default: DIR)')
    .option('--price-cache <dir>', 'nginx, SSI trees: the price cache directory (default: /var/cache/nginx/prerender-prices)')
    .option('--price-endpoint <host:port>', 'SSI/ESI trees: the shop\'s price endpoint (default: on the origin); its path is in the price location, as in templates/')
    .option('--tree <host:port>', 'varnish: where "prerender serve DIR --route-header" listens (default: 127.0.0.1:8081)')
    .option('--origin-timeout <ms>', 'for the origin\'s headers, then between body chunks (default: 30000)')
    .option('--origin-connect-timeout <ms>', 'for connecting to the origin (default: 5000)')
    .option('--origin-connections <n>', 'requests to the origin at once (default: 64)')
    .action(async (dir, flags) => {
      const { runFrontCommand } = await import('../front/command.js');
      const { originTimeout, originConnectTimeout, originConnections, ...options } = flags;
      originLimits(options, { originTimeout, originConnectTimeout, originConnections });
      await runFrontCommand(path.resolve(io.cwd ?? process.cwd(), dir), options, io);
      setExitCode(EXIT.OK);
    });
}

/** Given as flags, checked as options. @param {Record<string, unknown>} options @param {{ originTimeout?: string, originConnectTimeout?: string, originConnections?: string }} flags */
function originLimits(options, { originTimeout, originConnectTimeout, originConnections }) {
  if (originTimeout !== undefined) options.originTimeoutMs = coerceOption({ name: 'originTimeoutMs', flags: '--origin-timeout <ms>', type: 'integer', min: 1, description: '' }, originTimeout);
  if (originConnectTimeout !== undefined) options.originConnectTimeoutMs = coerceOption({ name: 'originConnectTimeoutMs', flags: '--origin-connect-timeout <ms>', type: 'integer', min: 1, description: '' }, originConnectTimeout);
  if (originConnections !== undefined) options.originConnections = coerceOption({ name: 'originConnections', flags: '--origin-connections <n>', type: 'integer', min: 1, description: '' }, originConnections);
}
