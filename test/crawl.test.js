// @ts-check
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, stat, symlink } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { crawl } from '../lib/index.js';
import { scanHtml } from '../lib/document/scan-html.js';
import { normalizeUrl } from '../lib/url.js';
import { renderPlaceholder } from '../lib/document/placeholders.js';
import { ENC_INDEX, PNG, UNSAFE_NAMES, startSite } from '../fixtures/site.js';
import { attr, blankUrlValues, fileOf, listFiles, pageOf, readManifest } from './crawl-helpers.js';
import { useFixtureSite } from './helpers/fixtures.js';

/** @type {import('./helpers/fixtures.js').FixtureSite} */
let site;
const dirs = useFixtureSite((started) => { site = started; });

/**
 * Crawl the fixture site into a fresh temp directory.
 * @param {string | string[]} roots paths on the site, or absolute URLs
 * @param {Record<string, any>} [options] crawl options
 */
async function crawlSite(roots, options = {}) {
  const out = options.out ?? path.join(await dirs.make(), 'out');
  /** @type {any[]} */
  const events = [];
  const { onEvent, ...rest } = options;
  const result = await crawl({
    roots: [roots].flat().map((root) => (root.startsWith('http') ? root : site.url(root))),
    out,
    retryDelay: 1,
    timeout: 5000,
    retries: 1,
    ...rest,
    onEvent: (/** @type {any} */ event) => {
      events.push(event);
      onEvent?.(event);
    },
  });
  const manifest = await readManifest(out);
  return {
    out,
    result,
    manifest,
    events,
    /** @param {string} urlPath */
    file: (urlPath) => fileOf(manifest, site.url(urlPath)),
    /** @param {string} file */
    bytes: (file) => readFile(path.join(out, ...file.split('/'))),
    /** @param {string} file */
    text: async (file) => (await readFile(path.join(out, ...file.split('/')))).toString('utf8'),
  };
}

/**
 * Where a link written in `fromFile` leads in the static tree: the file it
 * names (decoded, relative to OUT) plus its fragment.
 * @param {string} fromFile
 * @param {string} href
 */
function linkTarget(fromFile, href) {
  const base = new URL(fromFile.split('/').map(encodeURIComponent).join('/'), 'http://static.invalid/');
  const url = new URL(href.replace(/&amp;/g, '&'), base);
  if (url.origin !== 'http://static.invalid') return url.href;
  return decodeURIComponent(url.pathname.slice(1)) + url.search + url.hash;
}

/** @param {string} urlPath */
async function fetchOriginal(urlPath) {
  const response = await fetch(site.url(urlPath));
  return Buffer.from(await response.arrayBuffer());
}

describe('every link form', () => {
  it('each in-scope link leads to its target\'s file, each page is fetched once', async () => {
    const { manifest, text, file, result } = await crawlSite('/links/index.asp');
    expect(result.failed).toBe(0);
    const expectedPages = [
      '/links/index.asp', '/links/page.asp?id=1', '/links/page.asp?id=2', '/links/page.asp?id=3', '/links/page.asp?id=4',
      '/links/page.asp?id=5', '/links/page.asp?id=6&x=1', '/links/page.asp?id=7', '/links/page.asp?id=8',
      '/links/caf%C3%A9.asp', '/links/~user.asp', '/links/index.asp?sort=price', '/links/sub/', '/links/area.asp',
      '/links/frame.asp', '/links/refreshed.asp', '/links/next.asp',
    ];
    expect(manifest.pages.map((page) => page.url).sort()).toEqual(expectedPages.map((p) => site.url(p)).sort());
    // Fetched exactly once, whatever the spelling of the links.
    for (const target of expectedPages) expect(site.count(target), target).toBe(1);
    expect(site.log).toHaveLength(expectedPages.length);
    // Requisites are not fetched without --assets; out-of-scope and hidden links never.
    for (const never of ['/links/style.css', '/links/app.js', '/links/img/a.png', '/links/img/b.png', '/links/img/c.png', '/links/movie.swf',
      '/cart.asp?add=1&qty=2', '/checkout.asp', '/search.asp', '/search.asp?q=', '/links/commented.asp', '/links/scripted.asp',
      // A form's action is never crawled: the form submits its fields to the live site.
      '/links/form-target.asp']) {
      expect(site.count(never), never).toBe(0);
    }

    const index = file('/links/index.asp');
    expect(index).toBe('links/index.asp.html');
    const html = await text(index);
    /** @type {[string, string, string, string][]} [id, attribute, target path, fragment] */
    const inScope = [
      ['rel', 'href', '/links/page.asp?id=1', ''],
      ['root', 'href', '/links/page.asp?id=2', ''],
      ['abs', 'href', '/links/page.asp?id=3', ''],
      ['proto', 'href', '/links/page.asp?id=4', ''],
      ['unquoted', 'href', '/links/page.asp?id=5', ''],
      ['single', 'href', '/links/page.asp?id=7', ''],
      ['amp', 'href', '/links/page.asp?id=6&x=1', ''],
      ['raw-amp', 'href', '/links/page.asp?id=6&x=1', ''],
      ['frag', 'href', '/links/page.asp?id=1', '#details'],
      ['dot', 'href', '/links/page.asp?id=1', ''],
      ['dotdot', 'href', '/links/page.asp?id=2', ''],
      ['upper', 'href', '/links/page.asp?id=3', ''],
      ['pct-lower', 'href', '/links/caf%C3%A9.asp', ''],
      ['pct-upper', 'href', '/links/caf%C3%A9.asp', ''],
      ['tilde', 'href', '/links/~user.asp', ''],
      ['tilde2', 'href', '/links/~user.asp', ''],
      ['spaces', 'href', '/links/page.asp?id=8', ''],
      ['self', 'href', '/links/index.asp?sort=price', ''],
      ['selffrag', 'href', '/links/index.asp', '#top'],
      ['dir', 'href', '/links/sub/', ''],
      ['area', 'href', '/links/area.asp', ''],
      ['iframe', 'src', '/links/frame.asp', ''],
    ];
    for (const [id, name, target, fragment] of inScope) {
      const value = /** @type {string} */ (attr(html, id, name));
      expect(linkTarget(index, value.trim()), id).toBe(file(target) + fragment);
    }
    expect(file('/links/caf%C3%A9.asp')).toBe('links/café.asp.html');
    expect(file('/links/sub/')).toBe('links/sub/index.html');
    expect(file('/links/page.asp?id=6&x=1')).toBe('links/page.asp@id=6&x=1.html');
    const refresh = /<meta http-equiv="refresh" content="300; URL='([^']*)'">/.exec(html)?.[1];
    expect(linkTarget(index, /** @type {string} */ (refresh))).toBe(file('/links/refreshed.asp'));
    const next = /<link rel="next" href="([^"]*)">/.exec(html)?.[1];
    expect(linkTarget(index, /** @type {string} */ (next))).toBe(file('/links/next.asp'));

    // Out of scope, and links that are not http(s): byte for byte.
    /** @type {[string, string, string][]} */
    const untouched = [
      ['form', 'action', 'form-target.asp'],
      ['form-out', 'action', '/search.asp'],
      ['img', 'src', 'img/a.png'],
      ['img', 'srcset', 'img/a.png 1x, img/b.png 2x'],
      ['source', 'srcset', 'img/c.png 100w,img/d.png 200w'],
      ['embed', 'src', 'movie.swf'],
      ['cart', 'href', '/cart.asp?add=1&amp;qty=2'],
      ['checkout', 'href', `${site.origin}/checkout.asp`],
      ['external', 'href', 'http://example.invalid/page?a=1&amp;b=2'],
      ['mailto', 'href', 'mailto:shop@example.invalid'],
      ['js', 'href', 'javascript:void(0)'],
      ['data', 'href', 'data:text/plain,hi'],
      ['tel', 'href', 'tel:+15555550100'],
      ['empty', 'href', ''],
    ];
    for (const [id, name, value] of untouched) expect(attr(html, id, name), id).toBe(value);
    expect(html).toContain('<link rel="stylesheet" href="style.css">');
    expect(html).toContain('<script src="app.js"></script>');
    expect(html).toContain('<!-- <a href="commented.asp">commented out</a> -->');

    // Apart from link values, the file is what the origin served.
    const original = await fetchOriginal('/links/index.asp');
    expect(blankUrlValues(html)).toBe(blankUrlValues(original.toString('utf8')));
  });

  it('pages linked back to the root reach the root\'s file, fragment kept', async () => {
    const { text, file } = await crawlSite('/links/index.asp');
    const page = file('/links/page.asp?id=1');
    const html = await text(page);
    const back = /<a href="([^"]*)">back<\/a>/.exec(html)?.[1];
    expect(linkTarget(page, /** @type {string} */ (back))).toBe(`${file('/links/index.asp')}#top`);
  });
});

