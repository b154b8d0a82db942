// @ts-check
import { Command, CommanderError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { CRAWL_OPTIONS, OPTION_BY_NAME, coerceOption } from '../options/crawl-options.js';
import { boundCrawlHeap, releaseYoungGeneration } from '../runtime/heap.js';
import { AbortError, UsageError, ConfigError } from '../errors.js';
import { explainError, formatSummary, progressFor, formatPlanRow, formatPlanTotals, formatWhy, redact } from './report.js';
import { findConfig, loadConfigFile, CONFIG_FILES } from '../options/config-file.js';
import { writeFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { addDeployCommands } from './deploy-commands.js';
import { DEPLOY_KEYS } from '../options/deploy-keys.js';
import { addDistributedCommands } from './shared-commands.js';
import { addServeCommands } from './serve-commands.js';
import { EXIT } from './exit-codes.js';
import { addCapacityCommand } from './capacity-commands.js';
import { addDemoCommand } from './demo-command.js';
import { PER_SHAPE } from '../engine/sample.js';

/**
 * The command line, a thin shell over the library. `run()` never exits the process; it resolves with
 * the exit code: 0 all written, 1 pages failed, 2 usage/config error or crash, 130 interrupted.
 */

export { EXIT } from './exit-codes.js';

/**
 * @typedef {{ stdout: NodeJS.WritableStream & { isTTY?: boolean, columns?: number }, stderr: NodeJS.WritableStream & { isTTY?: boolean, columns?: number },
 *   env?: Record<string, string | undefined>, stdin?: NodeJS.ReadableStream, signal?: AbortSignal, cwd?: string, name?: string }} Io
 *   name: what the user typed, `prerender` (the default) or `prerender-static`, for --help's usage lines
 */

const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

/** @param {string[]} argv arguments after the program name @param {Io} io @returns {Promise<number>} */
export async function run(argv, io) {
  let exitCode = /** @type {number} */ (EXIT.OK);
  // --json: a script reads stdout, so a usage error is one JSON object there too (and the line on stderr).
  const end = argv.indexOf('--');
  const json = (end === -1 ? argv : argv.slice(0, end)).includes('--json');
  const jsonError = (/** @type {string} */ code, /** @type {string} */ message) => {
    if (json) io.stdout.write(JSON.stringify({ error: { code, message } }) + '\n');
  };
  const program = buildProgram(io, (code) => { exitCode = code; }, jsonError);
  // commander shows the general help for `prerender nosuch --help`, and exits 0: an unknown command is a usage error.
  const first = argv.find((arg) => !arg.startsWith('-'));
  if (first !== undefined && argv.indexOf(first) === 0 && !program.commands.some((command) => command.name() === first || command.aliases().includes(first)) && first !== 'help') {
    io.stderr.write(`prerender: unknown command '${first}' (see --help)\n`);
    jsonError('USAGE', `unknown command '${first}'`);
    return EXIT.USAGE;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander already printed its message (help, version, unknown option...).
      if (error.code === 'commander.optionMissingArgument' && /'--fresh\b/.test(error.message)) {
        io.stderr.write('prerender: --fresh now takes a pattern and a duration (--fresh /st/product.asp 6h); a shared crawl starts over with --fresh-start\n');
      }
      return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    io.stderr.write(`prerender: ${explainError(error)}\n`);
    const err = /** @type {{ code?: unknown, message?: unknown }} */ (error);
    jsonError(typeof err?.code === 'string' ? err.code : 'ERROR', redact(String(err?.message ?? error)));
    return EXIT.USAGE;
  }
}

/**
 * The commander program, never parsed: what `--help` shows, for the test that compares it with docs/.
 * @param {Io} io
 */
export function helpProgram(io) {
  return buildProgram(io, () => {}, () => {});
}

/**
 * @param {Io} io @param {(code: number) => void} setExitCode
 * @param {(code: string, message: string) => void} jsonError with --json, writes the error object to stdout
 */
function buildProgram(io, setExitCode, jsonError) {
  const program = new Command(io.name ?? 'prerender')
    .description('Turn the most-visited pages of a dynamic site into a static tree; keep cart, checkout and per-visitor prices dynamic.')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => {
        const message = text.replace(/^error: /, '').trimEnd();
        write(`prerender: ${message} (see --help)\n`);
        jsonError('USAGE', message);
      },
    });

  const crawlCommand = program
    .command('crawl')
    .description('crawl the roots and write the static tree and prerender-manifest.json')
    .argument('[root...]', 'root URLs to start from (a site, a directory, or one page); or "roots" in the config file')
    .addHelpText('after', `
Scope: a pattern starting with "/" is a path on the root's origin, otherwise an
absolute URL; it matches as a prefix of the URL (path and query); "*" matches any
run of characters; --exclude wins. Give roots before variadic options.

Exit status: 0 all pages written; 1 some pages failed (the rest are written and
the manifest lists the failures), kept their last good copy (stale), pages gone
were not removed (--prune-max), or --max-pages left in-scope pages out; 2 usage
error, or the output cannot be written (disk full, read-only, another crawl
holds OUT); 130 interrupted. With --json, an error is a JSON object on stdout too.

Re-crawls: a crawl into an OUT that holds a previous crawl's state
(OUT/.prerender/) sends conditional requests, writes only what changed,
removes pages gone after a complete crawl, and resumes a killed crawl.

Rendering (--render): pages built in the browser are rendered in headless
Chromium (never downloaded: --browser, PUPPETEER_EXECUTABLE_PATH, CHROME_PATH,
or chromium/chromium-browser/google-chrome on the PATH; none: exit 2). Each page
is fetched once by prerender and handed to the browser; only GET/HEAD leave it
(a cart POST or beacon is aborted), images/media/fonts and analytics hosts are
aborted. A page not ready within --render-timeout is a failure naming what was
awaited and the requests in flight (or, --on-render-timeout save, kept as
"partial"). <meta name="prerender-status-code"> sets a page's status.

Several machines: --frontier redis://host:6379/0 --crawl-id <id> shares the
crawl through Redis with "prerender worker" processes; this process seeds it,
fetches too, waits until nothing is left anywhere, then writes OUT. Run the
same command again after a crash to resume. --origin-concurrency, --rate and
--delay then hold for all processes together; -c stays per process.

Example (the XBuilder-style catalogue):
  prerender crawl http://shop/st/dir.asp -i /st/dir.asp /st/product.asp -o out
  prerender crawl http://shop/st/dir.asp -i /st/dir.asp /st/product.asp -o out \\
      --render --render-wait 'selector:[data-ready]'`);
  addCrawlOptions(crawlCommand);
  crawlCommand.addOption(configOption());
  crawlCommand.action(async (roots, flags) => {
    setExitCode(await crawlAction(await withConfig(roots, flags, io), io));
  });

  const previewCommand = program
    .command('preview')
    .description('show what a crawl would do (every URL, its decision, its file, and why) without writing anything')
    .argument('[root...]', 'root URLs, as for crawl')
    .option('--limit <n>', 'stop after n in-scope pages (a quick look at a big site)')
    .option('--why <url>', 'explain the decision for one URL (which pattern, which root) and the file it would get')
    .option('--sample <n>', `plan from the roots and at most n more pages, ${PER_SHAPE} of each URL shape (gitweb's a=commit, a directory): the other in-scope URLs are planned from their URL, not fetched`)
    .addHelpText('after', `
Decisions: crawl (in scope: fetched and written), dynamic (out of scope: the link
is kept live), excluded (matched an --exclude pattern), failed (in scope, but the
fetch failed). --json prints one JSON object per line, then a "totals" line.

Exit status: 0 the plan is whole; 1 some fetches failed, or --max-pages left
in-scope pages out (not --limit, which is asked for); 2 usage error; 130
interrupted. --rate and --delay hold, as for crawl.`);
  addCrawlOptions(previewCommand, PREVIEW_IGNORES);
  previewCommand.addOption(configOption());
  previewCommand.action(async (roots, flags) => {
    setExitCode(await previewAction(await withConfig(roots, flags, io), io));
  });

  addDistributedCommands(program, io, setExitCode);

  program
    .command('init')
    .description(`write a commented starter config (prerender.config.mjs) in the current directory; never overwrites one`)
    .action(async () => {
      setExitCode(await initAction(io));
    });

  addServeCommands(program, io, setExitCode);
  addDeployCommands(program, io, setExitCode);
  addCapacityCommand(program, io, setExitCode);
  addDemoCommand(program, io, setExitCode);

  return program;
}

