// @ts-check
/**
 * The shell examples of README.md and docs/*.md, as test/doc-examples.test.js
 * runs them. The rules, which the docs follow:
 *
 * - A ```sh block is an example. `<!-- not run: reason -->` on the line
 *   before it keeps it from running; the reason is listed.
 * - Lines run in order, each in `sh -c`, in one temp dir per page. A line
 *   ending in `\` goes on on the next line, a here-document up to its
 *   terminator; `#` lines are comments.
 * - Only lines whose command is `prerender`, `npx prerender`,
 *   `npx prerender-static` or a file-making shell command (echo, printf,
 *   cat, mkdir) run. Others, such as npm, ssh or mysql, are listed as not run.
 * - `prerender` is the checkout's bin. Placeholders become local servers:
 *   http://shop.example the fixture shop, http://git.example the gitweb
 *   fixture, http://wiki.example the MediaWiki fixture, and
 *   redis://redis.example:6379 a real redis-server. Paths under /srv/ and
 *   /mnt/ go under the temp dir. Any other host must be a reserved name
 *   (RFC 2606: *.example, *.test, *.invalid) or an IP address, or the line fails.
 * - A line must exit 0, or the status a trailing `# exit N` comment gives.
 * - `serve` and `demo` run until stopped. They are started with `--port 0`,
 *   probed with one GET, then stopped with SIGTERM, which must end them with
 *   0 or 130. The URL probed is the one after "listening on" on stdout, else
 *   the first local URL there; the answer must be under 500.
 */

/**
 * @typedef {{ file: string, line: number, notRun: string | null, commands: DocCommand[], skipped: string[] }} DocBlock
 *   line: the line of the opening fence; notRun: the reason given, or null; skipped: lines that do not run
 * @typedef {{ text: string, line: number, exit: number, longRunning: boolean }} DocCommand
 */

/** Shell commands that only make files for the next lines: they run. */
const FILE_MAKERS = new Set(['echo', 'printf', 'cat', 'mkdir']);

/** The placeholder hosts, and the fixture each stands for. */
export const PLACEHOLDERS = /** @type {const} */ ({
  shop: /https?:\/\/shop\.example(?::\d+)?/g,
  git: /https?:\/\/git\.example(?::\d+)?/g,
  wiki: /https?:\/\/wiki\.example(?::\d+)?/g,
  redis: /rediss?:\/\/redis\.example(?::\d+)?/g,
});

/** The first word of a command, past `VAR=value` prefixes and `npx`. @param {string} text */
function commandWords(text) {
  const words = text.trim().replace(/^(?:\w+=\S*\s+)*/, '').split(/\s+/);
  if (words[0] === 'npx') words.shift();
  return words;
}

/**
 * The ```sh blocks of a Markdown page.
 * @param {string} file the page's name, for messages
 * @param {string} markdown
 * @returns {DocBlock[]}
 */
export function shellBlocks(file, markdown) {
  const lines = markdown.split('\n');
  /** @type {DocBlock[]} */
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)```(\w*)\s*$/.exec(lines[i]);
    if (!fence) continue;
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end])) end++;
    if (fence[2] === 'sh') {
      let before = i - 1;
      while (before >= 0 && lines[before].trim() === '') before--;
      const note = before >= 0 ? /^<!--\s*not run:\s*(.*?)\s*-->$/.exec(lines[before].trim()) : null;
      blocks.push({ file, line: i + 1, notRun: note ? note[1] : null, ...commandsOf(lines.slice(i + 1, end), i + 2) });
    }
    i = end;
  }
  return blocks;
}

/**
 * @param {string[]} lines the block's lines
 * @param {number} first the page's line number of the first
 * @returns {{ commands: DocCommand[], skipped: string[] }}
 */
function commandsOf(lines, first) {
  /** @type {DocCommand[]} */
  const commands = [];
  /** @type {string[]} */
  const skipped = [];
  for (let i = 0; i < lines.length; i++) {
    const line = first + i;
    let text = lines[i];
    while (/\\\s*$/.test(text) && i + 1 < lines.length) text = text.replace(/\\\s*$/, ' ') + lines[++i].trim();
    // A here-document (cat > prices.json <<'EOF') takes the lines up to its terminator.
    const heredoc = /<<-?\s*(['"]?)(\w+)\1/.exec(text);
    if (heredoc) {
      while (i + 1 < lines.length && lines[i].trim() !== heredoc[2]) text += `\n${lines[++i]}`;
    }
    text = text.trim();
    if (text === '' || text.startsWith('#')) continue;
    const words = commandWords(text);
    const prerender = /^prerender(-static)?$/.test(words[0]);
    if (!prerender && !FILE_MAKERS.has(words[0])) {
      skipped.push(text);
      continue;
    }
    const exit = /#.*\bexits? (\d+)\b/.exec(text);
    const longRunning = prerender && (words[1] === 'serve' || words[1] === 'demo');
    commands.push({ text, line, exit: exit ? Number(exit[1]) : 0, longRunning });
  }
  return { commands, skipped };
}

/**
 * A command as it runs here: the checkout's bin, the fixtures' origins, paths in the temp dir.
 * @param {DocCommand} command
 * @param {{ dir: string, origins: Partial<Record<keyof typeof PLACEHOLDERS, string>> }} context
 * @returns {{ script: string, missing: string[] }} missing: placeholders with no server here, and hosts that are no placeholder
 */
export function localise(command, { dir, origins }) {
  let text = command.text.replace(/(^|[|;&(]\s*)((?:\w+=\S*\s+)*)npx\s+(prerender(?:-static)?)\b/g, '$1$2$3');
  /** @type {string[]} */
  const missing = [];
  for (const [name, pattern] of Object.entries(PLACEHOLDERS)) {
    const origin = origins[/** @type {keyof typeof PLACEHOLDERS} */ (name)];
    if (!new RegExp(pattern.source).test(text)) continue;
    if (origin === undefined) missing.push(name);
    else text = text.replace(pattern, origin);
  }
  // A real host would be asked for real, or hang the test on DNS: only placeholders and reserved names (RFC 2606).
  for (const match of text.matchAll(/\b[a-z][a-z0-9+]*:\/\/(?:[^\s@/]*@)?([^\s/:'"]+)/gi)) {
    const host = match[1].toLowerCase();
    if (!/^(127\.0\.0\.1|localhost|\d+\.\d+\.\d+\.\d+)$|\.(example|test|invalid|localhost)$|\.example\.(com|org|net)$/.test(host)) missing.push(`host "${host}"`);
  }
  text = text.replace(/(?<=[\s='"])\/(srv|mnt)\//g, `${dir}/$1/`);
  if (command.longRunning) text = `exec ${text.replace(/(\s)(?:--port|-p)[\s=]+\d+/g, '$1--port 0')}`;
  if (command.longRunning && !/\s--port\s/.test(text) && /\bserve\b/.test(text)) text += ' --port 0';
  return { script: text, missing };
}
