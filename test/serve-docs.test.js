// @ts-check
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as serve from '../lib/serve/index.js';

const PAGE = fs.readFileSync(path.resolve(import.meta.dirname, '../docs/serve.md'), 'utf8');
// The reference of serving, docs/serve.md (kept between markers).
const DOC = PAGE.slice(PAGE.indexOf('<!-- serve-docs:start -->'), PAGE.indexOf('<!-- serve-docs:end -->'));

describe('docs/serve.md', () => {
  it('is there', () => {
    expect(DOC.length).toBeGreaterThan(1000);
  });

  it('lists every option with its real default, and no others', () => {
    const rows = [...DOC.matchAll(/^\| `(\w+)` \| ([^|]+) \|/gm)].map((m) => [m[1], m[2].trim()]);
    const documented = new Map(rows);
    const expected = [...Object.keys(serve.SERVE_DEFAULTS), 'root', 'prices', 'logger'];
    expect([...documented.keys()].sort()).toEqual(expected.sort());
    for (const [name, value] of Object.entries(serve.SERVE_DEFAULTS)) {
      const shown = documented.get(name);
      if (value === null) expect(shown).toBe('none');
      else expect(shown).toBe('`' + (typeof value === 'string' ? `'${value}'` : String(value)) + '`');
    }
  });

  it('names only functions the package exports', () => {
    for (const name of ['createPriceFilter', 'createServer', 'runServeCommand']) {
      expect(DOC).toContain(name);
      expect(typeof (/** @type {any} */ (serve))[name]).toBe('function');
    }
  });
});