/** Crawl options preview ignores but accepts, so a crawl command line can be pasted. Not --rate, --delay: it is as gentle. */
const PREVIEW_IGNORES = ['out', 'placeholders', 'pricePath', 'writeSitemap', 'siteUrl', 'dynamicBase', 'assets', 'quiet', 'full', 'pruneMax', 'force', 'ignore', 'resume', 'precompress',
  'changed', 'withReferrers', 'frontier', 'crawlId', 'freshStart', 'blobs', 'originConcurrency', 'maxDeliveries', 'frontierTimeout', 'leaseTimeout'];

/**
 * Add the crawl options to a command (booleans a config file may turn on get a --no- form); `hidden` are accepted, not shown.
 * @param {Command} command @param {string[]} [hidden]
 */
function addCrawlOptions(command, hidden = []) {
  for (const spec of CRAWL_OPTIONS) {
    const option = optionFromSpec(spec);
    if (hidden.includes(spec.name) && spec.name !== 'assets') option.hideHelp();
    command.addOption(option);
    if (spec.type === 'boolean' && !spec.cliOnly) {
      const long = /** @type {string} */ (spec.flags.split(/[ ,]+/).find((flag) => flag.startsWith('--')));
      const negated = new Option(`--no-${long.slice(2)}`, spec.default === true ? `turn ${long} off` : `turn ${long} off (when a config file turns it on)`);
      if (hidden.includes(spec.name)) negated.hideHelp();
      command.addOption(negated);
    }
  }
}

