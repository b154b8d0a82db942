// @ts-check
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { getEventListeners } from 'node:events';
import path from 'node:path';
import { Parser } from 'htmlparser2';
import { crawl, preview, explainUrl, withRetry, HttpStatusError } from '../lib/index.js';
import { startWiki } from '../fixtures/wiki.js';
import { startStaticServer } from '../fixtures/static-server.js';
import { attr, fileOf, readManifest, tempDirs } from './crawl-helpers.js';
import { runCli } from './helpers/cli.js';

/**
 * The crawl's contract on real sites (a PHP wiki's shape): forms stay live,
 * identical duplicates share a file, canonical URLs stay public, the tree
 * works under a sub-path, requisites outside the page scope, readable names,
 * exit status, politeness. One test (or more) per numbered item of the issue.
 */

/** @type {Awaited<ReturnType<typeof startWiki>>} */
let wiki;
/** @type {Awaited<ReturnType<typeof startWiki>>} a second origin, as a CDN */
let cdn;
const dirs = tempDirs();

beforeAll(async () => {
  cdn = await startWiki();
  wiki = await startWiki({ cdn: cdn.origin });
});
afterAll(async () => {
  await wiki?.close();
  await cdn?.close();
  await dirs.cleanup();
});
beforeEach(() => {
  wiki.reset();
  cdn.reset();
});

/** The wiki's usual scope: the pages, not the actions (a user's first command). */
const SCOPE = { include: ['/doku.php?id=', '/index.html'], exclude: ['/doku.php?*do='] };

/**
 * @param {Record<string, unknown>} [options]
 * @param {string[]} [roots]
 */
async function crawlWiki(options = {}, roots = [wiki.url('/'), wiki.url('/doku.php?id=start')]) {
  const out = path.join(await dirs.make(), 'out');
  const result = await crawl({ roots, out, retries: 0, timeout: 5000, ...SCOPE, ...options });
  const manifest = await readManifest(out);
  const text = (/** @type {string} */ url) => readFile(path.join(out, fileOf(manifest, url)), 'utf8');
  return { out, result, manifest, text };
}

/** @param {string[]} argv */
async function cli(argv) {
  return runCli(argv, { cwd: await dirs.make() });
}

describe('1. forms stay live', () => {
  it('a GET form whose action is an in-scope page, and a POST form: neither fetched nor pointed at a static file', async () => {
    const { result, text } = await crawlWiki();
    expect(result.failed).toBe(0);
    const start = await text(wiki.url('/doku.php?id=start'));
    // Left byte for byte as written: searching the static copy reaches the live wiki.
    expect(attr(start, 'search', 'action')).toBe('/doku.php?id=start');
    expect(attr(start, 'login', 'action')).toBe('doku.php?id=start&amp;do=login');
    expect(start).toContain('formaction="doku.php?id=start&amp;do=register"');
    // The login action is never fetched, with any method.
    for (const action of ['/doku.php?id=start&do=login', '/doku.php?id=start&do=register']) {
      expect(wiki.count(action)).toBe(0);
      expect(wiki.count(action, 'POST')).toBe(0);
    }
  });

  it('a form action alone never becomes a page; preview says why', async () => {
    const rows = [];
    await preview({ roots: [wiki.url('/doku.php?id=start')], include: ['/doku.php'], retries: 0 }, { onRow: (row) => rows.push(row) });
    const login = rows.find((row) => row.url === wiki.url('/doku.php?id=start&do=login'));
    expect(login).toMatchObject({ decision: 'dynamic' });
    expect(login?.reason).toMatch(/^form action: a form submits its fields to the live site/);
    expect(wiki.count('/doku.php?id=start&do=login')).toBe(0);
    const why = await explainUrl({ roots: [wiki.url('/doku.php?id=start')], include: ['/doku.php'], retries: 0 }, wiki.url('/doku.php?id=start&do=login'));
    expect(why.asFormAction).toMatch(/never crawled/);
  });
});