describe('scope', () => {
  it('without --include, a page root\'s scope is its directory and below', async () => {
    const { manifest, text, file } = await crawlSite('/infodir/about.asp');
    expect(manifest.pages.map((page) => page.url.slice(site.origin.length)).sort()).toEqual([
      '/infodir/', '/infodir/about.asp', '/infodir/contact.asp', '/infodir/contact.asp?lang=fr', '/infodir/private/secret.asp',
    ]);
    expect(site.count('/other/page.asp')).toBe(0);
    expect(site.count('/other/page.asp?x=1')).toBe(0);
    expect(site.count('/')).toBe(0);
    expect(manifest.scope).toEqual({ include: [site.url('/infodir/')], exclude: [] });
    const about = await text(file('/infodir/about.asp'));
    expect(about).toContain('<a href="/other/page.asp">other</a>');
    const dir = await text(file('/infodir/'));
    expect(dir).toContain('<a href="../other/page.asp?x=1">other</a>');
    expect(dir).toContain('<a href="/">home</a>');
  });

  it('a site root covers the whole site; --exclude keeps the dynamic part out', async () => {
    const { manifest, result } = await crawlSite('/', { exclude: ['/cart.asp', '/checkout.asp', '/search.asp'] });
    expect(result.failed).toBe(0);
    const urls = manifest.pages.map((page) => page.url.slice(site.origin.length));
    expect(urls).toEqual(expect.arrayContaining(['/', '/infodir/', '/infodir/about.asp', '/other/page.asp', '/prerender-manifest.json']));
    expect(site.count('/cart.asp')).toBe(0);
    expect(fileOf(manifest, site.url('/'))).toBe('index.html');
    expect(fileOf(manifest, site.url('/infodir/'))).toBe('infodir/index.html');
  });

  it('--include and --exclude with *: include a pattern, exclude wins', async () => {
    const { manifest } = await crawlSite('/infodir/', { include: ['/infodir/*.asp'], exclude: ['/infodir/private/', '/*?lang='] });
    expect(manifest.pages.map((page) => page.url.slice(site.origin.length)).sort()).toEqual([
      '/infodir/', '/infodir/about.asp', '/infodir/contact.asp',
    ]);
    expect(site.count('/infodir/private/secret.asp')).toBe(0);
    expect(site.count('/infodir/contact.asp?lang=fr')).toBe(0);
    expect(manifest.scope).toEqual({
      include: [site.url('/infodir/*.asp')],
      exclude: [site.url('/infodir/private/'), site.url('/*?lang=')],
    });
  });

  it('several roots: each root\'s directory; the same root twice is one root', async () => {
    const { manifest } = await crawlSite(['/infodir/about.asp', '/names/xb.asp', '/infodir/about.asp#again', `${site.origin}:80`.replace(':80', '') + '/infodir/./about.asp']);
    expect(manifest.roots).toEqual([site.url('/infodir/about.asp'), site.url('/names/xb.asp')]);
    const urls = manifest.pages.map((page) => page.url.slice(site.origin.length));
    expect(urls).toEqual(expect.arrayContaining(['/infodir/contact.asp', '/names/xb.asp', '/names/legacy.asp']));
    expect(urls).not.toContain('/other/page.asp');
    expect(site.count('/infodir/about.asp')).toBe(1);
    expect(manifest.scope.include).toEqual([site.url('/infodir/'), site.url('/names/')]);
  });

  it('two origins: each gets its own folder, nothing collides', async () => {
    const other = await startSite();
    try {
      const { manifest, result, file } = await crawlSite([site.url('/infodir/about.asp'), other.url('/infodir/about.asp')]);
      expect(result.failed).toBe(0);
      expect(result.warnings).toBe(0);
      expect(manifest.pages).toHaveLength(10);
      const mine = file('/infodir/about.asp');
      const theirs = fileOf(manifest, other.url('/infodir/about.asp'));
      expect(mine).not.toBe(theirs);
      expect(mine.endsWith('/infodir/about.asp.html')).toBe(true);
      expect(theirs.endsWith('/infodir/about.asp.html')).toBe(true);
      expect(other.count('/infodir/contact.asp')).toBe(1);
      expect(site.count('/infodir/contact.asp')).toBe(1);
    } finally {
      await other.close();
    }
  });
});

