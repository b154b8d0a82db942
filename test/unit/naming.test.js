// @ts-check
import { describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { FileRegistry, defaultFileName, headerFileName } from '../../lib/naming/file-names.js';
import { UnsafeFileNameError } from '../../lib/errors.js';

const NAMING = pathToFileURL(fileURLToPath(new URL('../../lib/naming/file-names.js', import.meta.url))).href;

/**
 * Claim names in a fresh FileRegistry inside a worker, so that an endless
 * loop (a past bug) fails the test instead of hanging the suite.
 * @param {string[]} names
 * @returns {Promise<{ file: string, collidedWith?: string }[] | 'hung' | { error: string }>}
 */
async function claimInWorker(names) {
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.naming).then(({ FileRegistry }) => {
      const registry = new FileRegistry();
      parentPort.postMessage(workerData.names.map((name, i) => registry.claim(name, 'http://h/' + i)));
    });
  `, { eval: true, workerData: { naming: NAMING, names } });
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  try {
    return await Promise.race([
      once(worker, 'message').then(([message]) => message),
      once(worker, 'error').then(([error]) => ({ error: String(error?.message ?? error) })).catch((error) => ({ error: String(error?.message ?? error) })),
      new Promise((resolve) => { timer = setTimeout(() => resolve('hung'), 5000); }),
    ]);
  } finally {
    clearTimeout(timer);
    await worker.terminate();
  }
}

const HTML = 'text/html; charset=utf-8';

/**
 * Whatever the input, a name must stay inside the output directory on every OS.
 * @param {string} file
 */
function expectSafe(file) {
  expect(file).not.toBe('');
  expect(file.startsWith('/')).toBe(false);
  expect(file).not.toMatch(/\\|\u0000/);
  expect(file).not.toMatch(/^[A-Za-z]:/);
  for (const segment of file.split('/')) {
    expect(segment).not.toBe('');
    expect(segment).not.toBe('.');
    expect(segment).not.toBe('..');
    expect(Buffer.byteLength(segment)).toBeLessThanOrEqual(255);
  }
}

describe('defaultFileName: a deterministic name from the URL', () => {
  it.each([
    // [url, content type, expected]
    ['http://h/', HTML, 'index.html'],
    ['http://h/infodir/', HTML, 'infodir/index.html'],
    ['http://h/infodir/about.asp', HTML, 'infodir/about.asp.html'],
    ['http://h/st/product.asp?SKUSetID=7', HTML, 'st/product.asp@SKUSetID=7.html'],
    ['http://h/st/dir.asp?Start=3&Count=2', HTML, 'st/dir.asp@Start=3&Count=2.html'],
    ['http://h/about.htm', HTML, 'about.htm'],
    ['http://h/about.html', HTML, 'about.html'],
    ['http://h/ABOUT.HTM', HTML, 'ABOUT.HTM'],
    ['http://h/about', HTML, 'about.html'],
    ['http://h/about.htm?x=1', HTML, 'about.htm@x=1.html'],
    ['http://h/a/?page=2', HTML, 'a/index@page=2.html'],
    ['http://h/x', 'application/xhtml+xml', 'x.html'],
    // % and / in the query become _; so do the characters Windows refuses.
    ['http://h/s.asp?q=a/b%20c', HTML, 's.asp@q=a_b_20c.html'],
    ['http://h/s.asp?a=<b>|"c"*:?', HTML, 's.asp@a=_3Cb_3E|_22c_22__?'.replace(/[|?]/g, '_') + '.html'],
    ['http://h/s.asp?path=..%2F..%2Fetc', HTML, 's.asp@path=.._2F.._2Fetc.html'],
    ['http://h/a:b/c:d.asp', HTML, 'a_b/c_d.asp.html'],
    ['http://h/a%2Fb.asp', HTML, 'a%2Fb.asp.html'],
    ['http://h/a%5Cb.asp', HTML, 'a%5Cb.asp.html'], // a decoded backslash would be a separator on Windows: kept encoded
    ['http://h/a//b.asp', HTML, 'a/b.asp.html'],
    ['http://h/a/%2e%2e/b.asp', HTML, 'b.asp.html'],
    ['http://h/%2e/x.asp', HTML, 'x.asp.html'],
    ['http://h/caf%C3%A9/cr%C3%A8me.asp', HTML, 'café/crème.asp.html'],
    ['http://h/cafe%CC%81.asp', HTML, 'café.asp.html'], // NFC
    ['http://h/%E9t%E9.asp', HTML, '%E9t%E9.asp.html'], // not UTF-8: kept encoded
    ['http://h/a%01b.asp', HTML, 'a_b.asp.html'],
    ['http://h/a%00b.asp', HTML, 'a%00b.asp.html'],
    // Not HTML: the name is kept; an extension comes from the type when missing.
    ['http://h/img/logo.png', 'image/png', 'img/logo.png'],
    ['http://h/img/noext', 'image/png', 'img/noext.png'],
    ['http://h/img/photo.jpeg', 'image/jpeg', 'img/photo.jpeg'],
    ['http://h/css/site.css', 'text/css; charset=utf-8', 'css/site.css'],
    ['http://h/css/site', 'text/css', 'css/site.css'],
    ['http://h/js/app.mjs', 'text/javascript', 'js/app.mjs'],
    ['http://h/data', 'application/json', 'data.json'],
    ['http://h/blob.bin', 'application/octet-stream', 'blob.bin'],
    ['http://h/img/x.png?v=3', 'image/png', 'img/x.png@v=3.png'],
  ])('%s (%s) -> %s', (url, type, expected) => {
    const name = defaultFileName(new URL(url), type);
    expect(name).toBe(expected);
    expectSafe(name);
  });

  it('a directory URL is index.html even without a content type', () => {
    expect(defaultFileName(new URL('http://h/infodir/'), undefined)).toBe('infodir/index.html');
  });

  it('keeps long names under the file system limit, deterministically and distinctly', () => {
    const long = 'a'.repeat(300);
    const one = defaultFileName(new URL(`http://h/d/${long}.asp?x=1`), HTML);
    const again = defaultFileName(new URL(`http://h/d/${long}.asp?x=1`), HTML);
    const other = defaultFileName(new URL(`http://h/d/${long}.asp?x=2`), HTML);
    expect(one).toBe(again);
    expect(one).not.toBe(other);
    expect(one.startsWith('d/aaaa')).toBe(true);
    expect(one.endsWith('.html')).toBe(true);
    expectSafe(one);
    const longDir = defaultFileName(new URL(`http://h/${'é'.repeat(200)}/x.asp`), HTML);
    expectSafe(longDir);
    expect(longDir.endsWith('/x.asp.html')).toBe(true);
  });

  it('two URLs differing only in their query get different names', () => {
    expect(defaultFileName(new URL('http://h/p.asp?id=1'), HTML)).not.toBe(defaultFileName(new URL('http://h/p.asp?id=2'), HTML));
  });
});