describe('2. identical duplicates share a file', () => {
  it('"/" and "/index.html" with the same bytes: one index.html, both URLs in the manifest, links to either lead to it, no warning', async () => {
    const { manifest, result, text } = await crawlWiki();
    expect(fileOf(manifest, wiki.url('/'))).toBe('index.html');
    expect(fileOf(manifest, wiki.url('/index.html'))).toBe('index.html');
    expect(manifest.pages.filter((page) => page.file === 'index.html')).toHaveLength(2);
    expect(manifest.warnings.filter((warning) => warning.code === 'NAME_COLLISION')).toEqual([]);
    expect(result.warnings).toBe(0);
    const other = await text(wiki.url('/doku.php?id=other'));
    expect(attr(other, 'home', 'href')).toBe('index.html');
    const home = await text(wiki.url('/'));
    expect(attr(home, 'again', 'href')).toBe('index.html');
  });

  it('preview plans the same shared file', async () => {
    /** @type {import('../lib/preview/index.js').PlanRow[]} */
    const rows = [];
    const { totals } = await preview({ roots: [wiki.url('/'), wiki.url('/doku.php?id=start')], ...SCOPE, retries: 0 }, { onRow: (row) => rows.push(row) });
    expect(rows.find((row) => row.url === wiki.url('/index.html'))?.file).toBe('index.html');
    expect(totals.collisions).toBe(0);
  });
});

describe('3. canonical links stay public', () => {
  it('left as written; made absolute on --site-url (the static file\'s public URL); never a relative static path', async () => {
    const plain = await crawlWiki();
    const start = await plain.text(wiki.url('/doku.php?id=start'));
    expect(start).toContain(`<link rel="canonical" href="${wiki.origin}/doku.php?id=start">`);
    expect(start).toContain(`<meta property="og:url" content="${wiki.origin}/doku.php?id=start">`);

    const sited = await crawlWiki({ siteUrl: 'https://static.example/docs/' });
    const file = fileOf(sited.manifest, wiki.url('/doku.php?id=start'));
    const html = await sited.text(wiki.url('/doku.php?id=start'));
    expect(html).toContain(`<link rel="canonical" href="https://static.example/docs/${file}">`);
    expect(html).toContain(`<meta property="og:url" content="https://static.example/docs/${file}">`);
  });
});

/**
 * Every URL a page's HTML refers to (href, src, srcset, style url()), by our own parser.
 * @param {string} html
 */