describe('file names', () => {
  it('X-Builder-FileName and XBuilder-FileName name the file; default names otherwise', async () => {
    const { file, text } = await crawlSite('/names/index.asp');
    expect(file('/names/xb.asp')).toBe('names/xb.htm');
    expect(file('/names/legacy.asp')).toBe('names/legacy.htm');
    expect(file('/names/both.asp')).toBe('names/both-new.htm');
    expect(file('/names/bare.asp')).toBe('names/bare-name.html');
    expect(file('/names/sub.asp')).toBe('names/inner/sub.htm');
    expect(file('/names/rooted.asp')).toBe('top/rooted.htm');
    expect(file('/names/moved.asp')).toBe('elsewhere/deeper/moved.htm');
    expect(file('/names/index.asp')).toBe('names/index.asp.html');
    expect(file('/names/unsafe.asp?v=rooted')).toBe('etc/passwd.html'); // relative to OUT, by design
    // Links to renamed pages follow the names.
    const xb = await text('names/xb.htm');
    expect(xb).toContain('<a href="legacy.htm">legacy</a>');
    const rooted = await text('top/rooted.htm');
    expect(linkTarget('top/rooted.htm', /** @type {string} */ (/href="([^"]*)">xb/.exec(rooted)?.[1]))).toBe('names/xb.htm');
    const sub = await text('names/inner/sub.htm');
    expect(sub).toContain('<a href="../xb.htm">xb</a>');
  });

  it('an unsafe name falls back to the default name with a warning; nothing lands outside OUT', async () => {
    const parent = await dirs.make();
    const out = path.join(parent, 'a', 'b', 'out');
    const { file, manifest, out: written } = await crawlSite('/names/index.asp', { out });
    expect(written).toBe(out);
    for (const [key, value] of Object.entries(UNSAFE_NAMES)) {
      const url = `/names/unsafe.asp?v=${key}`;
      expect(file(url), key).toBe(`names/unsafe.asp@v=${key}.html`);
      const warnings = manifest.warnings.filter((warning) => warning.url === site.url(url));
      expect(warnings, key).toHaveLength(1);
      expect(warnings[0].message, key).toMatch(/unsafe file name/);
      if (value.trim() !== '') expect(warnings[0].message, key).toContain(JSON.stringify(value));
    }
    // A raw NUL in the header: either refused by the HTTP parser (a recorded failure) or by the namer.
    const nul = manifest.pages.find((page) => page.url === site.url('/names/nul.asp'));
    if (nul) expect(nul.file).toBe('names/nul.asp.html');
    else expect(manifest.errors.map((error) => error.url)).toContain(site.url('/names/nul.asp'));
    const everything = await listFiles(parent);
    const outside = everything.filter((f) => !f.startsWith('a/b/out/'));
    expect(outside).toEqual([]);
    expect(everything.some((f) => /escape/.test(f))).toBe(false);
  });

  it('a raw NUL in a response header is a recorded failure naming the protocol error, not a crash', async () => {
    // Not HTTP: undici (like browsers) rejects the whole response. A NUL that
    // reaches the name header (percent-encoded) is refused by headerFileName.
    const { result, manifest } = await crawlSite('/names/nul.asp', { retries: 0 });
    expect(result.failed).toBe(1);
    expect(result.failures[0].message).toMatch(/Invalid header value char/);
    expect(manifest.errors.map((error) => error.url)).toEqual([site.url('/names/nul.asp')]);
  });

  it('collisions are resolved and recorded: same name, names differing in case, a reserved name', async () => {
    const { manifest, file } = await crawlSite('/names/index.asp');
    const same = [file('/names/coll-a.asp'), file('/names/coll-b.asp')].sort();
    expect(same).toEqual(['names/same-2.htm', 'names/same.htm']);
    const cased = [file('/names/case-a.asp'), file('/names/case-b.asp')].map((f) => f.toLowerCase()).sort();
    expect(cased).toEqual(['names/case-2.htm', 'names/case.htm']);
    const pages = [file('/names/Page.asp'), file('/names/page.asp')].map((f) => f.toLowerCase()).sort();
    expect(pages).toEqual(['names/page.asp-2.html', 'names/page.asp.html']);
    expect(file('/names/manifest.asp')).toBe('prerender-manifest-2.json');
    const collisions = manifest.warnings.filter((warning) => /collision/.test(warning.message));
    expect(collisions.map((warning) => warning.url.slice(site.origin.length)).sort()).toEqual(expect.arrayContaining(['/names/manifest.asp']));
    expect(collisions).toHaveLength(4);
    for (const pair of [['/names/coll-a.asp', '/names/coll-b.asp'], ['/names/case-a.asp', '/names/case-b.asp'], ['/names/Page.asp', '/names/page.asp']]) {
      expect(collisions.filter((warning) => pair.includes(warning.url.slice(site.origin.length)))).toHaveLength(1);
    }
    // Never two URLs on one file, even on a case-insensitive file system.
    const lower = manifest.pages.map((page) => page.file.toLowerCase());
    expect(new Set(lower).size).toBe(lower.length);
    // The real manifest is still ours.
    expect(manifest.version).toBe(1);
  });

  it('a page moved to another directory by its name header: out-of-scope links still reach the same targets', async () => {
    const { text, file, manifest } = await crawlSite('/names/moved.asp');
    const moved = file('/names/moved.asp');
    expect(moved).toBe('elsewhere/deeper/moved.htm');
    const html = await text(moved);
    const pageUrl = site.url('/names/moved.asp');
    const staticUrl = site.url(`/${moved}`);
    /** @type {[string, string][]} [id, where the link led on the live site] */
    const outOfScope = [
      ['up', '/cart.asp'],
      ['amp', '/checkout.asp?step=1&x=2#pay'],
      ['root', '/search.asp?q=a'],
      ['img', '/img/logo.png'],
    ];
    for (const [id, target] of outOfScope) {
      const name = id === 'img' ? 'src' : 'href';
      const value = /** @type {string} */ (attr(html, id, name)).replace(/&amp;/g, '&');
      // Served at the origin's paths, the rewritten link leads where the original did.
      expect(new URL(value, staticUrl).href, id).toBe(site.url(target));
      expect(new URL(value, pageUrl).href, id).toBe(site.url(target));
    }
    expect(attr(html, 'amp', 'href')).toContain('&amp;x=2');
    expect(attr(html, 'root', 'href')).toBe('/search.asp?q=a');
    expect(attr(html, 'ext', 'href')).toBe('https://example.invalid/x');
    expect(attr(html, 'mail', 'href')).toBe('mailto:a@example.invalid');
    expect(linkTarget(moved, /** @type {string} */ (attr(html, 'in', 'href')))).toBe(fileOf(manifest, site.url('/names/xb.asp')));
    expect(linkTarget(moved, /** @type {string} */ (attr(html, 'in2', 'href')))).toBe(`${fileOf(manifest, site.url('/names/legacy.asp'))}#f`);
    expect(attr(html, 'self', 'href')).toBe('#top');
    expect(site.count('/cart.asp')).toBe(0);
  });
});

describe('<base href>', () => {
  it('a misdirecting base is pointed at the file; so is an absolute one (--relative-links), kept with --no-relative-links', async () => {
    const { text, file } = await crawlSite('/base/index.asp');
    expect(site.count('/base/sub/target.asp')).toBe(1);
    const pageFile = file('/base/page.asp');
    const page = await text(pageFile);
    const base = /<base href="([^"]*)">/.exec(page)?.[1];
    expect(base).toBe('page.asp.html');
    const staticPage = new URL(/** @type {string} */ (base), site.url(`/${pageFile}`));
    expect(decodeURIComponent(new URL(/** @type {string} */ (attr(page, 'in', 'href')), staticPage).pathname)).toBe(`/${file('/base/sub/target.asp')}`);
    expect(new URL(/** @type {string} */ (attr(page, 'out', 'href')), staticPage).href).toBe(site.url('/cart.asp'));
    expect(new URL(/** @type {string} */ (attr(page, 'abs', 'href')), staticPage).href).toBe(site.url('/checkout.asp'));

    // An absolute base would tie the tree to the origin's host: pointed at the file too.
    const same = await text(file('/base/same.asp'));
    expect(same).toContain('<base href="same.asp.html">');
    expect(attr(same, 'in', 'href')).toBe('sub/target.asp.html');

    const kept = await crawlSite('/base/index.asp', { relativeLinks: false });
    const sameKept = await kept.text(kept.file('/base/same.asp'));
    expect(sameKept).toContain(`<base href="${site.origin}/base/">`);
    expect(attr(sameKept, 'in', 'href')).toBe('sub/target.asp.html');
    expect(attr(sameKept, 'out', 'href')).toBe('../search.asp?q=1');
  });
});