describe('headerFileName: the X-Builder-FileName value', () => {
  const page = new URL('http://h/st/product.asp?SKUSetID=7');

  it.each([
    ['product7.htm', 'st/product7.htm'],
    ['  product7.htm  ', 'st/product7.htm'],
    ['./product7.htm', 'st/product7.htm'],
    ['product7.html', 'st/product7.html'],
    ['product7', 'st/product7.html'],
    ['product7.asp', 'st/product7.asp.html'],
    ['sub/product7.htm', 'st/sub/product7.htm'],
    ['sub/', 'st/sub/index.html'],
    ['/product7.htm', 'product7.htm'],
    ['/catalog/product7.htm', 'catalog/product7.htm'],
    ['/etc/passwd', 'etc/passwd.html'], // relative to the output root, by design
    ['produkt-grün.htm', 'st/produkt-grün.htm'],
    ['/.well-known/security.txt', '.well-known/security.txt.html'],
  ])('%j -> %j', (value, expected) => {
    const name = headerFileName(value, page, HTML);
    expect(name).toBe(expected);
    expectSafe(name);
  });

  it('a bare name on a root-level page goes at the output root', () => {
    expect(headerFileName('home.htm', new URL('http://h/default.asp'), HTML)).toBe('home.htm');
  });

  it('a non-HTML page keeps an extension matching its type', () => {
    expect(headerFileName('logo', page, 'image/png')).toBe('st/logo.png');
    expect(headerFileName('feed.xml', page, 'application/xml')).toBe('st/feed.xml');
  });

  it.each([
    ['../x.htm'],
    ['..'],
    ['a/../../x.htm'],
    ['a/..'],
    ['/../x.htm'],
    ['/a/../../x.htm'],
    ['a\\b.htm'],
    ['..\\x.htm'],
    ['\\\\server\\share\\x.htm'],
    ['C:\\x.htm'],
    ['c:x.htm'],
    ['C:/x.htm'],
    ['x\u0000.htm'],
    ['x\n.htm'],
    ['x\r\n.htm'],
    ['%2e%2e/x.htm'],
    ['%2E%2E%2Fx.htm'],
    ['..%2Fx.htm'],
    ['a%5Cb.htm'],
    ['x%00.htm'],
    ['//server/x.htm'],
    ['//etc/passwd'],
    [''],
    ['   '],
    ['/'],
    ['.'],
    ['./'],
    ['x?.htm'],
    ['x*.htm'],
    ['a<b>.htm'],
    ['a|b.htm'],
    ['"x".htm'],
    ['a'.repeat(256) + '.htm'],
    ['a'.repeat(252)], // 257 bytes once .html is added
    ['é'.repeat(126) + '.x'], // 254 bytes, 259 with .html
  ])('refuses %j', (value) => {
    let error;
    try {
      headerFileName(value, page, HTML);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UnsafeFileNameError);
    expect(/** @type {Error} */ (error).message).toMatch(/unsafe file name/);
    expect(/** @type {UnsafeFileNameError} */ (error).code).toBe('UNSAFE_FILE_NAME');
  });
});

