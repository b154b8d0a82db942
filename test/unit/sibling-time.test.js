// @ts-check
import { execFileSync } from 'node:child_process';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalTree } from '../../lib/output/local.js';
import { tempDirs } from '../crawl-helpers.js';

/**
 * A precompressed sibling beside a file left as it is must never be older
 * than it (nginx's gzip_static serves a sibling only as new as its source,
 * and the re-crawl judges siblings by it). Times reach the file system
 * through a double and libuv's whole microseconds: for some nanosecond
 * digits of the source's time (a file written by the kernel has them all),
 * "its time, plus a microsecond when older" still came out older.
 */
describe('LocalTree: a sibling beside a file left as it is', () => {
  const dirs = tempDirs();
  /** @type {string} */
  let dir;
  beforeEach(async () => {
    dir = await dirs.make('prerender-sibling-time-');
  });
  afterEach(() => dirs.cleanup());

  it.each(['613107034', '000000999', '999999001', '000000000', '500000500', '123456789'])('is never older than its source, and less than 2 µs newer (source at .%s s)', async (fraction) => {
    for (let second = 1795812825; second < 1795812825 + 8; second++) {
      const source = path.join(dir, 'page.html');
      await writeFile(source, '<p>kept</p>');
      // Nanoseconds as the kernel writes them (GNU touch takes them whole).
      execFileSync('touch', ['-d', `@${second}.${fraction}`, source]);
      const tree = new LocalTree(dir);
      await tree.init();
      await tree.write('page.html.gz', Buffer.from('gz'), { sameTimeAs: 'page.html' });
      await tree.commit();
      const sourceTime = (await stat(source, { bigint: true })).mtimeNs;
      const siblingTime = (await stat(`${source}.gz`, { bigint: true })).mtimeNs;
      expect(siblingTime >= sourceTime, `${siblingTime} against ${sourceTime}`).toBe(true);
      expect(Number(siblingTime - sourceTime)).toBeLessThan(2000);
    }
  });
});
