// @ts-check
import { describe, expect, it } from 'vitest';
import { ignoreRegExp } from '../../lib/options/ignore.js';
import { resolveCrawlOptions } from '../../lib/options/crawl-options.js';
import { UsageError } from '../../lib/errors.js';

/** A page's bytes as --ignore sees them: one character a byte. @param {string} text @param {BufferEncoding} encoding */
const bytes = (text, encoding) => Buffer.from(text, encoding).toString('latin1');
/** @param {string[]} patterns @param {string} text @param {BufferEncoding} encoding */
const strip = (patterns, text, encoding) => bytes(text, encoding).replace(/** @type {RegExp} */ (ignoreRegExp(patterns)), '');

describe('--ignore patterns with non-ASCII letters', () => {
  it('match them in a Latin-1 page (one byte) and in a UTF-8 page (their bytes), quantifiers taking the whole letter', () => {
    for (const encoding of /** @type {const} */ (['latin1', 'utf8'])) {
      expect(strip(['Mis à jour: [0-9:]+'], '<p>Mis à jour: 10:00</p>', encoding), encoding).toBe(bytes('<p></p>', encoding));
      expect(strip(['Ré+sumé [0-9:]+'], '<p>Réésumé 10:00</p>', encoding), encoding).toBe(bytes('<p></p>', encoding));
      expect(strip(['(?<=é)[0-9]+'], 'é42', encoding), encoding).toBe(bytes('é', encoding));
    }
  });

  it('a letter in a class, a backreference or a named group: as written only (Latin-1 pages)', () => {
    expect(ignoreRegExp(['Mis [àa] jour'])?.source).toBe('(?:Mis [àa] jour)');
    expect(ignoreRegExp(['(?<t>é)\\k<t>'])?.source).toBe('(?:(?<t>é)\\k<t>)');
    expect(ignoreRegExp(['(é)\\1'])?.source).toBe('(?:(é)\\1)');
    expect(strip(['Mis [àa] jour'], 'Mis à jour', 'latin1')).toBe('');
  });

  it('ASCII patterns are as written; none is null', () => {
    expect(ignoreRegExp(['a+', 'b'])?.source).toBe('(?:a+)|(?:b)');
    expect(ignoreRegExp([])).toBeNull();
  });

  it('patterns that cannot be used together are a usage error, not a crash', () => {
    expect(() => resolveCrawlOptions({ roots: ['http://shop.example/'], ignore: ['(?<t>a)', '(?<t>b)'] })).toThrow(UsageError);
    expect(() => resolveCrawlOptions({ roots: ['http://shop.example/'], ignore: ['(?<t>a)', '(?<t>b)'] })).toThrow(/--ignore patterns cannot be used together: .*Duplicate capture group name/);
  });
});
