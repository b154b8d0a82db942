// @ts-check
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { LocalTree } from '../../lib/output/local-tree.js';

/** What LocalTree.resolve gave before its quick path: path.resolve over the name's segments, refused outside OUT. @param {string} out @param {string} file */
function reference(out, file) {
  const absolute = path.resolve(out, ...file.split('/'));
  return absolute.startsWith(out + path.sep) ? absolute : 'refused';
}

/** @param {LocalTree} tree @param {string} file */
function resolved(tree, file) {
  try {
    return tree.resolve(file);
  } catch {
    return 'refused';
  }
}

describe('LocalTree.resolve', () => {
  it('gives what path.resolve gives for every name, plain or not; refuses the same ones', () => {
    const tree = new LocalTree('/tmp/prerender-out');
    const parts = ['a', 'b.htm', '.', '..', '', '.h', '..x', 'x..', 'n\0ul', 'st'];
    /** @type {string[]} */ const names = ['', '/', '.', '..', 'a', '/a', 'a/', 'a//b', 'st/product.asp?x=1.html'];
    // Every name of up to three segments from `parts`: 1,110 names.
    for (const a of parts) {
      names.push(a);
      for (const b of parts) {
        names.push(`${a}/${b}`);
        for (const c of parts) names.push(`${a}/${b}/${c}`);
      }
    }
    for (const name of names) expect(resolved(tree, name), JSON.stringify(name)).toBe(reference(tree.out, name));
  });
});
