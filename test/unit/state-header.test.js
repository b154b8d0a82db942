// @ts-check
import { describe, expect, it } from 'vitest';
import { outputOf } from '../../lib/recrawl/prior.js';

/** @param {Partial<import('../../lib/recrawl/state.js').StateHeader>} fields */
const header = (fields) => /** @type {import('../../lib/recrawl/state.js').StateHeader} */ ({ format: 'prerender-state', version: 1, complete: true, roots: [], finishedAt: '', ...fields });

describe('outputOf: the output key and the formats tried, from a state header', () => {
  it('takes both as written by this version', () => {
    expect(outputOf(header({ output: '["ssi"]', precompressed: ['gzip'] }))).toEqual({ output: '["ssi"]', precompressed: ['gzip'] });
    expect(outputOf(header({ output: '["ssi"]', precompressed: [] }))).toEqual({ output: '["ssi"]', precompressed: [] });
  });

  it('takes --precompress out of the key of an older state, whose pages count as tried in no format', () => {
    const old = JSON.stringify(['ssi', '/prices', null, 'https://s/', ['http://o'], ['gzip', 'br'], false, null]);
    const now = JSON.stringify(['ssi', '/prices', null, 'https://s/', ['http://o'], false, null]);
    expect(outputOf(header({ output: old }))).toEqual({ output: now, precompressed: [] });
    const without = JSON.stringify(['ssi', '/prices', null, 'https://s/', ['http://o'], [], false, null]);
    expect(outputOf(header({ output: without })).output).toBe(now);
  });

  it('leaves a key it does not know as it is (it then differs, and nothing is kept as it is)', () => {
    expect(outputOf(header({ output: 'not json' }))).toEqual({ output: 'not json', precompressed: [] });
    expect(outputOf(header({ output: '[1,2,3]' }))).toEqual({ output: '[1,2,3]', precompressed: [] });
    expect(outputOf(header({}))).toEqual({ output: '', precompressed: [] });
  });
});
