// @ts-check
import { describe, expect, it } from 'vitest';
import { createSampler, shapeOf } from '../../lib/engine/sample.js';

describe('preview --sample: URL shapes', () => {
  it.each([
    ['gitweb: the action is kept, the hash is not', 'http://g/gitweb.cgi?p=r.git;a=commit;h=1a2b', 'http://g/gitweb.cgi?p&a=commit&h'],
    ['gitweb: another action is another shape', 'http://g/gitweb.cgi?p=r.git;a=tree;h=1a2b', 'http://g/gitweb.cgi?p&a=tree&h'],
    ['MediaWiki: a title is its directory', 'http://w/index.php/Main_Page', 'http://w/index.php/'],
    ['MediaWiki: an action', 'http://w/index.php?title=Main_Page&action=edit', 'http://w/index.php?title&action=edit'],
    ['a static page is its directory', 'http://s/docs/a.html', 'http://s/docs/'],
  ])('%s', (_, url, shape) => {
    expect(shapeOf(url)).toBe(shape);
  });

  it('takes two of each shape, n in all, and answers the same for a URL each time', () => {
    const sampler = createSampler(3);
    const urls = ['http://g/x?a=commit;h=1', 'http://g/x?a=commit;h=2', 'http://g/x?a=commit;h=3', 'http://g/x?a=tree', 'http://g/x?a=blob'];
    expect(urls.map((url) => sampler.take(url))).toEqual([true, true, false, true, false]);
    expect(urls.map((url) => sampler.take(url))).toEqual([true, true, false, true, false]);
  });
});
