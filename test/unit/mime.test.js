// @ts-check
import { describe, expect, it } from 'vitest';
import { extensionFits, extensionForType, typeForPath } from '../../lib/mime.js';
import { defaultFileName } from '../../lib/naming.js';

describe('one media type table (mime-types) for naming and serving', () => {
  it.each([
    ['text/css; charset=utf-8', '.css'], ['text/javascript', '.js'], ['application/javascript', '.js'],
    ['application/json', '.json'], ['application/xml', '.xml'], ['text/xml', '.xml'], ['text/plain', '.txt'],
    ['application/pdf', '.pdf'], ['image/png', '.png'], ['image/jpeg', '.jpg'], ['image/gif', '.gif'],
    ['image/svg+xml', '.svg'], ['image/webp', '.webp'], ['image/x-icon', '.ico'], ['image/vnd.microsoft.icon', '.ico'],
    ['font/woff', '.woff'], ['font/woff2', '.woff2'], ['application/octet-stream', undefined], ['', undefined],
  ])('%s -> %s', (type, extension) => {
    expect(extensionForType(type)).toBe(extension);
  });

  it('keeps an extension that already says the type', () => {
    expect(extensionFits('photo.jpeg', 'image/jpeg')).toBe(true);
    expect(extensionFits('app.mjs', 'application/javascript')).toBe(true);
    expect(extensionFits('data.txt', 'application/json')).toBe(false);
    expect(defaultFileName(new URL('http://h/a/photo.jpeg'), 'image/jpeg')).toBe('a/photo.jpeg');
    expect(defaultFileName(new URL('http://h/a/style'), 'text/css')).toBe('a/style.css');
  });

  it('serves by extension with the same table', () => {
    expect(typeForPath('x/site.css')).toBe('text/css');
    expect(typeForPath('app.js')).toBe('text/javascript');
    expect(typeForPath('file.unknownext')).toBe('application/octet-stream');
  });
});
