// @ts-check
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { longSentences, measureDocs, proseFigures, sentences } from '../../bench/prose.js';

/**
 * The readability of the user documentation (issue #41): the metric of
 * bench/prose.js on small cases, then its bounds on README.md and docs/.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the prose metric', () => {
  it('cuts sentences at . ! ? and at blank lines, and keeps words in order', () => {
    expect(sentences('One two three. Four five six! Seven eight nine?\n\nTen eleven twelve')).toEqual([
      'One two three.', 'Four five six!', 'Seven eight nine?', 'Ten eleven twelve',
    ]);
  });

  it('joins a sentence wrapped over several lines', () => {
    expect(sentences('A sentence wrapped\nover two lines.')).toEqual(['A sentence wrapped over two lines.']);
  });

  it('skips code blocks, tables, headings, quotes and HTML lines', () => {
    const text = [
      '# A heading of many words here',
      '```sh',
      'prerender crawl http://shop.example/ -o out. And more words here.',
      '```',
      '| option | default | what it does with many words |',
      '> a quoted line of several words',
      '<!-- not run: a comment of several words -->',
      'The only prose here.',
    ].join('\n');
    expect(sentences(text)).toEqual(['The only prose here.']);
  });

  it('counts inline code as one word and a link as its text', () => {
    expect(sentences('Run `prerender crawl --out dir` as [the crawl page](docs/crawl.md) says.')).toEqual(['Run X as the crawl page says.']);
  });

  it('starts a sentence at each list item, and drops fragments under 3 words', () => {
    expect(sentences('Items:\n- first item here\n- second one here\n- two words')).toEqual(['first item here', 'second one here']);
  });

  it('averages words a sentence and counts sentences over 60 words', () => {
    const long = `${Array.from({ length: 61 }, () => 'word').join(' ')}.`;
    const figures = proseFigures(['One two three four.', `${long} Five six.\n\nSeven eight nine ten eleven twelve.`]);
    expect(figures).toEqual({ sentences: 3, words: 4 + 61 + 6, meanWords: 23.7, over60: 1 });
  });
});

describe('README.md and docs/ (issue #41)', () => {
  const figures = measureDocs(ROOT);

  it('README.md is at most 400 lines', () => {
    expect(figures.readmeLines).toBeLessThanOrEqual(400);
  });

  it('BENCHMARKS.md is at most 400 lines, and its first section is the current figures', () => {
    expect(figures.benchmarksLines).toBeLessThanOrEqual(400);
    expect(readFileSync(`${ROOT}BENCHMARKS.md`, 'utf8').match(/^## .*/m)?.[0]).toBe('## Current figures');
  });

  it('docs/ holds at least 6 pages', () => {
    expect(figures.docsPages).toBeGreaterThanOrEqual(6);
  });

  it('averages at most 22 words a sentence', () => {
    expect(figures.meanWords, JSON.stringify(figures.perFile.filter((f) => f.meanWords > 22).map((f) => [f.file, f.meanWords]))).toBeLessThanOrEqual(22);
  });

  it('has at most 5 sentences over 60 words', () => {
    const long = longSentences(ROOT).map((s) => `${s.file} (${s.words} words): ${s.sentence.slice(0, 80)}…`);
    expect(long.length, long.join('\n')).toBeLessThanOrEqual(5);
  });
});