describe('redirects', () => {
  it('links to in-scope redirects lead to the target\'s file; others stay live', async () => {
    const { manifest, text, file, result } = await crawlSite('/redir/index.asp');
    const html = await text(file('/redir/index.asp'));
    const index = file('/redir/index.asp');
    expect(linkTarget(index, /** @type {string} */ (attr(html, 'r301', 'href')))).toBe(file('/redir/target1.asp'));
    expect(linkTarget(index, /** @type {string} */ (attr(html, 'r302', 'href')))).toBe(`${file('/redir/target2.asp')}#frag`);
    expect(linkTarget(index, /** @type {string} */ (attr(html, 'chain', 'href')))).toBe(file('/redir/target3.asp'));
    expect(linkTarget(index, /** @type {string} */ (attr(html, 'direct', 'href')))).toBe(file('/redir/target1.asp'));
    expect(attr(html, 'out', 'href')).toBe('out.asp');
    expect(attr(html, 'ext', 'href')).toBe('ext.asp');
    expect(attr(html, 'loop', 'href')).toBe('loop-a.asp');
    expect(attr(html, 'noloc', 'href')).toBe('noloc.asp');
    expect(site.count('/redir/target1.asp')).toBe(1);
    expect(site.count('/redir/a301.asp')).toBe(1);
    expect(site.count('/redir/loop-a.asp')).toBe(1);
    expect(site.count('/redir/loop-b.asp')).toBe(1);
    expect(site.count('/cart.asp?from=redirect')).toBe(0);
    const redirects = manifest.redirects.map((r) => [r.url.slice(site.origin.length), r.status, r.location.replace(site.origin, '')]);
    expect(redirects).toEqual(expect.arrayContaining([
      ['/redir/a301.asp', 301, '/redir/target1.asp'],
      ['/redir/b302.asp', 302, '/redir/target2.asp'],
      ['/redir/chain.asp', 301, '/redir/chain2.asp'],
      ['/redir/chain2.asp', 302, '/redir/target3.asp'],
      ['/redir/out.asp', 302, '/cart.asp?from=redirect'],
      ['/redir/ext.asp', 301, 'http://example.invalid/landing'],
    ]));
    expect(result.redirects).toBe(manifest.redirects.length);
    expect(manifest.pages.some((page) => page.url.includes('a301'))).toBe(false);
    expect(manifest.errors.map((error) => error.url)).toEqual([site.url('/redir/loop-a.asp'), site.url('/redir/loop-b.asp'), site.url('/redir/noloc.asp')]);
    const loop = manifest.errors.filter((error) => error.code === 'REDIRECT_LOOP');
    expect(loop).toHaveLength(2);
    // From its first member in URL order, whichever was fetched first.
    expect(loop[0].message).toBe(`redirect loop: ${site.url('/redir/loop-a.asp')} → ${site.url('/redir/loop-b.asp')} → ${site.url('/redir/loop-a.asp')}`);
    expect(result.failed).toBe(3);
  });

  it('a chain past --max-redirects is a recorded failure with the chain, and no hop beyond the cap is fetched', async () => {
    const { manifest, text, file, result } = await crawlSite('/redir/longs.asp', { maxRedirects: 10 });
    expect(result.failures).toEqual([expect.objectContaining({ url: site.url('/redir/long.asp?n=30'), code: 'TOO_MANY_REDIRECTS' })]);
    const message = result.failures[0].message;
    expect(message).toMatch(/^more than --max-redirects 10 redirects: /);
    expect(message.split(' → ')).toHaveLength(12);
    for (let n = 30; n >= 20; n--) expect(site.count(`/redir/long.asp?n=${n}`)).toBe(1);
    expect(site.count('/redir/long.asp?n=19')).toBe(0);
    expect(attr(await text(file('/redir/longs.asp')), 'long', 'href')).toBe('long.asp?n=30');
    expect(manifest.pages.map((page) => page.url)).toEqual([site.url('/redir/longs.asp')]);
  });

  it('a long chain within --max-redirects leads to its end\'s file', async () => {
    const { text, file, result } = await crawlSite('/redir/longs.asp', { maxRedirects: 30 });
    expect(result.failed).toBe(0);
    const index = file('/redir/longs.asp');
    expect(linkTarget(index, /** @type {string} */ (attr(await text(index), 'long', 'href')))).toBe(file('/redir/long.asp?n=0'));
  });

  it('a root that redirects is written under its target', async () => {
    const { manifest, result } = await crawlSite('/redir/a301.asp');
    // reached through target1 -> index
    expect(result.failures.map((failure) => failure.url)).toEqual([site.url('/redir/loop-a.asp'), site.url('/redir/loop-b.asp'), site.url('/redir/noloc.asp')]);
    expect(manifest.pages.map((page) => page.url)).toContain(site.url('/redir/target1.asp'));
    expect(fileOf(manifest, site.url('/redir/target1.asp'))).toBe('redir/target1.asp.html');
  });
});