describe('headerFileName: the quick way for plain names gives what the checks give', () => {
  // A leading space fails the quick way's test, and the full checks trim it: the same name, the slow way.
  const slow = (/** @type {string} */ value, /** @type {URL} */ url, /** @type {string | undefined} */ type) => headerFileName(` ${value}`, url, type);
  /** @param {() => string} run */
  const outcome = (run) => {
    try {
      return run();
    } catch (error) {
      return error instanceof UnsafeFileNameError ? `refused: ${error.message.replace('file name " ', 'file name "')}` : `threw: ${error}`;
    }
  };
  const names = [
    'product7.htm', 'p.html', 'P.HTM', 'index', 'a', '-', '_', 'a.b.c', 'file.php', 'style.css', 'x.png', 'a.', 'a..', 'a-.', 'x.htm.',
    'con', 'CON.htm', 'aux.txt', 'nul.', 'com1', 'COM9.x', 'lpt1.htm', 'prn-x', 'console', 'x'.repeat(255), 'x'.repeat(251),
    `${'y'.repeat(250)}.htm`, 'x'.repeat(256), '0', '9.9', 'a_b-c.d',
  ];
  const types = ['text/html; charset=utf-8', 'text/css', 'image/png', 'application/octet-stream', 'application/json', undefined];
  const paths = ['/', '/st/product.asp?id=1', '/a%20b/c/', '/%2e%2e/x', '/con/x', '/%C3%BCn%C3%AF/x', '/a//b/x', `/x/${'y'.repeat(300)}/z`, '/a:b/c<d>/x', '/dir./x'];
  it('for every name, type and directory tried', () => {
    for (const path of paths) {
      // Each path twice: the second time its directory is remembered.
      for (const round of [1, 2]) {
        for (const name of names) {
          for (const type of types) {
            const url = new URL(`http://shop.test${path}`);
            expect(outcome(() => headerFileName(name, url, type)), `${name} ${type} ${path} (${round})`).toBe(outcome(() => slow(name, url, /** @type {string} */ (type))));
          }
        }
      }
    }
  });
});