/** @param {import('../options/crawl-options.js').OptionSpec} spec */
function optionFromSpec(spec) {
  // (a description that says its default itself, as --threads does, is left as it is)
  const shown = spec.default === undefined || (Array.isArray(spec.default) && spec.default.length === 0) || spec.default === false || spec.description.includes('(default:')
    ? ''
    : ` (default: ${spec.type === 'bytes' ? `${Number(spec.default) / 1024 / 1024} MiB` : String(spec.default)})`;
  const option = new Option(spec.flags, spec.description + shown);
  if (spec.choices) option.choices(/** @type {string[]} */ ([...spec.choices]));
  return option;
}

function configOption() {
  return new Option('--config <file>', `config file (default: ${CONFIG_FILES.join(', ')} in the current directory, if present)`);
}

/** The config file, if any, under the command-line flags. @param {string[]} roots @param {Record<string, any>} flags @param {Io} io */
async function withConfig(roots, flags, io) {
  const { config, ...cli } = flags;
  const file = await findConfig({ cwd: io.cwd ?? process.cwd(), file: config });
  const fromFile = file ? await loadConfigFile(file) : {};
  for (const key of [...DEPLOY_KEYS, 'capacity']) delete fromFile[key]; // publish/deploy's and capacity's own
  const merged = { ...fromFile, ...cli };
  if (roots.length > 0) merged.roots = roots;
  // Relative paths are relative to the working directory the CLI was given.
  const cwd = io.cwd ?? process.cwd();
  // -o "$OUT" with OUT unset is a mistake, not the working directory.
  if (merged.out === '') throw new UsageError('--out must be a directory, got "" (an unset variable?)');
  merged.out = path.resolve(cwd, typeof merged.out === 'string' ? merged.out : String(OPTION_BY_NAME.get('out')?.default));
  if (merged.roots === undefined && merged.sitemap === undefined && merged.urls === undefined) swallowedRoot(cli);
  if (typeof merged.urls === 'string' && merged.urls !== '-') merged.urls = path.resolve(cwd, merged.urls);
  if (typeof merged.changed === 'string' && merged.changed !== '-') merged.changed = path.resolve(cwd, merged.changed);
  return merged;
}

/**
 * No root given, but a variadic option's last value (-i /a /b http://h/) is a URL commander gave it: say so and how to fix it.
 * @param {Record<string, any>} cli the command-line flags
 */
