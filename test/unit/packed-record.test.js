// @ts-check
/**
 * The shared crawl's records in Redis (lib/distributed/packed.js): every
 * field comes back as it went in, blob ids take 32 bytes instead of 64, and
 * a catalogue page's record stays small enough for ~250 B per URL at rest.
 */
import { describe, expect, it } from 'vitest';
import { newRecord } from '../../lib/store/records.js';
import { decodeStored, storedValue } from '../../lib/distributed/packed.js';

const HEX = 'ab'.repeat(32);

/** A record as a worker leaves a catalogue page. */
function cataloguePage() {
  const record = newRecord('http://shop.example/st/product.asp?SKUSetID=123456', 'navigation', null);
  Object.assign(record, {
    state: 'done', referrers: undefined, status: 200, contentType: 'text/html; charset=windows-1252', type: 'html', charset: 'windows-1252',
    etag: '"1e240-5d8c72a5"', wanted: 'st/product123456.htm', body: HEX, scan: '0123456789abcdef'.repeat(4), change: 'new',
  });
  return record;
}

describe('records packed for Redis', () => {
  it('give back every field of a done page, its place in the seen-set first', () => {
    const record = cataloguePage();
    const value = storedValue(record);
    expect(String.fromCharCode(value[0])).toBe('d');
    expect(decodeStored(value, record.key)).toEqual(record);
    expect(value.length).toBeLessThan(160);
  });

  it('keep what has no compact form: long numbers, odd charsets, failures, redirects, fields added later', () => {
    const record = newRecord('http://h/a', 'requisite', 'http://h/');
    Object.assign(record, {
      state: 'failed', referrers: undefined, status: 503, contentType: 'text/css', charset: 'utf-8', hops: 2, via: 'http://h/old', stale: true,
      error: { status: 503, message: 'HTTP 503 — “busy”', code: 'HTTP_503' }, bytes: 2 ** 40, sha256: 'ABC', compressed: ['gz', 'br'],
      render: { ms: 12 }, laterField: { x: 1 },
    });
    const value = storedValue(record);
    expect(String.fromCharCode(value[0])).toBe('x');
    expect(decodeStored(value, record.key)).toEqual(record);
    const redirect = newRecord('http://h/r', 'navigation', null);
    Object.assign(redirect, { state: 'redirect', referrers: undefined, status: 301, location: 'http://h/ü?q=1' });
    expect(decodeStored(storedValue(redirect), redirect.key)).toEqual(redirect);
  });

  it('keep queued records as JSON the Lua scripts can read, and read what the scripts write', () => {
    const queued = newRecord('http://h/q', 'requisite', null);
    queued.referrers = undefined;
    queued.via = 'http://h/from';
    queued.hops = 1;
    const value = storedValue(queued);
    expect(value.toString('utf8')).toBe('r{"kind":"requisite","state":"queued","via":"http://h/from","hops":1}');
    expect(decodeStored(value, queued.key)).toEqual(queued);
    const fresh = newRecord('http://h/n', 'requisite', null);
    fresh.referrers = undefined;
    expect(decodeStored(Buffer.from('R'), fresh.key)).toEqual(fresh);
    expect(decodeStored(Buffer.from('x{"state":"failed","kind":"requisite","error":{"code":"MAX_DELIVERIES","message":"m"}}'), fresh.key))
      .toEqual({ ...fresh, state: 'failed', error: { code: 'MAX_DELIVERIES', message: 'm' } });
  });
});