describe('FileRegistry: two URLs never share a file', () => {
  it('hands out the wanted name first, then -2, -3 before the extension', () => {
    const registry = new FileRegistry();
    expect(registry.claim('st/same.htm', 'u1')).toEqual({ file: 'st/same.htm' });
    expect(registry.claim('st/same.htm', 'u2')).toEqual({ file: 'st/same-2.htm', collidedWith: 'u1' });
    expect(registry.claim('st/same.htm', 'u3')).toEqual({ file: 'st/same-3.htm', collidedWith: 'u1' });
    expect(registry.claim('st/other.htm', 'u4')).toEqual({ file: 'st/other.htm' });
  });

  it('compares case-insensitively, so the tree survives case-insensitive file systems', () => {
    const registry = new FileRegistry();
    expect(registry.claim('names/Case.htm', 'u1').file).toBe('names/Case.htm');
    const second = registry.claim('names/CASE.HTM', 'u2');
    expect(second.file).toBe('names/CASE-2.HTM');
    expect(second.collidedWith).toBe('u1');
    expect(registry.claim('NAMES/case.htm', 'u3').file).toBe('NAMES/case-3.htm');
  });

  it('skips a suffixed name that another URL already owns', () => {
    const registry = new FileRegistry();
    registry.claim('a-2.html', 'owner-of-a-2');
    registry.claim('a.html', 'u1');
    expect(registry.claim('a.html', 'u2').file).toBe('a-3.html');
  });

  it('suffixes names without an extension and dot-files sensibly', () => {
    const registry = new FileRegistry();
    registry.claim('README', 'u1');
    expect(registry.claim('README', 'u2').file).toBe('README-2');
    registry.claim('d/.hidden', 'u3');
    expect(registry.claim('d/.hidden', 'u4').file).toBe('d/.hidden-2');
  });

  it('a file may not take the name of a directory already in use', () => {
    const registry = new FileRegistry();
    registry.claim('a/b.html', 'u1');
    const result = registry.claim('a', 'u2');
    expect(result.file).toBe('a-2');
    expect(result.collidedWith).toMatch(/directory/);
    expect(registry.claim('A', 'u3').file).toBe('A-3');
  });

  it('a name whose directory is already a file moves aside, recorded as a collision', async () => {
    const result = await claimInWorker(['x.html', 'x.html/index.html', 'X.HTML/a/b.htm']);
    expect(result).not.toBe('hung');
    expect(result).not.toHaveProperty('error');
    const [first, second, third] = /** @type {{ file: string, collidedWith?: string }[]} */ (result);
    expect(first).toEqual({ file: 'x.html' });
    expect(second.file.toLowerCase().startsWith('x.html/')).toBe(false);
    expect(second.file.endsWith('/index.html')).toBe(true);
    expect(second.collidedWith).toBe('http://h/0');
    expect(third.file.toLowerCase().startsWith('x.html/')).toBe(false);
    expect(new Set([first, second, third].map((claim) => claim.file.toLowerCase())).size).toBe(3);
  });

  it('nothing goes under the staging folder', async () => {
    const result = await claimInWorker(['.prerender/x.html', '.Prerender/y.html']);
    expect(result).not.toBe('hung');
    expect(result).not.toHaveProperty('error');
    for (const claim of /** @type {{ file: string }[]} */ (result)) expect(claim.file.toLowerCase().startsWith('.prerender/')).toBe(false);
  });

  it('keeps the manifest name for itself, at the root only', () => {
    const registry = new FileRegistry();
    const first = registry.claim('prerender-manifest.json', 'u1');
    expect(first.file).toBe('prerender-manifest-2.json');
    expect(first.collidedWith).toMatch(/reserved/);
    expect(registry.claim('Prerender-Manifest.JSON', 'u2').file).toBe('Prerender-Manifest-3.JSON');
    expect(registry.claim('sub/prerender-manifest.json', 'u4').file).toBe('sub/prerender-manifest.json');
  });
});

