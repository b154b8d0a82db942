// @ts-check
/**
 * The command line of the benchmark scripts: node:util parseArgs in strict
 * mode, plus what a person typing the command needs:
 *
 *   --help, -h   the script's usage on stdout, exit status 0;
 *   a mistake    (an unknown option, a missing value, a value given to a
 *                flag, an unexpected argument) one line on stderr,
 *                `NAME: unknown option --foo (see --help)`, exit status 2,
 *                never a stack trace.
 *
 * A script's own checks of its values end the same way through usageError()
 * or checkNumbers().
 */
import { parseArgs } from 'node:util';

/** The option every script gets. */
const HELP = /** @type {const} */ ({ type: 'boolean', short: 'h' });

/**
 * Parses the command line (process.argv after the script, as parseArgs does)
 * against `options`; on --help or -h prints `usage` and exits 0, on a mistake
 * prints one line and exits 2.
 * @template {import('node:util').ParseArgsConfig['options'] & {}} T
 * @template {boolean} [P=false]
 * @param {string} name the script's name, for the messages: `crawl-bench`
 * @param {T} options as for parseArgs; `help` (-h) is added
 * @param {string} usage printed by --help (a trailing newline is added)
 * @param {{ allowPositionals?: P, allowNegative?: boolean, args?: string[] }} [config]
 */
export function parseBenchArgs(name, options, usage, config = {}) {
  const { allowPositionals, allowNegative, args } = config;
  try {
    const parsed = parseArgs({ args, options: { ...options, help: HELP }, strict: true, allowPositionals, allowNegative });
    if (/** @type {{ help?: boolean }} */ (parsed.values).help) showUsage(usage);
    return parsed;
  } catch (error) {
    // `--foo --help` is a request for help too.
    if (asksForHelp(args ?? process.argv.slice(2))) showUsage(usage);
    return usageError(name, describe(error));
  }
}

/**
 * @param {string} usage
 * @returns {never}
 */
function showUsage(usage) {
  process.stdout.write(usage.endsWith('\n') ? usage : usage + '\n');
  process.exit(0);
}

/**
 * Ends the process with one line on stderr and exit status 2.
 * @param {string} name the script's name
 * @param {string} message what is wrong, e.g. `--products must be a whole number >= 1, got "x"`
 * @returns {never}
 */
export function usageError(name, message) {
  process.stderr.write(`${name}: ${message} (see --help)\n`);
  process.exit(2);
}

/**
 * Checks that options read as numbers >= 0 (what Number() gives is what the
 * script uses): `numbers` hold one number, `lists` comma-separated numbers.
 * Options left out of the command line and without a default are skipped.
 * @param {string} name the script's name
 * @param {Record<string, unknown>} values parseArgs's values
 * @param {string[]} numbers
 * @param {string[]} [lists]
 */
export function checkNumbers(name, values, numbers, lists = []) {
  for (const [option, isList] of [...numbers.map((o) => /** @type {const} */ ([o, false])), ...lists.map((o) => /** @type {const} */ ([o, true]))]) {
    const text = values[option];
    if (text === undefined) continue;
    const items = isList ? String(text).split(',') : [String(text)];
    if (!items.every((item) => item.trim() !== '' && Number.isFinite(Number(item)) && Number(item) >= 0)) {
      usageError(name, `--${option} must be ${isList ? 'comma-separated numbers' : 'a number'} >= 0, got ${JSON.stringify(text)}`);
    }
  }
}

/**
 * Whether --help or -h is among the options, before any `--`.
 * @param {string[]} args
 */
function asksForHelp(args) {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/**
 * parseArgs's error as one short line.
 * @param {unknown} error
 */
function describe(error) {
  const { code, message } = /** @type {{ code?: string, message?: string }} */ (error ?? {});
  const text = String(message ?? error);
  const quoted = /'([^']*)'/.exec(text)?.[1] ?? '';
  const option = /--[^\s,<]+/.exec(quoted)?.[0] ?? quoted.split(/[\s,]/)[0];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${quoted}`;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `unexpected argument ${JSON.stringify(quoted)}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (/argument missing/.test(text)) return `option ${option} needs a value`;
    if (/ambiguous/.test(text)) return `option ${option} needs a value (for a value starting with '-', write ${option}=VALUE)`;
    if (/does not take an argument/.test(text)) return `option ${option} takes no value`;
  }
  return text.split('\n')[0];
}
