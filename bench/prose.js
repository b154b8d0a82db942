#!/usr/bin/env node
// @ts-check
/**
 * How readable the user documentation is: words per sentence across README.md
 * and docs/*.md, sentences over 60 words, and README/BENCHMARKS line counts.
 *
 *   node bench/prose.js [PROJECT_DIR] [--json]
 *
 * What counts as prose, and how it is cut into sentences:
 * - Dropped: fenced code blocks, and lines that are table rows (`|`), headings
 *   (`#`), quotes (`>`), HTML (`<`) or images (`![`).
 * - Inline code counts as one word, even across a line break; a link counts as its text.
 * - A `-` or `*` list item starts a new sentence, and so does a blank line.
 * - A sentence ends at `.`, `!` or `?` followed by white space.
 * - A "sentence" of fewer than 3 words is a label or a fragment: not counted.
 * Words are runs of non-space characters. The rule is that of the lead's
 * docs-check tool, so both give the same figures.
 */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Sentences longer than this many words are counted apart. */
export const LONG_SENTENCE = 60;

/**
 * The prose sentences of a Markdown text, each with its words joined by single spaces.
 * @param {string} markdown
 * @returns {string[]}
 */
export function sentences(markdown) {
  const prose = markdown
    .replace(/```[\s\S]*?```/g, ' ')
    .split('\n')
    .filter((line) => !/^\s*(\||#|>|<|!\[)/.test(line))
    .join('\n')
    .replace(/`[^`]*`/g, 'X')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/^\s*[-*] /gm, '\n\n');
  return prose
    .split(/(?<=[.!?])\s+|\n\s*\n/)
    .map((sentence) => sentence.replace(/\s+/g, ' ').trim())
    .filter((sentence) => sentence.split(' ').length >= 3);
}

/** @param {string} sentence */
export const wordCount = (sentence) => sentence.split(' ').length;

/**
 * Figures of one or more Markdown texts taken together.
 * @param {string[]} texts
 * @returns {{ sentences: number, words: number, meanWords: number, over60: number }}
 */
export function proseFigures(texts) {
  const counts = texts.flatMap((text) => sentences(text).map(wordCount));
  const words = counts.reduce((sum, n) => sum + n, 0);
  return {
    sentences: counts.length,
    words,
    meanWords: counts.length === 0 ? 0 : Math.round((words / counts.length) * 10) / 10,
    over60: counts.filter((n) => n > LONG_SENTENCE).length,
  };
}

/** Lines as the docs-check tool counts them: one more than `wc -l` for a text ending in a newline. @param {string} text */
const lineCount = (text) => text.split('\n').length;

/**
 * The documentation figures of a checkout.
 * @param {string} root the project's directory
 */
export function measureDocs(root) {
  const read = (/** @type {string} */ file) => (existsSync(path.join(root, file)) ? readFileSync(path.join(root, file), 'utf8') : '');
  const docsDir = path.join(root, 'docs');
  const pages = existsSync(docsDir) ? readdirSync(docsDir).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`) : [];
  const files = ['README.md', ...pages];
  const texts = files.map(read);
  return {
    readmeLines: lineCount(read('README.md')),
    benchmarksLines: lineCount(read('BENCHMARKS.md')),
    docsPages: pages.length,
    ...proseFigures(texts),
    perFile: files.map((file, i) => ({ file, lines: lineCount(texts[i]), ...proseFigures([texts[i]]) })),
  };
}

/** The sentences over LONG_SENTENCE words, with their file: what to shorten next. @param {string} root */
export function longSentences(root) {
  const docsDir = path.join(root, 'docs');
  const files = ['README.md', ...(existsSync(docsDir) ? readdirSync(docsDir).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`) : [])];
  return files.flatMap((file) => (existsSync(path.join(root, file)) ? sentences(readFileSync(path.join(root, file), 'utf8')) : [])
    .filter((sentence) => wordCount(sentence) > LONG_SENTENCE)
    .map((sentence) => ({ file, words: wordCount(sentence), sentence })));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const root = path.resolve(args.find((arg) => !arg.startsWith('--')) ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
  const figures = measureDocs(root);
  if (args.includes('--json')) {
    process.stdout.write(JSON.stringify({ ...figures, long: longSentences(root) }, null, 2) + '\n');
  } else {
    process.stdout.write('file                           lines  sentences  words/sentence  over 60\n');
    for (const f of figures.perFile) {
      process.stdout.write(`${f.file.padEnd(30)} ${String(f.lines).padStart(5)}  ${String(f.sentences).padStart(9)}  ${f.meanWords.toFixed(1).padStart(14)}  ${String(f.over60).padStart(7)}\n`);
    }
    process.stdout.write(`${'all'.padEnd(30)} ${''.padStart(5)}  ${String(figures.sentences).padStart(9)}  ${figures.meanWords.toFixed(1).padStart(14)}  ${String(figures.over60).padStart(7)}\n`);
    process.stdout.write(`README.md ${figures.readmeLines} lines; BENCHMARKS.md ${figures.benchmarksLines} lines; ${figures.docsPages} pages in docs/\n`);
  }
}