function references(html) {
  /** @type {string[]} */
  const found = [];
  const parser = new Parser({
    onopentag(name, attributes) {
      if (name === 'form') return; // forms stay live by design
      for (const key of ['href', 'src']) if (attributes[key] !== undefined) found.push(attributes[key]);
      if (attributes.style) for (const match of attributes.style.matchAll(/url\(([^)]*)\)/g)) found.push(match[1].replace(/^['"]|['"]$/g, ''));
    },
  }, { decodeEntities: true });
  parser.write(html);
  parser.end();
  return found;
}

describe('4. portable trees: --relative-links (on by default)', () => {
  it('served under /docs/ by a plain static server, every link of every written file resolves (no 404), the logo and stylesheets included', async () => {
    // Links to the live wiki (actions, search) go to its host: --dynamic-base, as on any host but the origin's.
    const { out, manifest } = await crawlWiki({ assets: true, dynamicBase: wiki.origin });
    const statics = await startStaticServer(out, { prefix: '/docs/' });
    try {
      /** @type {string[]} */
      const missing = [];
      let followed = 0;
      for (const page of manifest.pages) {
        const base = new URL(`/docs/${page.file}`, statics.origin);
        const body = await readFile(path.join(out, page.file), 'utf8');
        const refs = page.contentType.startsWith('text/css') ? [...body.matchAll(/url\(([^)]*)\)/g)].map((m) => m[1]) : references(body);
        for (const ref of refs) {
          const target = new URL(ref, base);
          if (target.origin !== statics.origin) continue; // out of scope: live links
          followed++;
          const response = await fetch(target);
          await response.arrayBuffer();
          if (response.status !== 200) missing.push(`${page.file}: ${ref} -> ${target.pathname} (${response.status})`);
        }
      }
      expect(missing).toEqual([]);
      expect(followed).toBeGreaterThan(30);
    } finally {
      await statics.close();
    }
  });

  it('root-relative and absolute links to written files become relative; --no-relative-links keeps those that already reach the file at the root', async () => {
    const relative = await crawlWiki({ assets: true });
    const html = await relative.text(wiki.url('/doku.php?id=start'));
    expect(html).toContain('<link rel="stylesheet" href="lib/style.css">');
    expect(html).toContain('<img src="lib/img/logo.png" alt="logo">');
    expect(attr(html, 'other', 'href')).toBe('doku.php@id=other.html');
    const css = await readFile(path.join(relative.out, 'lib/style.css'), 'utf8');
    expect(css).toBe('@import url(print.css);\nbody { background: url(img/bg.png) }\n');

    const kept = await crawlWiki({ assets: true, relativeLinks: false });
    const keptHtml = await kept.text(wiki.url('/doku.php?id=start'));
    expect(keptHtml).toContain('<link rel="stylesheet" href="/lib/style.css">');
    expect(keptHtml).toContain('<img src="/lib/img/logo.png" alt="logo">');
  });
});

describe('5-8. requisites', () => {
  it('5. --assets fetches requisites on the root\'s origin outside the page scope; --assets-origins adds a CDN, written under its host', async () => {
    const { manifest, text, result } = await crawlWiki({ assets: true, assetsOrigins: [cdn.origin] });
    for (const asset of ['/lib/style.css', '/lib/print.css', '/lib/app.js', '/lib/img/logo.png', '/lib/img/bg.png', '/favicon.ico']) {
      expect(wiki.count(asset), asset).toBe(1);
    }
    expect(cdn.count('/cdn.js')).toBe(1);
    const cdnFile = fileOf(manifest, `${cdn.origin}/cdn.js`);
    expect(cdnFile).toBe(`127.0.0.1_${new URL(cdn.origin).port}/cdn.js`);
    expect(await text(wiki.url('/doku.php?id=start'))).toContain(`<script src="${cdnFile}"></script>`);
    // Pages keep their names: another origin's requisites do not make the crawl multi-origin.
    expect(fileOf(manifest, wiki.url('/doku.php?id=start'))).toBe('doku.php@id=start.html');
    expect(result.failed).toBe(0);
  });

  it('5. an --exclude still wins over --assets', async () => {
    await crawlWiki({ assets: true, exclude: [...SCOPE.exclude, '/lib/img/'] });
    expect(wiki.count('/lib/img/logo.png')).toBe(0);
    expect(wiki.count('/lib/style.css')).toBe(1);
  });

  it('6 and 8. without --assets the summary says once how many requisite references were not fetched; pages and assets are counted apart', async () => {
    const without = await cli(['crawl', wiki.url('/doku.php?id=start'), '-i', '/doku.php?id=', '-x', '/doku.php?*do=', '-o', path.join(await dirs.make(), 'out')]);
    expect(without.code).toBe(0);
    const line = without.stdout.split('\n').filter((l) => /references? to the site (was|were) not fetched/.test(l));
    expect(line).toHaveLength(1);
    expect(line[0]).toMatch(/^\d+ stylesheet\/script\/image references to the site were not fetched .*add --assets/);
    expect(Number(line[0].split(' ')[0])).toBe(6 * 4 + 1); // six pages with a stylesheet, an icon, a script and a logo; one style url()
    expect(without.stdout).toMatch(/^Wrote 6 pages to /m);

    const withAssets = await cli(['crawl', wiki.url('/doku.php?id=start'), '-i', '/doku.php?id=', '-x', '/doku.php?*do=', '--assets', '-o', path.join(await dirs.make(), 'out'), '--json']);
    const summary = JSON.parse(withAssets.stdout);
    expect(summary).toMatchObject({ pages: 6, assets: 6, requisitesNotFetched: 0 });
  });

  it('7. --why and the preview plan agree on requisites, with and without --assets', async () => {
    const base = { roots: [wiki.url('/doku.php?id=start')], ...SCOPE, retries: 0 };
    for (const assets of [false, true]) {
      /** @type {import('../lib/preview/index.js').PlanRow[]} */
      const rows = [];
      await preview({ ...base, assets }, { onRow: (row) => rows.push(row) });
      const planned = rows.find((row) => row.url === wiki.url('/lib/style.css'));
      const why = await explainUrl({ ...base, assets }, wiki.url('/lib/style.css'));
      expect(why.decision, `assets ${assets}`).toBe(planned?.decision);
      expect(why.decision).toBe(assets ? 'crawl' : 'dynamic');
    }
  });
});

describe('9. naming rules and readable names', () => {
  it('--name gives query URLs readable files; the header still wins; links are readable', async () => {
    const { manifest, text } = await crawlWiki({ name: ['/doku.php?id=*', '{query.id}.html'] });
    expect(fileOf(manifest, wiki.url('/doku.php?id=start'))).toBe('start.html');
    expect(fileOf(manifest, wiki.url('/doku.php?id=wiki:syntax'))).toBe('wiki_syntax.html'); // ":" cannot be in a file name
    const start = await text(wiki.url('/doku.php?id=start'));
    expect(attr(start, 'other', 'href')).toBe('other.html');
  });

  it('without a rule, query URLs are named with their query folded in, and links to them are not percent-encoded', async () => {
    const { manifest, text } = await crawlWiki();
    expect(fileOf(manifest, wiki.url('/doku.php?id=wiki:syntax'))).toBe('doku.php@id=wiki_syntax.html'); // ":" cannot be in a file name
    const start = await text(wiki.url('/doku.php?id=start'));
    expect(attr(start, 'syntax', 'href')).toBe('doku.php@id=wiki_syntax.html');
    expect(start).not.toMatch(/%40|%3D/);
  });

  it('a rule giving an unsafe name falls back to the default name with a NAME_RULE warning', async () => {
    const { manifest } = await crawlWiki({ name: [['/doku.php?id=other', '../{query.id}.html']] });
    expect(fileOf(manifest, wiki.url('/doku.php?id=other'))).toBe('doku.php@id=other.html');
    expect(manifest.warnings.map((warning) => warning.code)).toContain('NAME_RULE');
  });
});

describe('12. no Node warnings at any concurrency', () => {
  it('fifty requests retrying at once hang a single listener on the run\'s signal', async () => {
    const controller = new AbortController();
    let calls = 0;
    const failing = { load: async () => { if (++calls <= 50) throw new HttpStatusError(503); return /** @type {any} */ ({ status: 200 }); }, close: async () => {} };
    const loader = withRetry(failing, { retries: 1, retryDelay: 20, random: () => 0 });
    /** @type {Error[]} */
    const warnings = [];
    const onWarning = (/** @type {Error} */ warning) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const loads = Array.from({ length: 50 }, () => loader.load('http://h.invalid/', { signal: controller.signal }));
      await new Promise((resolve) => setImmediate(resolve));
      expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
      await Promise.all(loads);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((warning) => warning.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('a crawl at -c 32 prints no warning', async () => {
    const { stderr, code } = await cli(['crawl', wiki.url('/doku.php?id=start'), '-i', '/doku.php?id=', '-x', '/doku.php?*do=', '-c', '32', '--assets', '-q', '-o', path.join(await dirs.make(), 'out')]);
    expect(code).toBe(0);
    expect(stderr).toBe('');
  });
});

describe('15. preview totals show the host of other origins', () => {
  it('dynamic targets on another origin are grouped with their host', async () => {
    const { totals } = await preview({ roots: [wiki.url('/doku.php?id=start')], ...SCOPE, retries: 0 });
    const paths = totals.dynamicByPath.map((group) => group.path);
    expect(paths).toContain(`127.0.0.1:${new URL(cdn.origin).port}/cdn.js`);
    expect(paths).toContain('/lib/style.css');
  });
});

describe('16. politeness', () => {
  it('--rate holds across the run, measured at the origin', async () => {
    const rate = 20; // one request every 50 ms
    await crawlWiki({ rate, concurrency: 8 });
    const times = wiki.times.map((t) => t.at);
    expect(times.length).toBeGreaterThanOrEqual(5);
    // Arrivals jitter with the network and the load, so allow one interval of slack over any run of requests;
    // without --rate, the eight connections would start together.
    const interval = 1000 / rate;
    for (let i = 0; i < times.length; i++) {
      for (let j = i + 2; j < times.length; j++) expect(times[j] - times[i], `requests ${i} to ${j}`).toBeGreaterThanOrEqual((j - i - 1) * interval);
    }
  });

  it('--delay spaces the requests of one connection', async () => {
    await crawlWiki({ delay: 60, concurrency: 1 });
    const times = wiki.times.map((t) => t.at);
    expect(times.length).toBeGreaterThanOrEqual(5);
    for (let i = 0; i < times.length; i++) {
      for (let j = i + 2; j < times.length; j++) expect(times[j] - times[i], `requests ${i} to ${j}`).toBeGreaterThanOrEqual((j - i - 1) * 60);
    }
  });

  it('--robots: robots.txt is read once and obeyed; a nofollow page\'s links are rewritten, not followed', async () => {
    const { manifest, text } = await crawlWiki({ robots: true });
    expect(wiki.count('/robots.txt')).toBe(1);
    expect(wiki.count('/doku.php?id=private')).toBe(0);
    expect(wiki.count('/doku.php?id=hidden')).toBe(0);
    expect(wiki.count('/doku.php?id=nofollow')).toBe(1);
    const nofollow = await text(wiki.url('/doku.php?id=nofollow'));
    expect(attr(nofollow, 'start2', 'href')).toBe(fileOf(manifest, wiki.url('/doku.php?id=start')));
    expect(attr(nofollow, 'hidden', 'href')).toBe('doku.php?id=hidden'); // not crawled: stays live

    await crawlWiki();
    expect(wiki.count('/doku.php?id=private')).toBe(1); // off by default: a site owner's tool
    expect(wiki.count('/doku.php?id=hidden')).toBe(1);
  });
});
