// @ts-check
import { describe, expect, it } from 'vitest';
import { parseRetryAfter, retryDelayMs } from '../../lib/fetch/retry.js';
import { FetchError, HttpStatusError, PageTooLargeError, TimeoutError, UsageError, isRetryable } from '../../lib/errors.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    ['0', 0],
    ['5', 5000],
    [' 12 ', 12_000],
    ['Thu, 01 Jan 2026 00:00:30 GMT', 30_000],
    ['Wed, 31 Dec 2025 23:59:00 GMT', 0], // in the past: now
    ['soon', undefined],
    ['', undefined],
    ['10s', undefined],
    ['1 minute', undefined],
  ])('%j -> %j ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it('no header, or a repeated one, is no hint', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(['1', '2'], now)).toBeUndefined();
  });
  // (fractional and negative values: see test/crawl-bugs.test.js)
});

describe('retryDelayMs: exponential backoff with jitter, or the server\'s Retry-After', () => {
  const base = { retryDelay: 100, maxRetryAfter: 60_000 };

  it('doubles with each attempt; jitter adds at most one base delay', () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, { ...base, random: () => 0 }))).toEqual([100, 200, 400, 800]);
    expect(retryDelayMs(3, { ...base, random: () => 0.5 })).toBe(450);
    expect(retryDelayMs(3, { ...base, random: () => 0.999 })).toBeLessThan(500);
  });

  it('is capped', () => {
    expect(retryDelayMs(30, { ...base, random: () => 0 })).toBeLessThanOrEqual(30_000);
  });

  it('Retry-After wins over the backoff, capped by maxRetryAfter', () => {
    expect(retryDelayMs(5, { ...base, retryAfterMs: 0, random: () => 0.9 })).toBe(0);
    expect(retryDelayMs(1, { ...base, retryAfterMs: 2000 })).toBe(2000);
    expect(retryDelayMs(1, { ...base, retryAfterMs: 3_600_000 })).toBe(60_000);
  });
});

describe('what is retried comes from the error class', () => {
  it.each([
    [new HttpStatusError(500), true],
    [new HttpStatusError(503), true],
    [new HttpStatusError(429), true],
    [new HttpStatusError(404), false],
    [new HttpStatusError(403), false],
    [new FetchError('ECONNRESET'), true],
    [new TimeoutError('no answer'), true],
    [new PageTooLargeError('too big'), false],
    [new UsageError('bad'), false],
    [new Error('HTTP 500'), false],
  ])('%s', (error, expected) => {
    expect(isRetryable(error)).toBe(expected);
  });
});

describe('an invalid Retry-After is no hint (not a date in 2000, not "retry at once")', () => {
  // RFC 9110: delay-seconds is 1*DIGIT; anything else that is not an HTTP-date is no hint (use the backoff).
  it.each(['1.5', '2.5', '0.5', '-3'])('Retry-After: %s is no hint', (value) => {
    expect(parseRetryAfter(value, Date.parse('2026-01-01T00:00:00Z'))).toBeUndefined();
  });
});