describe('failures, retries, timeouts, size cap', () => {
  it('a 500 and a 404 are recorded with status and referrers; the rest is written; links to them stay live', async () => {
    const { manifest, result, text, file, events } = await crawlSite('/errors/index.asp', { retries: 2 });
    expect(result.failed).toBe(2);
    expect(result.failures.map((failure) => failure.url).sort()).toEqual([site.url('/errors/404.asp'), site.url('/errors/500.asp')]);
    const e500 = manifest.errors.find((error) => error.url === site.url('/errors/500.asp'));
    expect(e500?.status).toBe(500);
    expect(e500?.message).toMatch(/500/);
    expect(e500?.referrers.sort()).toEqual([site.url('/errors/index.asp'), site.url('/errors/ok.asp')]);
    const e404 = manifest.errors.find((error) => error.url === site.url('/errors/404.asp'));
    expect(e404?.status).toBe(404);
    expect(e404?.referrers).toEqual([site.url('/errors/index.asp')]);
    expect(site.count('/errors/500.asp')).toBe(3); // retried
    expect(site.count('/errors/404.asp')).toBe(1); // not retried
    // 503, 503 with Retry-After, 429 and a reset connection recover on retry.
    for (const recovered of ['/errors/flaky.asp', '/errors/retry-after.asp', '/errors/429.asp', '/errors/reset.asp']) {
      expect(pageOf(manifest, site.url(recovered)).status, recovered).toBe(200);
      expect(site.count(recovered), recovered).toBeGreaterThanOrEqual(2);
    }
    const retried = new Set(events.filter((event) => event.type === 'retry').map((event) => event.url.slice(site.origin.length)));
    expect([...retried].sort()).toEqual(['/errors/429.asp', '/errors/500.asp', '/errors/flaky.asp', '/errors/reset.asp', '/errors/retry-after.asp']);
    expect(events.filter((event) => event.type === 'failure').map((event) => event.url).sort()).toEqual(result.failures.map((f) => f.url).sort());
    const html = await text(file('/errors/index.asp'));
    expect(html).toContain('<a href="500.asp">500</a>');
    expect(html).toContain('<a href="404.asp">404</a>');
    expect(html).toContain('<a href="flaky.asp.html">');
    expect(manifest.pages.some((page) => page.url.includes('500.asp'))).toBe(false);
  });

  it('a failure lists up to 5 pages that linked to it', async () => {
    const { manifest } = await crawlSite('/many/index.asp', { retries: 0 });
    expect(manifest.errors).toHaveLength(1);
    const { url, status, referrers } = manifest.errors[0];
    expect([url, status]).toEqual([site.url('/many/broken.asp'), 500]);
    expect(referrers).toHaveLength(5);
    expect(new Set(referrers).size).toBe(5);
    for (const referrer of referrers) expect(referrer).toMatch(/\/many\/p\d\.asp$/);
  });

  it('Retry-After: 0 is honoured instead of the backoff', async () => {
    const { events, result } = await crawlSite('/errors/retry-after.asp', { retryDelay: 60_000 });
    expect(result.failed).toBe(0);
    const retries = events.filter((event) => event.type === 'retry');
    expect(retries).toHaveLength(1);
    expect(retries[0].delayMs).toBe(0);
  });

  it('retries are bounded: a page that always answers 503 fails after retries + 1 attempts', async () => {
    const { result } = await crawlSite('/errors/always503.asp', { retries: 3 });
    expect(site.count('/errors/always503.asp')).toBe(4);
    expect(result.failed).toBe(1);
    expect(result.failures[0].status).toBe(503);
  });

  it('a page that never answers fails on --timeout; the rest is written', async () => {
    const { manifest, result } = await crawlSite('/errors/hang-index.asp', { timeout: 250, retries: 1 });
    const hang = manifest.errors.find((error) => error.url === site.url('/errors/hang.asp'));
    expect(hang?.message).toMatch(/250 ms/);
    expect(hang?.code).toBe('TIMEOUT');
    expect(site.count('/errors/hang.asp')).toBe(2);
    expect(pageOf(manifest, site.url('/errors/ok.asp')).status).toBe(200);
    expect(result.failed).toBe(2); // the hang, and the 500 linked from ok.asp
  });

  it('a body that stops half way fails on --timeout too', async () => {
    const { result } = await crawlSite('/errors/hang-body.asp', { timeout: 250, retries: 0 });
    expect(result.failed).toBe(1);
    expect(result.failures[0].message).toMatch(/250 ms/);
    expect(result.pages).toBe(0);
  });

  it('a body over --max-page-bytes is a recorded failure, declared or streamed, not retried, not a crash', async () => {
    const { manifest, result } = await crawlSite('/errors/big-index.asp', { maxPageBytes: 4096, retries: 2 });
    const big = manifest.errors.filter((error) => /big/.test(error.url));
    expect(big.map((error) => error.url).sort()).toEqual([site.url('/errors/big-chunked.asp'), site.url('/errors/big.asp')]);
    for (const error of big) {
      expect(error.code).toBe('PAGE_TOO_LARGE');
      expect(error.message).toMatch(/max-page-bytes/);
      expect(error.referrers).toEqual([site.url('/errors/big-index.asp')]);
    }
    expect(site.count('/errors/big.asp')).toBe(1);
    expect(site.count('/errors/big-chunked.asp')).toBe(1);
    expect(pageOf(manifest, site.url('/errors/ok.asp')).status).toBe(200);
    expect(result.pages).toBe(manifest.pages.length);
  });

  it('a root nobody listens on is a recorded network failure, retried, with a manifest', async () => {
    const port = await closedPort();
    const { manifest, result } = await crawlSite(`http://127.0.0.1:${port}/`, { retries: 1 });
    expect(result.failed).toBe(1);
    expect(manifest.errors).toHaveLength(1);
    expect(manifest.errors[0].message).toMatch(/ECONNREFUSED/);
    expect(manifest.pages).toEqual([]);
  });
});