describe('capPath: a whole path stays under 1,024 bytes', () => {
  it('leaves short paths alone and hashes the directories that do not fit', async () => {
    const { capPath, MAX_PATH_BYTES } = await import('../../lib/naming/file-names.js');
    expect(capPath('a/b/c.html')).toBe('a/b/c.html');
    const deep = `${'dir/'.repeat(400)}page.html`;
    const capped = capPath(deep);
    expect(Buffer.byteLength(capped)).toBeLessThanOrEqual(MAX_PATH_BYTES);
    expect(capped.endsWith('/page.html')).toBe(true);
    expect(capped).toMatch(/^(dir\/)+_[0-9a-f]{20}\/page\.html$/);
    expect(capPath(deep)).toBe(capped);
    expect(capPath(`${'dir/'.repeat(401)}page.html`)).not.toBe(capped);
    const wide = `${'é'.repeat(100)}/`.repeat(12) + 'x.html';
    expect(Buffer.byteLength(capPath(wide))).toBeLessThanOrEqual(MAX_PATH_BYTES);
  });
});

describe('decodeNameHeader: header bytes read as UTF-8 when they are UTF-8', () => {
  it.each([
    ['caf\u00c3\u00a9.htm', 'café.htm'],
    ['caf\u00e9.htm', 'caf\u00e9.htm'],
    ['plain.htm', 'plain.htm'],
    ['\u00e2\u0082\u00ac.htm', '€.htm'],
    ['caf\u00c3.htm', 'caf\u00c3.htm'],
  ])('%j -> %j', async (raw, expected) => {
    const { decodeNameHeader } = await import('../../lib/naming/file-names.js');
    expect(decodeNameHeader(raw)).toBe(expected);
  });
});

describe('names every file system can take', () => {
  it.each([
    ['http://h/CON', 'text/html', '_CON.html'],
    ['http://h/aux.asp', 'text/html', '_aux.asp.html'],
    ['http://h/com1.txt', 'text/plain', '_com1.txt'],
    ['http://h/console.asp', 'text/html', 'console.asp.html'],
    ['http://h/.htaccess', 'text/plain', '_.htaccess.txt'],
    ['http://h/.well-known/x.txt', 'text/plain', '.well-known/x.txt'],
    ['http://h/dir./x.txt', 'text/plain', 'dir_/x.txt'],
    ['http://h/dir%20/x.txt', 'text/plain', 'dir_/x.txt'],
    ['http://h/nul/x.txt', 'text/plain', '_nul/x.txt'],
  ])('default name of %s (%s) is %s', async (url, type, expected) => {
    const { defaultFileName } = await import('../../lib/naming/file-names.js');
    expect(defaultFileName(new URL(url), type)).toBe(expected);
  });

  it.each(['CON.htm', 'con', 'Lpt9.html', 'dir./x.htm', 'dir /x.htm', '.htaccess', 'sub/.HTpasswd', 'nul/x.htm', '...htm', '.x.html', 'a/.hidden/x.htm', '.html'])('refuses the name header %j', async (value) => {
    const { headerFileName } = await import('../../lib/naming/file-names.js');
    expect(() => headerFileName(value, new URL('http://h/p'), 'text/html')).toThrow(/unsafe file name/);
  });
});