function swallowedRoot(cli) {
  for (const spec of CRAWL_OPTIONS) {
    const values = cli[spec.name];
    if ((spec.type !== 'string[]' && spec.type !== 'name-rules' && spec.type !== 'fresh-rules') || !Array.isArray(values) || values.length === 0) continue;
    const last = String(values[values.length - 1]);
    if (!/^https?:\/\//i.test(last)) continue;
    const flag = spec.flags.split(/[ ,]+/).find((f) => f.startsWith('--'));
    throw new UsageError(`no root URL: "${last}" was read as one more value of ${flag}, which takes every argument after it; `
      + `give the roots first (prerender crawl ${last} ${flag} ...) or end the option's values with "--" (${flag} ... -- ${last})`);
  }
}

/** @param {Record<string, any>} flags merged options @param {Io} io */
async function crawlAction(flags, io) {
  const { json, quiet, progressInterval, ...options } = flags;
  const intervalSeconds = progressSeconds(progressInterval);
  // A shared crawl may take its Redis from the environment.
  if (options.crawlId !== undefined && options.frontier === undefined && io.env?.REDIS_URL) options.frontier = io.env.REDIS_URL;
  if (options.frontier !== undefined) releaseYoungGeneration();
  // The engine is loaded by the commands that crawl, not with the CLI.
  const { Crawler } = await import('../crawler/index.js');
  let crawler;
  try {
    crawler = new Crawler({ ...options, signal: io.signal, stdin: io.stdin, env: io.env });
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      io.stderr.write(`prerender: ${error.message}\n`);
      // A script reading --json gets its error too, as for an error of the run.
      if (json) io.stdout.write(JSON.stringify({ error: { code: error.code, message: redact(error.message) } }) + '\n');
      return EXIT.USAGE;
    }
    throw error;
  }
  /** @type {{ url: string, message: string }[]} */ const warnings = [];
  crawler.on('warning', (warning) => { if (warnings.length < 3) warnings.push(warning); });
  // Progress goes to stderr, so that `crawl --json > summary.json` still shows it on a terminal.
  const progress = progressFor(io.stderr, () => crawler.stats, { quiet, intervalSeconds });
  io.signal?.addEventListener('abort', () => {
    // Before the crawl starts (sitemaps being read) nothing is written: said once it has stopped.
    if (!quiet && crawler.stats.phase !== 'start') io.stderr.write('prerender: writing the pages already fetched and the manifest\n');
  }, { once: true });
  let result;
  // A crawl past its first pages keeps its resident memory near what is live (heap.js).
  const unboundHeap = boundCrawlHeap(crawler.stats);
  try {
    result = await crawler.run();
  } catch (error) {
    if (error instanceof AbortError) {
      io.stderr.write('prerender: interrupted before any page was crawled; nothing was written\n');
      if (json) io.stdout.write(JSON.stringify({ error: { code: 'INTERRUPTED', message: 'interrupted before any page was crawled' }, stats: crawler.stats }) + '\n');
      return EXIT.INTERRUPTED;
    }
    io.stderr.write(`prerender: ${explainError(error)}\n`);
    if (json) {
      const err = /** @type {{ code?: string, message?: string, cause?: { code?: string } }} */ (error);
      io.stdout.write(JSON.stringify({ error: { code: err?.code ?? 'ERROR', cause: err?.cause?.code, message: redact(String(err?.message ?? error)) }, stats: crawler.stats }) + '\n');
    }
    return EXIT.USAGE;
  } finally {
    progress?.stop();
    unboundHeap();
  }
  if (json) io.stdout.write(JSON.stringify(result) + '\n');
  else if (!quiet) io.stdout.write(formatSummary(result, { warningsList: warnings }));
  if (result.interrupted) return EXIT.INTERRUPTED;
  // --max-pages reached left in-scope pages out; a lost root (404/410, or out of scope) is no success either.
  return result.failed > 0 || result.stale > 0 || result.pruneRefused || result.notCrawled > 0 || result.rootLost ? EXIT.PAGES_FAILED : EXIT.OK;
}