describe('windows-1252', () => {
  it('the page survives byte for byte apart from link values and the price slot', async () => {
    const { bytes, file, manifest } = await crawlSite('/enc/index.asp');
    expect(site.count('/enc/caf%C3%A9.asp')).toBe(1);
    expect(file('/enc/caf%C3%A9.asp')).toBe('enc/café.asp.html');
    const written = await bytes(file('/enc/index.asp'));
    const expected = Buffer.from(ENC_INDEX.toString('latin1')
      .replace('<a href="caf\xe9.asp">', '<a href="caf%C3%A9.asp.html">')
      .replace('<a href="plain.asp">', '<a href="plain.asp.html">')
      .replace('\x80 9,99</span>', `${renderPlaceholder('filter', 'SKU-é')}</span>`), 'latin1');
    expect(written.equals(expected)).toBe(true);
    const page = pageOf(manifest, site.url('/enc/index.asp'));
    expect(page.contentType).toBe('text/html; charset=windows-1252');
    expect(page.placeholders).toEqual([{ sku: 'SKU-é', offset: expected.indexOf('<!--prerender'), length: renderPlaceholder('filter', 'SKU-é').length }]);
    expect(page.bytes).toBe(written.length);
    // The out-of-scope link keeps its windows-1252 byte.
    expect(written.includes(Buffer.from('<a href="/search.asp?q=caf\xe9">', 'latin1'))).toBe(true);
    const cafe = await bytes('enc/café.asp.html');
    expect(cafe.equals(Buffer.from('<html><body>caf\xe9 \x80 <a href="index.asp.html">index</a></body></html>', 'latin1'))).toBe(true);
  });

  it('a query with a windows-1252 byte is requested as a browser would send it', async () => {
    const { manifest } = await crawlSite('/enc/query.asp');
    expect(site.count('/enc/q.asp?w=caf%E9')).toBe(1);
    expect(site.count('/enc/q.asp?w=caf%C3%A9')).toBe(0);
    expect(manifest.pages.map((page) => page.url)).toContain(site.url('/enc/q.asp?w=caf%E9'));
  });

  it('the charset may come from <meta charset> alone', async () => {
    const { bytes, file } = await crawlSite('/enc/meta.asp');
    expect(site.count('/enc/caf%C3%A9.asp')).toBe(1);
    const written = await bytes(file('/enc/meta.asp'));
    expect(written.equals(Buffer.from(ENC_META_EXPECTED, 'latin1'))).toBe(true);
  });
});

const ENC_META_EXPECTED = '<html><head><meta charset="windows-1252"><title>\xc9t\xe9</title></head><body>'
  + '<a href="caf%C3%A9.asp.html">\xe9</a> <a href="index.asp.html">index</a></body></html>';

describe('price slots', () => {
  it('each slot becomes a placeholder; the manifest records byte offsets into the written file', async () => {
    const { manifest, bytes, file } = await crawlSite('/prices/item.asp');
    const page = pageOf(manifest, site.url('/prices/item.asp'));
    const written = await bytes(file('/prices/item.asp'));
    expect(page.placeholders.map((p) => p.sku)).toEqual(['SKU-1', 'META-1', 'SKU 2&x']);
    for (const placeholder of page.placeholders) {
      expect(written.subarray(placeholder.offset, placeholder.offset + placeholder.length).toString('utf8')).toBe(renderPlaceholder('filter', placeholder.sku));
    }
    const text = written.toString('utf8');
    for (const price of ['12,99', '9,99', '<b>1</b>,49']) expect(text).not.toContain(price);
    const original = (await fetchOriginal('/prices/item.asp')).toString('utf8');
    const firstSlot = original.indexOf('€ 12,99');
    expect(written.subarray(0, Buffer.byteLength(original.slice(0, firstSlot))).toString('utf8')).toBe(original.slice(0, firstSlot));
    expect(text).toContain('<p>After: <a href="other.asp.html">other</a> ünd</p>');
    expect(page.bytes).toBe(written.length);
    expect(page.sha256).toBe(createHash('sha256').update(written).digest('hex'));
    const other = pageOf(manifest, site.url('/prices/other.asp'));
    expect(other.placeholders.map((p) => p.sku)).toEqual(['SKU-OTHER']);
  });

  it('a slot with an empty SKU and no meta is left as it is, with a warning', async () => {
    const { manifest, text, file } = await crawlSite('/prices/nometa.asp');
    expect(pageOf(manifest, site.url('/prices/nometa.asp')).placeholders).toEqual([]);
    expect(await text(file('/prices/nometa.asp'))).toContain('<span data-price-sku="">$7.00</span>');
    expect(manifest.warnings.map((warning) => warning.message).join('\n')).toMatch(/price slot/);
  });

  it('ssi placeholders, with offsets just as exact', async () => {
    const { manifest, bytes, file } = await crawlSite('/prices/item.asp', { placeholders: 'ssi' });
    expect(manifest.placeholderMode).toBe('ssi');
    const page = pageOf(manifest, site.url('/prices/item.asp'));
    const written = await bytes(file('/prices/item.asp'));
    expect(page.placeholders).toHaveLength(3);
    for (const placeholder of page.placeholders) {
      const text = written.subarray(placeholder.offset, placeholder.offset + placeholder.length).toString('utf8');
      expect(text).toBe(renderPlaceholder('ssi', placeholder.sku));
      expect(text).toMatch(/^<!--# include virtual="\/price\?sku=/);
    }
  });
});

describe('--assets', () => {
  it('fetches in-scope requisites, CSS url() and @import included, and rewrites references', async () => {
    const { manifest, text, bytes, file } = await crawlSite('/assets/index.asp', { assets: true });
    for (const asset of ['/assets/css/site.css', '/assets/css/print.css', '/assets/css/fonts.css', '/assets/js/app.js', '/assets/img/bg.png',
      '/assets/img/logo.png', '/assets/img/logo@2x.png', '/assets/img/tile.png', '/assets/img/abs.png', '/assets/img/noext',
      '/assets/img/favicon.ico', '/assets/fonts/a.woff2']) {
      expect(site.count(asset), asset).toBe(1);
    }
    // A requisite on the root's origin outside the page scope is fetched too, as wget -p does.
    expect(site.count('/img/outside.png')).toBe(1);
    expect(site.count('/assets/img/commented.png')).toBe(0);
    expect(file('/assets/img/noext')).toBe('assets/img/noext.png');
    const html = await text(file('/assets/index.asp'));
    expect(linkTarget('assets/index.asp.html', /** @type {string} */ (attr(html, 'noext', 'src')))).toBe('assets/img/noext.png');
    expect(attr(html, 'out', 'src')).toBe('../img/outside.png');
    expect(file('/img/outside.png')).toBe('img/outside.png');
    expect(attr(html, 'missing', 'src')).toBe('img/missing.png');
    const srcset = /** @type {string} */ (attr(html, 'img', 'srcset')).split(',').map((candidate) => candidate.trim().split(/\s+/)[0]);
    expect(srcset.map((url) => linkTarget('assets/index.asp.html', url))).toEqual(['assets/img/logo.png', 'assets/img/logo@2x.png']);
    expect(manifest.errors.map((error) => error.url)).toEqual([site.url('/assets/img/missing.png')]);
    // Binary files are written untouched; CSS whose references already match is unchanged.
    expect((await bytes('assets/img/logo.png')).equals(PNG)).toBe(true);
    const css = await text('assets/css/site.css');
    expect(css).toContain('@import "print.css";');
    expect(css).toContain('url(../../img/outside.png)'); // root-relative made relative: the tree works under a sub-path
    for (const page of manifest.pages) {
      const body = await bytes(page.file);
      expect(page.bytes, page.file).toBe(body.length);
      expect(page.sha256, page.file).toBe(createHash('sha256').update(body).digest('hex'));
    }
  });

  it('without --assets, requisites are neither fetched nor rewritten', async () => {
    const { text, file, manifest } = await crawlSite('/assets/index.asp');
    expect(site.count('/assets/css/site.css')).toBe(0);
    expect(site.count('/assets/img/logo.png')).toBe(0);
    expect(manifest.pages.map((page) => page.url.slice(site.origin.length)).sort()).toEqual(['/assets/index.asp', '/assets/page.asp']);
    const html = await text(file('/assets/index.asp'));
    expect(attr(html, 'noext', 'src')).toBe('img/noext');
    expect(html).toContain('<link rel="stylesheet" href="css/site.css">');
  });
});

describe('--max-pages', () => {
  it('stops a crawler trap, warns, and leaves links to pages not crawled live', async () => {
    const { manifest, result, text } = await crawlSite('/trap/cal.asp?d=0', { maxPages: 10, concurrency: 1 });
    expect(manifest.pages).toHaveLength(10);
    expect(site.log).toHaveLength(10);
    expect(result.notCrawled).toBeGreaterThan(0);
    expect(manifest.warnings.map((warning) => warning.message).join('\n')).toMatch(/--max-pages 10/);
    const crawled = new Set(manifest.pages.map((page) => page.url));
    for (const page of manifest.pages) {
      const html = await text(page.file);
      for (const [, href] of html.matchAll(/href="([^"]*)"/g)) {
        const live = new URL(href.replace(/&amp;/g, '&'), page.url).href;
        if (crawled.has(live)) throw new Error(`${page.file}: link ${href} still points at the dynamic page ${live}`);
        if (!href.includes('.asp?')) expect(linkTarget(page.file, href)).toMatch(/^trap\/cal\.asp@/);
      }
    }
  });
});

