// @ts-check
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

/**
 * Every repository path that a template, README.md, ARCHITECTURE.md, a page
 * of docs/ or a --help text names exists (the nginx template once pointed to
 * a docs/serve.md that did not).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A path in the repository: under one of its folders, or one of its top-level pages; not inside a URL or a longer path. */
const REPO_PATH = /(?<![\w./:@-])((?:docs|lib|test|templates|fixtures|bench|bin|types)\/[A-Za-z0-9_./-]*|(?:README|ARCHITECTURE|FAULTS|BENCHMARKS|CHANGELOG)\.md)/g;

/** Named, and rightly absent from the repository. */
const NOT_FILES = new Map([
  ['lib/logo.png', 'a crawled site\'s path, in the --relative-links example'],
  ['types/index.d.ts', 'made by `npm run types` before packing, not committed'],
]);

/** @param {string} dir relative to the root @returns {string[]} */
const walk = (dir) => readdirSync(ROOT + dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(`${dir}/${entry.name}`) : [`${dir}/${entry.name}`]));

/** @param {string} text @returns {string[]} */
const pathsIn = (text) => [...text.matchAll(REPO_PATH)].map((match) => match[1].replace(/[.,)]+$/, ''));

/** @param {string} text */
const missingIn = (text) => pathsIn(text).filter((file) => !NOT_FILES.has(file) && !existsSync(ROOT + file));

describe('paths named by the docs, templates and help texts exist', () => {
  const sources = ['README.md', 'ARCHITECTURE.md', ...readdirSync(`${ROOT}docs`).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`), ...walk('templates')];

  it.each(sources)('%s', (source) => {
    expect(missingIn(readFileSync(ROOT + source, 'utf8'))).toEqual([]);
  });

  it('every command\'s --help', async () => {
    const main = await runCli(['--help'], { cwd: ROOT });
    const commands = [...main.stdout.slice(main.stdout.indexOf('Commands:')).matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((match) => match[1]).filter((name) => name !== 'help');
    expect(commands).toEqual(expect.arrayContaining(['crawl', 'preview', 'serve', 'publish', 'deploy']));
    const missing = [...missingIn(main.stdout)];
    for (const command of commands) missing.push(...missingIn((await runCli([command, '--help'], { cwd: ROOT })).stdout));
    expect(missing).toEqual([]);
  });

  it('finds a path that is missing, and none inside a URL', () => {
    expect(missingIn('see docs/no-such-page.md, or https://host/docs/nothing.md and /lib/x.png')).toEqual(['docs/no-such-page.md']);
  });
});
