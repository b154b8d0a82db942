// @ts-check
import { describe, expect, it } from 'vitest';
import { extensionFits, extensionForType, typeForPath } from '../../lib/naming/mime.js';
import { defaultFileName } from '../../lib/naming/file-names.js';

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

  it('keeps an extension that is one of the type\'s own, under another name of the type (no favicon.ico.ico)', () => {
    expect(extensionFits('favicon.ico', 'image/x-icon')).toBe(true);
    expect(extensionFits('song.mp3', 'audio/mp3')).toBe(true);
    expect(extensionFits('SONG.MP3', 'audio/mpeg')).toBe(true);
    expect(defaultFileName(new URL('http://h/favicon.ico'), 'image/x-icon')).toBe('favicon.ico');
    expect(defaultFileName(new URL('http://h/m/song.mp3'), 'audio/mp3')).toBe('m/song.mp3');
    // An extension that says another type still gets the type's own.
    expect(defaultFileName(new URL('http://h/thumb.php'), 'image/jpeg')).toBe('thumb.php.jpg');
    expect(defaultFileName(new URL('http://h/a.css'), 'text/plain')).toBe('a.css.txt');
  });

  it('serves by extension with the same table', () => {
    expect(typeForPath('x/site.css')).toBe('text/css');
    expect(typeForPath('app.js')).toBe('text/javascript');
    expect(typeForPath('file.unknownext')).toBe('application/octet-stream');
  });
});