describe('--max-pages counting', () => {
  it('a URL not crawled counts once, however many links lead to it', async () => {
    const { result, manifest } = await crawlSite('/trap/dup.asp', { maxPages: 1 });
    expect(result.notCrawled).toBe(3);
    expect(manifest.warnings.map((warning) => warning.message).join('\n')).toMatch(/: 3 more in-scope URLs/);
  });
});

describe('--dynamic-base', () => {
  it('out-of-scope links on the crawled origin become absolute on the base; others are untouched', async () => {
    const { text, file, result } = await crawlSite('/dyn/index.asp', { dynamicBase: 'http://dyn.invalid/base/' });
    expect(result.failed).toBe(1); // gone.asp
    const html = await text(file('/dyn/index.asp'));
    expect(attr(html, 'in', 'href')).toBe('page.asp.html');
    expect(attr(html, 'failed', 'href')).toBe('http://dyn.invalid/base/dyn/gone.asp');
    expect(attr(html, 'cart', 'href')).toBe('http://dyn.invalid/base/cart.asp?add=1&amp;qty=2#c');
    expect(attr(html, 'rel', 'href')).toBe('http://dyn.invalid/base/checkout.asp');
    expect(attr(html, 'abs', 'href')).toBe('http://dyn.invalid/base/search.asp?q=x');
    expect(attr(html, 'proto', 'href')).toBe('http://dyn.invalid/base/search.asp?q=y');
    expect(attr(html, 'colon', 'href')).toBe('http://dyn.invalid/base/Special:Search?q=1');
    expect(attr(html, 'ext', 'href')).toBe('http://example.invalid/x');
    expect(attr(html, 'mail', 'href')).toBe('mailto:a@example.invalid');
  });

  it('without it, an in-scope link to a page that failed stays live, as written', async () => {
    const { text, file } = await crawlSite('/dyn/index.asp');
    const html = await text(file('/dyn/index.asp'));
    expect(attr(html, 'failed', 'href')).toBe('gone.asp');
    expect(attr(html, 'cart', 'href')).toBe('/cart.asp?add=1&amp;qty=2#c');
    expect(attr(html, 'colon', 'href')).toBe('/Special:Search?q=1');
  });
});

describe('Ctrl-C (an aborted signal)', () => {
  it('stops after the pages already fetched and still writes the manifest', async () => {
    const controller = new AbortController();
    let pages = 0;
    const { manifest, result, out } = await crawlSite('/slow/index.asp?n=8', {
      concurrency: 1,
      signal: controller.signal,
      onEvent: (/** @type {any} */ event) => {
        if (event.type === 'page' && ++pages === 3) controller.abort();
      },
    });
    expect(result.interrupted).toBe(true);
    expect(manifest.interrupted).toBe(true);
    expect(manifest.pages).toHaveLength(3);
    expect(result.pages).toBe(3);
    for (const page of manifest.pages) expect((await stat(path.join(out, page.file))).size).toBe(page.bytes);
    const files = await listFiles(out);
    expect(files.filter((f) => f.includes('.tmp') || f.startsWith('.prerender'))).toEqual([]);
    expect(files).toHaveLength(4); // three pages and the manifest
  });

  it('requests in flight are abandoned; links to pages not fetched stay live', async () => {
    site.closeGate();
    const controller = new AbortController();
    let held = 0;
    const onHeld = () => {
      if (++held === 2) controller.abort();
    };
    site.events.on('held', onHeld);
    try {
      const { manifest, result, text, file } = await crawlSite('/slow/index.asp?n=4', { concurrency: 2, signal: controller.signal });
      expect(result.interrupted).toBe(true);
      expect(manifest.interrupted).toBe(true);
      expect(manifest.pages.map((page) => page.url)).toEqual([site.url('/slow/index.asp?n=4')]);
      expect(manifest.errors).toEqual([]);
      const html = await text(file('/slow/index.asp?n=4'));
      expect(html).toContain('<a href="p.asp?n=1">1</a>');
    } finally {
      site.events.off('held', onHeld);
      site.openGate();
    }
  });

  it('a signal aborted before the start fetches nothing and writes an empty manifest', async () => {
    const { manifest, result } = await crawlSite('/links/index.asp', { signal: AbortSignal.abort() });
    expect(site.log).toEqual([]);
    expect(result.interrupted).toBe(true);
    expect(manifest.pages).toEqual([]);
    expect(manifest.interrupted).toBe(true);
  });
});

