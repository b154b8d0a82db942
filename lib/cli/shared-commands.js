// @ts-check
import { Option } from 'commander';
import { AbortError, UsageError } from '../errors.js';
import { explainError, redact } from './report.js';
import { boundCrawlHeap } from '../runtime/heap.js';
import { frontierUrlError } from '../options/frontier-url.js';
import { EXIT } from './exit-codes.js';

/** `prerender worker` and `prerender status` of a shared crawl; ioredis is imported only when one of them runs. */

/** @param {string | undefined} value @param {string} flag @param {number} min @param {number} max */
function integer(value, flag, min, max) {
  if (value === undefined) return undefined;
  const number = /^\d+$/.test(String(value)) ? Number(value) : NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return number;
}

/** @param {Record<string, any>} flags @param {{ env?: Record<string, string | undefined> }} io */
function frontierOf(flags, io) {
  const url = flags.frontier ?? io.env?.REDIS_URL;
  if (!url) throw new UsageError('give --frontier <redis-url> (or set REDIS_URL)');
  const refused = frontierUrlError(url, flags.frontier === undefined ? 'REDIS_URL (for --frontier)' : '--frontier');
  if (refused) throw new UsageError(refused);
  if (!flags.crawlId || !/^[A-Za-z0-9._-]{1,100}$/.test(flags.crawlId)) throw new UsageError('give --crawl-id <id> (letters, digits, ".", "_" and "-")');
  return url;
}

/**
 * --frontier and --crawl-id, else the config file's, else REDIS_URL for the frontier: as `crawl` takes them.
 * @param {Record<string, any>} flags @param {import('./index.js').Io} io
 */
async function sharedFlags(flags, io) {
  if (flags.frontier !== undefined && flags.crawlId !== undefined && flags.config === undefined) return flags;
  const { findConfig, loadConfigFile } = await import('../options/config-file.js');
  const file = await findConfig({ cwd: io.cwd ?? process.cwd(), file: flags.config });
  const fromFile = file ? await loadConfigFile(file) : {};
  return { ...flags, frontier: flags.frontier ?? fromFile.frontier, crawlId: flags.crawlId ?? fromFile.crawlId };
}

