// @ts-check
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { helpProgram } from '../../lib/cli/index.js';
import { NO_DEFAULT, helpDefault, helpOptions, optionRows } from '../helpers/doc-tables.js';

/**
 * `--help` and the reference pages agree (issue #41): every option `--help`
 * shows is in an option table of its command's page, and every option of a
 * page's tables is one `--help` shows, with the same default.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The reference page of each command. */
const PAGE_OF = {
  crawl: 'docs/crawl.md',
  preview: 'docs/preview.md',
  worker: 'docs/distributed.md',
  status: 'docs/distributed.md',
  init: 'docs/config.md',
  serve: 'docs/serve.md',
  front: 'docs/front.md',
  verify: 'docs/deploy.md',
  publish: 'docs/deploy.md',
  deploy: 'docs/deploy.md',
  releases: 'docs/deploy.md',
  rollback: 'docs/deploy.md',
  capacity: 'docs/capacity.md',
  demo: existsSync(`${ROOT}docs/demo.md`) ? 'docs/demo.md' : 'README.md',
};

const quiet = /** @type {NodeJS.WritableStream} */ (/** @type {unknown} */ ({ write: () => true }));
const program = helpProgram({ stdout: quiet, stderr: quiet, env: {} });
const commands = program.commands.map((command) => command.name()).filter((name) => name !== 'help');
const optionsOf = new Map(program.commands.map((command) => [command.name(), helpOptions(command)]));

/** A command that takes another's options: those are documented on the other's page. */
const TAKES_OPTIONS_OF = { preview: 'crawl' };

/** @param {string} page */
const commandsOfPage = (page) => Object.entries(PAGE_OF).filter(([, file]) => file === page).map(([name]) => name);
/** @param {string} page */
const read = (page) => (existsSync(ROOT + page) ? readFileSync(ROOT + page, 'utf8') : null);
/** @param {string} page */
const rowsOf = (page) => optionRows(read(page) ?? '', commands, commandsOfPage(page));

/** `--no-x` is documented by a row of `--x`, and the other way round. @param {string} flag */
const pair = (flag) => (flag.startsWith('--no-') ? `--${flag.slice(5)}` : `--no-${flag.slice(2)}`);

describe('--help and docs/ agree', () => {
  it('every command has a reference page', () => {
    expect(commands.filter((name) => !(name in PAGE_OF))).toEqual([]);
  });

  it.each(commands.filter((name) => name in PAGE_OF))('every option of "prerender %s --help" is in an option table of its page', (name) => {
    const page = PAGE_OF[/** @type {keyof typeof PAGE_OF} */ (name)];
    expect(read(page), `${page} is missing`).not.toBeNull();
    /** @param {string} command */
    const documentedFor = (command) => new Set(rowsOf(PAGE_OF[/** @type {keyof typeof PAGE_OF} */ (command)]).filter((row) => row.commands.includes(command)).flatMap((row) => row.flags));
    const documented = documentedFor(name);
    const lender = /** @type {Record<string, string>} */ (TAKES_OPTIONS_OF)[name];
    const lent = lender ? documentedFor(lender) : new Set();
    const known = (/** @type {string} */ flag) => documented.has(flag) || documented.has(pair(flag))
      || (optionsOf.get(lender)?.has(flag) && (lent.has(flag) || lent.has(pair(flag))));
    const missing = [...(optionsOf.get(name)?.keys() ?? [])].filter((flag) => !known(flag));
    expect(missing.map((flag) => `${page}: ${flag} of "prerender ${name} --help" is in no option table for ${name}`)).toEqual([]);
  });

  it.each([...new Set(Object.values(PAGE_OF))].filter((page) => read(page) !== null))('every option in the tables of %s is in --help, with its default', (page) => {
    const problems = [];
    for (const row of rowsOf(page)) {
      for (const flag of row.flags) {
        const found = row.commands.filter((name) => optionsOf.get(name)?.has(flag));
        if (found.length === 0) {
          problems.push(`${page}:${row.line}: ${flag} is no option of ${row.commands.map((name) => `"prerender ${name}"`).join(' or ')}`);
          continue;
        }
        const shown = found.map((name) => /** @type {string} */ (optionsOf.get(name)?.get(flag)));
        const agrees = shown.some((value) => (value === '' ? NO_DEFAULT.has(row.default) : value === row.default));
        if (!agrees) problems.push(`${page}:${row.line}: ${flag} has default "${row.default}" in the table, "${shown[0] || 'none'}" in "prerender ${found[0]} --help"`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('the readers of tables and --help', () => {
  const page = [
    '# `prerender serve`',
    '| option | default | what it does |',
    '| --- | --- | --- |',
    '| `-p, --port <port>` | `8080` | port |',
    '| `--dedupe`, `--no-dedupe` | off | share files |',
    '| `--prune-max <n\\|n%>` | 10% | a pipe in a cell |',
    '',
    '## Other commands: `prerender publish` and `prerender deploy`',
    '| Option | Default | What it does |',
    '| --- | --- | --- |',
    '| `--keep <n>` | 5 | releases kept |',
    '',
    '| option | default | meaning |',
    '| --- | --- | --- |',
    '| `--not-an-option-table` | x | y |',
  ].join('\n');

  it('reads the rows of option tables only, each with the commands of its heading', () => {
    expect(optionRows(page, ['serve', 'publish', 'deploy'], ['front'])).toEqual([
      { flags: ['--port'], default: '8080', line: 4, commands: ['serve'] },
      { flags: ['--dedupe', '--no-dedupe'], default: 'off', line: 5, commands: ['serve'] },
      { flags: ['--prune-max'], default: '10%', line: 6, commands: ['serve'] },
      { flags: ['--keep'], default: '5', line: 11, commands: ['publish', 'deploy'] },
    ]);
  });

  it('takes the page\'s commands under a heading that names none', () => {
    expect(optionRows('## Options\n| option | default | what it does |\n| --- | --- | --- |\n| `--x` | none | x |', ['serve'], ['capacity'])[0].commands).toEqual(['capacity']);
  });

  it('reads the default --help shows, without this machine\'s figures', () => {
    expect(helpDefault('port to listen on (0 picks a free one) (default: 8080)')).toBe('8080');
    expect(helpDefault('the check (default: sent) (choices: "sent", "all")')).toBe('sent');
    expect(helpDefault('worker threads (default: one per CPU core, 2 here)')).toBe('one per CPU core');
    expect(helpDefault('tabs (independent of -c); default: 8 when idle (a note), else one per core, 2 to 16 (2 here)')).toBe('8 when idle (a note), else one per core, 2 to 16');
    expect(helpDefault('Chrome (default: A, B (or C) on the PATH); never downloaded')).toBe('A, B (or C) on the PATH');
    expect(helpDefault('turn --render off (when a config file turns it on)')).toBe('');
  });

  it('finds a default that differs from --help, and an option --help lacks', () => {
    const serve = /** @type {import('commander').Command} */ (program.commands.find((command) => command.name() === 'serve'));
    const options = helpOptions(serve);
    expect(options.get('--port')).toBe('8080');
    expect(options.get('--prices')).toBe('');
    expect(options.has('--help')).toBe(false);
    expect(options.has('--no-such-option')).toBe(false);
  });
});
