// @ts-check
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HOOK_NAMES, Hooks } from '../../lib/engine/hooks.js';
import { plugFeatures } from '../../lib/engine/features.js';

const page = (/** @type {string} */ key) => /** @type {any} */ ({ key, record: { key }, result: undefined, url: undefined, scan: null, finished: false });

/** A run with only what plugFeatures reads. @param {Record<string, unknown>} parts */
const runWith = (parts) => /** @type {any} */ ({
  hooks: new Hooks(), resumed: null, journal: null, unasked: null, prior: null, ignore: null, revalidator: null, early: null, options: { precompress: [] }, ...parts,
});

describe('the engine hooks', () => {
  it('is a fixed list: an unknown hook is refused by name', () => {
    const hooks = new Hooks();
    expect(() => hooks.on(/** @type {any} */ ('beforeWrite'), 'x', () => {})).toThrow(/no engine hook "beforeWrite": the hooks are beforeFetch, requestHeaders/);
    expect(Object.keys(hooks.features())).toEqual([...HOOK_NAMES]);
  });

  it('beforeFetch asks in order and stops at the first that settles the page', async () => {
    const hooks = new Hooks();
    /** @type {string[]} */
    const asked = [];
    hooks.on('beforeFetch', 'a', async (p) => { asked.push(`a:${p.key}`); return p.key === '/a'; });
    hooks.on('beforeFetch', 'b', async (p) => { asked.push(`b:${p.key}`); return true; });
    expect(await hooks.beforeFetch(page('/a'))).toBe(true);
    expect(await hooks.beforeFetch(page('/c'))).toBe(true);
    expect(asked).toEqual(['a:/a', 'a:/c', 'b:/c']);
    expect(await new Hooks().beforeFetch(page('/a'))).toBe(false);
  });

  it('requestHeaders merges what each handler adds; none gives no headers', () => {
    const hooks = new Hooks();
    expect(hooks.requestHeaders(page('/'))).toBeUndefined();
    hooks.on('requestHeaders', 'a', () => ({ 'if-none-match': '"1"' }));
    hooks.on('requestHeaders', 'b', () => undefined);
    hooks.on('requestHeaders', 'c', () => ({ 'x-extra': 'y' }));
    expect(hooks.requestHeaders(page('/'))).toEqual({ 'if-none-match': '"1"', 'x-extra': 'y' });
  });

  it('sameAs asks every handler (each may set the record), and is true when any says so', async () => {
    const hooks = new Hooks();
    const record = /** @type {any} */ ({ key: '/' });
    hooks.on('sameAs', 'a', async (r) => { r.a = true; return false; });
    hooks.on('sameAs', 'b', async (r) => { r.b = true; return true; });
    expect(await hooks.sameAs(record, Buffer.from('x'), undefined, false)).toBe(true);
    expect(record).toMatchObject({ a: true, b: true });
    expect(await new Hooks().sameAs(record, Buffer.from('x'), undefined, true)).toBe(false);
  });

  it('a run plugs only the features its parts call for, in a fixed order', () => {
    expect(Object.values(plugFeatures_(runWith({}))).flat()).toEqual([]);
    const features = plugFeatures_(runWith({
      resumed: new Map(), journal: { add() {} }, unasked: {}, prior: { pages: new Map() }, ignore: /x/g,
      revalidator: { forget() {} }, early: { visited() {}, drop() {} }, options: { precompress: ['gzip'] },
    }));
    expect(features).toEqual({
      beforeFetch: ['resume', 'carried unasked'],
      requestHeaders: ['re-crawl'],
      sameAs: ['--ignore'],
      recorded: ['resume'],
      afterPage: ['revalidation', 'early writes'],
      mustRemake: ['--precompress'],
      afterWrite: ['--precompress'],
      afterPass: ['early writes'],
    });
  });

  it('a journal alone (a first run that can be resumed later) notes pages but resumes none', () => {
    expect(plugFeatures_(runWith({ journal: { add() {} } }))).toMatchObject({ beforeFetch: [], recorded: ['resume'] });
  });

  it('the fetch and write phases name none of the features that plug into hooks', () => {
    const engine = path.join(import.meta.dirname, '..', '..', 'lib', 'engine');
    for (const file of ['fetch-phase.js', 'write-phase.js', 'write-page.js']) {
      const code = readFileSync(path.join(engine, file), 'utf8').split('\n').filter((line) => !/^\s*(\/\/|\*|\/\*\*)/.test(line)).join('\n');
      expect(code, file).not.toMatch(/\b(journal|resumed|unasked|revalidator|run\.ignore|precompress\(|compareHash)\b/);
    }
  });
});

/** @param {any} run */
function plugFeatures_(run) {
  plugFeatures(run);
  return run.hooks.features();
}