/** @param {import('commander').Command} program @param {import('./index.js').Io} io @param {(code: number) => void} setExitCode */
export function addDistributedCommands(program, io, setExitCode) {
  program
    .command('worker')
    .description('join a shared crawl (started by "crawl --frontier … --crawl-id …"): fetch leased URLs until nothing is left')
    .addOption(new Option('--frontier <url>', 'the crawl\'s Redis: redis://[user:pass@]host:port/db or rediss:// (default: REDIS_URL)'))
    .addOption(new Option('--crawl-id <id>', 'the shared crawl to join'))
    .option('-c, --concurrency <n>', 'requests in flight at once in this process (default: 8)')
    .option('--threads <n>', 'worker threads for the per-page work in this process; 0 does it in the main thread (default: one per CPU core)')
    .option('--render-concurrency <n>', 'when the crawl renders (--render): pages rendered at once in this process (default: 8 when networkidle is awaited, else one per CPU core, 2 to 16)')
    .option('--browser <path>', 'when the crawl renders: the Chromium or Chrome of this machine (default: PUPPETEER_EXECUTABLE_PATH, CHROME_PATH, then chromium-headless-shell, chrome-headless-shell, chromium, chromium-browser, google-chrome on the PATH)')
    .option('--browser-endpoint <url>', 'when the crawl renders: a browser that already runs, at its DevTools address (ws://host:port/devtools/browser/<id>, or http://host:port), instead of one started here')
    .option('--blobs <dir>', 'the shared blob directory as mounted here (default: the one the crawl was started with)')
    .option('--wait <s>', 'wait this long for a crawl id that does not exist yet (default: 60)')
    .option('--frontier-timeout <s>', 'keep retrying this long while Redis is unreachable, then exit 2 (default: 60)')
    .option('-q, --quiet', 'print nothing but errors')
    .option('--config <file>', 'take --frontier and --crawl-id from this config file (default: prerender.config.js, .mjs or .json in the working directory, when there is one)')
    .addHelpText('after', `
Everything else (roots, scope, limits, --rate, --origin-concurrency, and with
--render how pages are rendered and awaited) comes from the configuration
stored under the crawl id. A worker of a crawl started with --render renders
the pages it takes in its own headless Chromium (a browser it cannot find is
exit 2 before it takes anything). A worker of another prerender
version refuses to join. Once nothing is left to fetch, the worker helps write
the tree (rewriting pages in buckets the coordinator hands out when that
adds cores: some process runs on another machine, named by PRERENDER_HOST or
the host name, or the coordinator runs fewer threads than its cores) until the
crawl is finished, or the coordinator is gone; the blob directory and OUT must be
the coordinator's (a shared mount, at the same path). Exit status: 0 done,
2 usage error, Redis unreachable past --frontier-timeout, the crawl's state
lost, or the blob directory or OUT not shared, 130 interrupted.`)
    .action(async (flags) => {
      setExitCode(await workerAction(flags, io));
    });

  program
    .command('status')
    .description('show a shared crawl: phase, queued, leased, done, failed, workers alive, pages/s, top errors')
    .addOption(new Option('--frontier <url>', 'the crawl\'s Redis (default: REDIS_URL)'))
    .addOption(new Option('--crawl-id <id>', 'the shared crawl'))
    .option('--json', 'one JSON object (with --watch: one per line)')
    .option('--watch', 'print again every 2 s until the crawl is finished (Ctrl-C stops)')
    .option('--config <file>', 'take --frontier and --crawl-id from this config file (default: prerender.config.js, .mjs or .json in the working directory, when there is one)')
    .action(async (given) => {
      try {
        const flags = await sharedFlags(given, io);
        const { statusCommand } = await import('../distributed/status.js');
        setExitCode(await statusCommand({ frontier: frontierOf(flags, io), crawlId: flags.crawlId, json: flags.json, watch: flags.watch, signal: io.signal }, io.stdout));
      } catch (error) {
        io.stderr.write(`prerender: ${explainError(error)}\n`);
        if (given.json) {
          const err = /** @type {{ code?: unknown, message?: unknown }} */ (error);
          io.stdout.write(JSON.stringify({ error: { code: typeof err?.code === 'string' ? err.code : 'ERROR', message: redact(String(err?.message ?? error)) } }) + '\n');
        }
        setExitCode(EXIT.USAGE);
      }
    });
}

/** @param {Record<string, any>} given @param {import('./index.js').Io} io */
async function workerAction(given, io) {
  try {
    const flags = await sharedFlags(given, io);
    const { Worker } = await import('../crawler/worker.js');
    const worker = new Worker({
      frontier: frontierOf(flags, io),
      crawlId: flags.crawlId,
      concurrency: integer(flags.concurrency, '--concurrency', 1, 256),
      renderConcurrency: integer(flags.renderConcurrency, '--render-concurrency', 1, 64),
      threads: integer(flags.threads, '--threads', 0, 64),
      browser: flags.browser,
      browserEndpoint: flags.browserEndpoint,
      env: io.env,
      wait: integer(flags.wait, '--wait', 0, 86_400),
      frontierTimeout: integer(flags.frontierTimeout, '--frontier-timeout', 1, 86_400),
      blobs: flags.blobs,
      signal: io.signal,
    });
    // As for a crawl: a long-running worker keeps its resident memory near what is live (heap.js).
    const unboundHeap = boundCrawlHeap(worker.stats);
    let result;
    try {
      result = await worker.run();
    } finally {
      unboundHeap();
    }
    if (!flags.quiet) io.stdout.write(`worker: ${result.pages} pages fetched${result.rendered ? ` (${result.rendered} rendered)` : ''}, ${result.failed} failed, ${result.rewritten} rewritten and written${result.lateResults ? `, ${result.lateResults} late results ignored` : ''}\n`);
    return result.interrupted ? EXIT.INTERRUPTED : EXIT.OK;
  } catch (error) {
    if (error instanceof AbortError) return EXIT.INTERRUPTED; // Ctrl-C before it took anything
    io.stderr.write(`prerender: ${explainError(error)}\n`);
    return EXIT.USAGE;
  }
}
