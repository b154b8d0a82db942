// @ts-check
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ownerGone, ownerRecord } from '../../lib/render/profiles.js';
import { startTicks } from '../../lib/runtime/processes.js';

/** A render profile's owner is gone only when that is certain (lib/render/profiles.js). */
describe('the owner of a render profile', () => {
  const linux = process.platform === 'linux';

  it('is alive while its process runs, and gone once it has exited', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    const owner = ownerRecord(/** @type {number} */ (child.pid));
    expect(ownerGone(owner)).toBe(false);
    child.kill('SIGKILL');
    await once(child, 'exit');
    expect(ownerGone(owner)).toBe(true);
  });

  it.runIf(linux)('is gone when its pid runs a process started at another time (reused), or since another boot', () => {
    const mine = ownerRecord();
    expect(mine.start).toBe(startTicks(process.pid));
    expect(ownerGone(mine)).toBe(false);
    expect(ownerGone({ ...mine, start: String(Number(mine.start) + 1) })).toBe(true);
    expect(ownerGone({ ...mine, boot: 'another-boot' })).toBe(true);
  });

  it('of another host is never taken for gone', () => {
    expect(ownerGone({ ...ownerRecord(), pid: 2 ** 22 + 1, host: 'elsewhere.example' })).toBe(false);
  });
});