describe('concurrency and safety of writes', () => {
  it('--concurrency bounds the requests in flight', async () => {
    site.closeGate();
    let held = 0;
    const onHeld = () => {
      if (++held === 2) site.openGate();
    };
    site.events.on('held', onHeld);
    try {
      const { result } = await crawlSite('/slow/index.asp?n=8', { concurrency: 2 });
      expect(result.pages).toBe(9);
      expect(site.maxInflight()).toBe(2);
    } finally {
      site.events.off('held', onHeld);
    }
  });

  it('a symlink inside OUT that leads outside is not written through', async () => {
    const parent = await dirs.make();
    const out = path.join(parent, 'out');
    const elsewhere = path.join(parent, 'elsewhere');
    await mkdir(out);
    await mkdir(elsewhere);
    await symlink(elsewhere, path.join(out, 'infodir'), 'dir');
    const { result, manifest } = await crawlSite('/infodir/about.asp', { out });
    expect(await readdir(elsewhere)).toEqual([]); // not even an empty directory
    expect(result.failed).toBe(5);
    for (const error of manifest.errors) {
      expect(error.code).toBe('UNSAFE_FILE_NAME');
      expect(error.message).toMatch(/leaves the output directory/);
    }
    expect(manifest.pages).toEqual([]);
  });

  it('an abort during a retry backoff stops at once', async () => {
    const controller = new AbortController();
    const { result, manifest } = await crawlSite('/errors/always503.asp', {
      retries: 5,
      retryDelay: 60_000,
      signal: controller.signal,
      onEvent: (/** @type {any} */ event) => {
        if (event.type === 'retry') controller.abort();
      },
    });
    expect(result.interrupted).toBe(true);
    expect(manifest.interrupted).toBe(true);
    expect(site.count('/errors/always503.asp')).toBe(1);
  });
});

describe('the manifest', () => {
  it('describes every written file exactly', async () => {
    const before = Date.now();
    const { manifest, out, result } = await crawlSite(['/', '/names/index.asp', '/prices/item.asp'], { exclude: ['/cart.asp'] });
    expect(manifest.version).toBe(1);
    expect(Date.parse(manifest.generatedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(manifest.generatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
    expect(manifest.roots).toEqual([site.url('/'), site.url('/names/index.asp'), site.url('/prices/item.asp')]);
    expect(manifest.scope.exclude).toEqual([site.url('/cart.asp')]);
    expect(manifest.placeholderMode).toBe('filter');
    expect(manifest.interrupted).toBe(false);
    expect(Array.isArray(manifest.errors) && Array.isArray(manifest.warnings) && Array.isArray(manifest.redirects)).toBe(true);
    // pages: HTML documents; every other file is counted apart.
    expect(result.pages).toBe(manifest.pages.filter((page) => page.contentType.startsWith('text/html')).length);
    expect(result.pages + result.assets).toBe(manifest.pages.length);
    expect(result.warnings).toBe(manifest.warnings.length);
    for (const page of manifest.pages) {
      expect(page.file).not.toMatch(/\\|^\/|(^|\/)\.\.(\/|$)/);
      const body = await readFile(path.join(out, ...page.file.split('/')));
      expect(page.bytes, page.file).toBe(body.length);
      expect(page.sha256, page.file).toBe(createHash('sha256').update(body).digest('hex'));
      expect(page.status).toBe(200);
      expect(typeof page.contentType).toBe('string');
      expect(Array.isArray(page.placeholders)).toBe(true);
    }
    const about = pageOf(manifest, site.url('/infodir/about.asp'));
    expect(about.etag).toBe('"about-v1"');
    expect(about.lastModified).toBe('Tue, 01 Jul 2025 10:00:00 GMT');
    expect(pageOf(manifest, site.url('/infodir/contact.asp')).etag).toBeUndefined();
    // Every file in OUT is a page or the manifest: no temp files left behind.
    const files = await listFiles(out);
    expect(files.sort()).toEqual([...manifest.pages.map((page) => page.file), 'prerender-manifest.json'].sort());
  });

  it('events: page, written, warning, failure, redirect, retry', async () => {
    const { events } = await crawlSite(['/errors/index.asp', '/redir/index.asp', '/prices/nometa.asp']);
    const types = new Set(events.map((event) => event.type));
    for (const type of ['page', 'written', 'warning', 'failure', 'redirect', 'retry']) expect(types.has(type), type).toBe(true);
    const written = events.filter((event) => event.type === 'written');
    expect(new Set(written.map((event) => event.url)).size).toBe(written.length);
  });
});

/** A port with nothing listening on it. */
async function closedPort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  await new Promise((resolve) => server.close(() => resolve(undefined)));
  return port;
}

/**
 * @param {string} doc as a JS string; encoded as UTF-8 or latin1 bytes
 * @param {string} charset
 */
function resolved(doc, charset) {
  const bytes = Buffer.from(doc, charset === 'utf-8' ? 'utf8' : 'latin1');
  return scanHtml(bytes.toString('latin1'), charset).links.map((link) => normalizeUrl(link.value, 'http://h.example/d/'));
}

describe('a non-ASCII character written as an entity in a URL is requested as a browser would', () => {
  it.each([
    // [document, charset, where a browser goes]
    ['<a href="caf&eacute;.asp">', 'utf-8', 'http://h.example/d/caf%C3%A9.asp'],
    ['<a href="r&#233;sum&#xE9;.asp">', 'utf-8', 'http://h.example/d/r%C3%A9sum%C3%A9.asp'],
    ['<a href="x.asp?q=&euro;">', 'utf-8', 'http://h.example/d/x.asp?q=%E2%82%AC'],
    ['<a href="&#8364;.asp">', 'windows-1252', 'http://h.example/d/%E2%82%AC.asp'],
    ['<a href="x.asp?q=&euro;&eacute;">', 'windows-1252', 'http://h.example/d/x.asp?q=%80%E9'],
  ])('%s (%s) -> %s', (doc, charset, expected) => {
    expect(resolved(doc, charset)).toEqual([expected]);
  });

  it('end to end: the crawler requests what a browser would', async () => {
    const out = path.join(await dirs.make(), 'out');
    const result = await crawl({ roots: [site.url('/entities/index.asp'), site.url('/entities/w1252.asp')], out, retryDelay: 1, retries: 0 });
    expect(site.count('/entities/caf%C3%A9.asp')).toBe(1);
    expect(site.count('/entities/r%C3%A9sum%C3%A9.asp?q=%E2%82%AC')).toBe(1);
    expect(site.count('/entities/%E2%82%AC.asp?q=%80')).toBe(1);
    expect(result.failed).toBe(0);
  });
});