/** @param {Record<string, any>} flags merged options @param {Io} io */
async function previewAction(flags, io) {
  try {
    return await planAction(flags, io);
  } catch (error) {
    // Ctrl-C before the crawl itself began (the sitemaps loading, --why's fetch): as for crawl.
    if (!(error instanceof AbortError)) throw error;
    io.stderr.write('prerender: interrupted; nothing was planned\n');
    if (flags.json) io.stdout.write(JSON.stringify({ error: { code: 'INTERRUPTED', message: 'interrupted before any page was planned' } }) + '\n');
    return EXIT.INTERRUPTED;
  }
}

/** @param {Record<string, any>} flags merged options @param {Io} io */
async function planAction(flags, io) {
  const { json, quiet, why, limit, sample, progressInterval, ...options } = flags;
  const intervalSeconds = progressSeconds(progressInterval);
  const write = (/** @type {string} */ text) => io.stdout.write(text);
  // --why reads the state in OUT: whether a --fresh rule carries the page, and until when.
  const out = options.out;
  for (const name of PREVIEW_IGNORES) if (name !== 'assets') delete options[name];
  const { preview, explainUrl } = await import('../preview/index.js');
  if (why !== undefined) {
    const answer = await explainUrl({ ...options, out, signal: io.signal, stdin: io.stdin }, why);
    write(json ? JSON.stringify(answer) + '\n' : formatWhy(answer));
    return answer.fetchError ? EXIT.PAGES_FAILED : EXIT.OK;
  }
  // preview() checks the number and says what is wrong with it.
  const limitNumber = limit === undefined ? undefined : /^\d+$/.test(String(limit)) ? Number(limit) : limit;
  /** @type {{ stop(): void } | null} */ let progress = null;
  const sampleNumber = sample === undefined ? undefined : /^\d+$/.test(String(sample)) ? Number(sample) : sample;
  const { totals } = await preview({ ...options, limit: limitNumber, ...(sampleNumber !== undefined ? { sample: sampleNumber } : {}), signal: io.signal, stdin: io.stdin, env: io.env }, {
    onRow: (row) => {
      progress?.stop(); // rows come at the end (names are final then): the line gives way to them
      progress = null;
      write(json ? JSON.stringify({ type: 'url', ...row }) + '\n' : formatPlanRow(row));
    },
    onProgress: (crawler) => {
      progress = progressFor(io.stderr, () => crawler.stats, { quiet, intervalSeconds });
    },
  }).finally(() => /** @type {{ stop(): void } | null} */ (progress)?.stop());
  write(json ? JSON.stringify({ type: 'totals', ...totals }) + '\n' : formatPlanTotals(totals));
  if (totals.interrupted) return EXIT.INTERRUPTED;
  // As for crawl: --max-pages reached leaves in-scope pages out (--limit is a preview's own cut, asked for).
  return totals.failed > 0 || (limit === undefined && totals.notCrawled > 0) ? EXIT.PAGES_FAILED : EXIT.OK;
}

/** --progress-interval as seconds (the option's default when not given). @param {unknown} value */
function progressSeconds(value) {
  const spec = /** @type {import('../options/crawl-options.js').OptionSpec} */ (OPTION_BY_NAME.get('progressInterval'));
  return /** @type {number} */ (value === undefined ? spec.default : coerceOption(spec, value));
}

/** @param {Io} io */
async function initAction(io) {
  const cwd = io.cwd ?? process.cwd();
  const existing = await findConfig({ cwd }).catch(() => 'several');
  if (existing) {
    io.stderr.write(`prerender: a config file already exists (${existing === 'several' ? 'several' : path.basename(existing)}): not overwritten\n`);
    return EXIT.USAGE;
  }
  const template = await readFile(new URL('../../templates/prerender.config.mjs', import.meta.url), 'utf8');
  const target = path.join(cwd, 'prerender.config.mjs');
  try {
    await writeFile(target, template, { flag: 'wx' });
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'EEXIST') {
      io.stderr.write('prerender: prerender.config.mjs already exists: not overwritten\n');
      return EXIT.USAGE;
    }
    throw error;
  }
  io.stdout.write(`wrote ${target}\nedit its roots and scope, then check them with: npx prerender preview\n`);
  return EXIT.OK;
}
