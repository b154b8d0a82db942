// @ts-check
import { describe, expect, it } from 'vitest';
import { worthTrying } from '../../lib/engine/precompress.js';

describe('which files --precompress tries', () => {
  it.each(['text/html; charset=utf-8', 'text/css', 'application/javascript', 'application/x-javascript', 'text/x-javascript', 'text/javascript',
    'application/json', 'application/ld+json', 'application/xml', 'application/rss+xml', 'image/svg+xml', 'text/plain'])('%s, 1 KiB or more, no price slot', (type) => {
    expect(worthTrying(type, 1024, [])).toBe(true);
    expect(worthTrying(type, 1023, [])).toBe(false);
    expect(worthTrying(type, 4096, [{ sku: 'A' }])).toBe(false);
  });

  it.each(['image/png', 'image/jpeg', 'application/octet-stream', 'font/woff2', 'application/zip', undefined])('never %s', (type) => {
    expect(worthTrying(type, 100_000, [])).toBe(false);
  });
});
