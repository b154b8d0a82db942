// @ts-check
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { renderPlaceholder } from '../../lib/document/placeholders.js';
import { deflateParts, gzipFilled } from '../../lib/serve/gzip.js';
import { scanPlaceholders } from '../../lib/serve/pages.js';
import { chunkParts, joinParts, splitAtSlots } from '../../lib/serve/splice.js';
import { renderPieces } from '../../fixtures/serve/tree.js';

/** A small deterministic PRNG, so failures reproduce. @param {number} seed */
function random(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const WORDS = ['<p>', 'price ', '€', 'é', '\u0000', '<!--', '-->', '', '\r\n', 'x'.repeat(70_000)];
/** Looks like a placeholder but is not at a recorded offset: the splicer must leave it alone. */
const FAKE = '<!--prerender:price sku=FAKE-->';

/**
 * A page of random text pieces and slots (slots possibly first, last or adjacent).
 * @param {() => number} rnd
 * @param {{ fakes?: boolean }} [options]
 */
function randomPage(rnd, { fakes = false } = {}) {
  /** @type {(string | { sku: string })[]} */
  const pieces = [];
  const n = Math.floor(rnd() * 6);
  for (let i = 0; i < n * 2 + 1; i++) {
    if (rnd() < 0.4) pieces.push({ sku: ['SKU-1', 'a b/c', 'ü&"<>', '--', '%41'][Math.floor(rnd() * 5)] });
    else if (fakes && rnd() < 0.1) pieces.push(FAKE);
    else if (rnd() < 0.02) pieces.push(WORDS[WORDS.length - 1]); // large
    else pieces.push(WORDS[Math.floor(rnd() * (WORDS.length - 1))]);
  }
  return pieces;
}

describe('splice: split once, join per request', () => {
  it('matches a plain placeholder replacement, identity and gzip, for many random pages', () => {
    const rnd = random(42);
    let fakes = 0;
    for (let round = 0; round < 300; round++) {
      const pieces = randomPage(rnd, { fakes: true });
      const { body, placeholders } = renderPieces(pieces);
      const values = placeholders.map((_, i) => Buffer.from(i % 3 === 0 ? '' : `$${i}.99 €`));
      // Reference: build the expected output straight from the pieces.
      let v = 0;
      const expected = Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p) : values[v++])));
      const parts = splitAtSlots(body, placeholders);
      expect(parts).toHaveLength(placeholders.length + 1);
      const filled = joinParts(parts, values);
      expect(filled.equals(expected)).toBe(true);
      // The chunks written for identity: the same bytes, large parts not copied.
      const { chunks, length } = chunkParts(parts, values, 64);
      expect(length).toBe(expected.length);
      expect(Buffer.concat(chunks).equals(expected)).toBe(true);
      for (const part of parts) if (part.length >= 64) expect(chunks).toContain(part);
      expect(chunks.length).toBeLessThanOrEqual(2 * parts.filter((p) => p.length >= 64).length + 1);
      if (pieces.includes(FAKE)) fakes++;
      const gz = gzipFilled(parts, deflateParts(parts), values);
      expect(zlib.gunzipSync(gz).equals(expected)).toBe(true);
    }
    expect(fakes).toBeGreaterThan(10);
  });

  it('finds the same slots by scanning as the manifest records', () => {
    const rnd = random(7);
    for (let round = 0; round < 200; round++) {
      const { body, placeholders } = renderPieces(randomPage(rnd));
      expect(scanPlaceholders(body)).toEqual(placeholders);
    }
  });

  it('scans byte offsets, not character offsets, in any ASCII-compatible encoding', () => {
    const latin = Buffer.concat([Buffer.from('Caf\xe9 \xe9\xe9 ', 'latin1'), Buffer.from(renderPlaceholder('filter', 'X/1'))]);
    expect(scanPlaceholders(latin)).toEqual([{ sku: 'X/1', offset: 8, length: renderPlaceholder('filter', 'X/1').length }]);
    const utf8 = Buffer.from(`€€ ${renderPlaceholder('filter', 'Y')}`);
    expect(scanPlaceholders(utf8)[0].offset).toBe(7);
  });

  it('gzip splices values larger than one stored block', () => {
    const parts = [Buffer.from('a'), Buffer.from('b')];
    const big = Buffer.alloc(200_000, 'p');
    expect(zlib.gunzipSync(gzipFilled(parts, deflateParts(parts), [big])).equals(Buffer.concat([parts[0], big, parts[1]]))).toBe(true);
  });
});

describe('placeholders', () => {
  it.each([
    ['filter', '<!--prerender:price sku=SKU%2F1%20%22x%22-->'],
    ['ssi', '<!--# include virtual="/price?sku=SKU%2F1%20%22x%22" -->'],
    ['esi', '<esi:include src="/price?sku=SKU%2F1%20%22x%22"/>'],
  ])('%s form is ASCII and cannot be broken by the SKU', (mode, expected) => {
    const text = renderPlaceholder(/** @type {any} */ (mode), 'SKU/1 "x"');
    expect(text).toBe(expected);
    expect(/^[\x20-\x7e]+$/.test(text)).toBe(true);
    expect(renderPlaceholder(/** @type {any} */ (mode), "--><script>'()*")).not.toMatch(/<script|'|\(|\*/);
  });

  it('rejects price paths that could break out of the attribute', () => {
    expect(renderPlaceholder('ssi', 'A', { pricePath: '/shop/price' })).toBe('<!--# include virtual="/shop/price?sku=A" -->');
    for (const bad of ['price', '/p"x', '/p -->', '/p?x=1', '/p\u00e9']) {
      expect(() => renderPlaceholder('esi', 'A', { pricePath: bad })).toThrow(TypeError);
    }
  });
});
