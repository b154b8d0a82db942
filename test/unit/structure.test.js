// @ts-check
import { describe, expect, it } from 'vitest';
import { measure } from '../helpers/structure.js';

/**
 * The engine's shape stays readable (ARCHITECTURE.md, "Rules"): the limits
 * below are checked on every run of the suite, so that they stay true.
 */
describe('the shape of lib/', () => {
  const report = measure();

  it('has no import cycle', () => {
    expect(report.cycles).toEqual([]);
  });

  it('imports only from its own layer or a lower one, and every module has a layer', () => {
    expect(report.upward).toEqual([]);
    expect(report.unlayered).toEqual([]);
  });

  it('keeps at most 8 files at lib/\'s root', () => {
    expect(report.rootFiles.length).toBeLessThanOrEqual(8);
  });

  it('keeps every file under 500 lines', () => {
    expect(report.longFiles).toEqual([]);
  });

  it('keeps every function under 150 lines', () => {
    expect(report.longFunctions).toEqual([]);
  });

  it('keeps comments at most a quarter of lib/\'s lines', () => {
    expect(report.commentShare).toBeLessThanOrEqual(0.25);
  });

  it('gives no two modules the same file name', () => {
    expect(report.repeatedNames).toEqual([]);
  });
});

