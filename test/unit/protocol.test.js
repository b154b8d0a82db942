// @ts-check
import { describe, expect, it } from 'vitest';
import { VERSION, protocolOf } from '../../lib/distributed/identity.js';
import { DONE, TAKE } from '../../lib/distributed/scripts.js';

/**
 * The version processes of one shared crawl compare: the release and a
 * fingerprint of the Redis scripts, so that two checkouts of one release
 * whose scripts differ refuse each other.
 */
describe('the version a process of a shared crawl gives', () => {
  it('is the release with the fingerprint of its scripts', () => {
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+(-[\w.]+)?\+[0-9a-f]{8}$/);
  });

  it('changes with any script, and only with them', () => {
    const same = protocolOf([TAKE, DONE]);
    expect(protocolOf([TAKE, DONE])).toBe(same);
    expect(protocolOf([TAKE, DONE.replace('RPUSH', 'LPUSH')])).not.toBe(same);
    expect(protocolOf([TAKE, DONE, 42])).toBe(same); // what is not a script's text is not part of it
  });
});
