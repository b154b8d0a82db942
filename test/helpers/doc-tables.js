// @ts-check
/**
 * Reading the option tables of the docs, and the options of `--help`, so that
 * a test can compare them (test/unit/help-docs.test.js).
 *
 * An option table is a Markdown table whose header is `| option | default |
 * what it does |` (any case), and whose first cells name long flags. A table
 * documents the commands named as `prerender <command>` in the nearest heading
 * above it; under a heading that names none, the commands of its page.
 */

/**
 * @typedef {{ flags: string[], default: string, line: number, commands: string[] }} DocRow
 *   flags: the long flags of the first cell (`--dedupe`, `--no-dedupe`); default: the second cell, plain text
 */

/** Defaults a table may give an option whose `--help` shows none. */
export const NO_DEFAULT = new Set(['', 'none', 'off', 'required']);

/**
 * Plain text of a cell: no backticks, escaped pipes unescaped, white space collapsed.
 * @param {string} cell
 */
export const plain = (cell) => cell.replace(/`/g, '').replace(/\\\|/g, '|').replace(/\s+/g, ' ').trim();

/** @param {string} line a table row @returns {string[]} its cells, outer pipes dropped */
const cellsOf = (line) => line.trim().replace(/^\||\|$/g, '').split(/(?<!\\)\|/).map((cell) => cell.trim());

/**
 * The rows of the option tables of a page.
 * @param {string} markdown
 * @param {string[]} knownCommands every command of the program
 * @param {string[]} pageCommands the commands the page is the reference of
 * @returns {DocRow[]}
 */
export function optionRows(markdown, knownCommands, pageCommands) {
  const lines = markdown.split('\n');
  /** @type {DocRow[]} */
  const rows = [];
  let headingCommands = pageCommands;
  let inTable = false;
  let inCode = false;
  lines.forEach((line, index) => {
    if (/^\s*```/.test(line)) inCode = !inCode;
    if (inCode) return;
    const heading = /^#+\s+(.*)$/.exec(line);
    if (heading) {
      const named = [...heading[1].matchAll(/prerender (\w[\w-]*)/g)].map((m) => m[1]).filter((name) => knownCommands.includes(name));
      headingCommands = named.length > 0 ? [...new Set(named)] : pageCommands;
      return;
    }
    if (!line.trim().startsWith('|')) {
      inTable = false;
      return;
    }
    const cells = cellsOf(line);
    if (cells.length >= 3 && /^option$/i.test(cells[0]) && /^default$/i.test(cells[1]) && /^what it does$/i.test(cells[2])) {
      inTable = true;
      return;
    }
    if (!inTable || /^:?-+:?$/.test(cells[0])) return;
    const flags = [...cells[0].matchAll(/(?<![\w-])--[a-z0-9][a-z0-9-]*/g)].map((m) => m[0]);
    if (flags.length > 0) rows.push({ flags, default: plain(cells[1] ?? ''), line: index + 1, commands: headingCommands });
  });
  return rows;
}

/**
 * The default an option's `--help` line shows, or '' for none: the text of its
 * last "(default: …)", or what follows "; default:". A figure of this machine
 * ("2 here") is dropped: the docs cannot know it.
 * @param {string} description the option's description as `--help` shows it
 */
export function helpDefault(description) {
  const text = description.replace(/\s+/g, ' ');
  let value = '';
  const start = text.lastIndexOf('(default: ');
  if (start !== -1) {
    let depth = 0;
    let end = start;
    for (; end < text.length; end++) {
      if (text[end] === '(') depth++;
      else if (text[end] === ')' && --depth === 0) break;
    }
    value = text.slice(start + '(default: '.length, end);
  } else {
    const loose = /(?:^|; )default: (.*)$/.exec(text);
    if (loose) value = loose[1];
  }
  return value.replace(/(?:, | \()\d+ here\)?$/, '').trim();
}

/**
 * The options `--help` shows for a command, by long flag, with their default.
 * @param {import('commander').Command} command
 * @returns {Map<string, string>}
 */
export function helpOptions(command) {
  const help = command.createHelp();
  /** @type {Map<string, string>} */
  const options = new Map();
  for (const option of help.visibleOptions(command)) {
    if (!option.long || option.long === '--help' || option.long === '--version') continue;
    options.set(option.long, helpDefault(help.optionDescription(option)));
  }
  return options;
}
