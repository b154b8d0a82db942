// @ts-check
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { checkConfig } from '../lib/config.js';
import { crawl } from '../lib/crawl/index.js';
import { preview } from '../lib/preview.js';
import { parseSitemap } from '../lib/sources.js';
import { exists, readManifest } from './crawl-helpers.js';
import { BIN, runNode } from './helpers/cli.js';
import { useTestDir } from './helpers/fixtures.js';

/**
 * Bugs found while testing issue 4 (preview, config files, sitemaps). Each
 * test states the expected behaviour and FAILS against the current lib/.
 * See the report for the diagnosis of each.
 */

const LIB_CLI = new URL('../lib/cli.js', import.meta.url).href;

/** @type {string} */
let dir;
const { cli, shop, sitemapSite, serve } = useTestDir('prerender-bugs-', (made) => { dir = made; });

/** @param {string[]} argv */
async function planRows(argv) {
  const result = await cli(['preview', ...argv, '--json']);
  const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line));
  return { code: result.code, rows: lines.filter((line) => line.type === 'url'), totals: lines.find((line) => line.type === 'totals') };
}

describe('preview: the plan misses URLs the crawl writes', () => {
  it('lists a sitemap URL that no crawled page links to', async () => {
    const site = await sitemapSite();
    const { rows, totals } = await planRows(['--sitemap', site.url, '--retries', '0']);
    const out = path.join(dir, 'out');
    await cli(['crawl', '--sitemap', site.url, '--retries', '0', '-o', out, '-q']);
    const manifest = await readManifest(out);
    const written = manifest.pages.map((/** @type {any} */ p) => p.url).sort();
    expect(written).toContain(`${site.origin}/info/privacy.asp`);
    expect(totals.pagesInScope).toBe(written.length);
    // Every page the crawl writes has its own crawl row in the plan.
    expect(rows.filter((row) => row.decision === 'crawl' && !row.redirectTo).map((row) => row.url).sort()).toEqual(written);
    expect(rows.find((row) => row.url === `${site.origin}/info/privacy.asp`)).toMatchObject({ decision: 'crawl', file: 'info/privacy.asp.html', reason: 'listed in a sitemap or URL list' });
  });

  it('lists the URLs of a URL list read from stdin', async () => {
    const site = await sitemapSite();
    const stdin = new PassThrough();
    stdin.end(`${site.product(4)}\n${site.product(5)}\n`);
    const result = await cli(['preview', '--urls', '-', '--json'], { stdin });
    const rows = result.stdout.trim().split('\n').map((line) => JSON.parse(line)).filter((line) => line.type === 'url');
    expect(rows.find((row) => row.url === site.product(4))).toMatchObject({ decision: 'crawl', file: 'catalog/product4.htm' });
    expect(rows.find((row) => row.url === site.product(5))).toMatchObject({ decision: 'crawl', file: 'catalog/product 5 (red).htm' });
  });

  it('lists an in-scope page reached only through a redirect', async () => {
    const site = await sitemapSite();
    const root = `${site.origin}/info/about.asp`; // links old-terms.asp, which redirects to terms.asp
    const { rows, totals } = await planRows([root]);
    const out = path.join(dir, 'out');
    await cli(['crawl', root, '-o', out, '-q']);
    const manifest = await readManifest(out);
    expect(manifest.pages.map((/** @type {any} */ p) => [p.url, p.file])).toContainEqual([`${site.origin}/info/terms.asp`, 'info/terms.asp.html']);
    expect(totals.pagesInScope).toBe(2);
    expect(rows.find((row) => row.url === `${site.origin}/info/terms.asp`)).toMatchObject({ decision: 'crawl', file: 'info/terms.asp.html' });
  });
});

describe('preview: wrong rows and totals', () => {
  it('gives an excluded root one row, "excluded", and does not count it as not crawled', async () => {
    const site = await sitemapSite();
    const { rows, totals } = await planRows([site.catalog, '-x', '/catalog/index.asp']);
    expect(rows.filter((row) => row.url === site.catalog)).toEqual([
      { type: 'url', url: site.catalog, decision: 'excluded', pattern: '/catalog/index.asp', reason: 'exclude /catalog/index.asp', from: null },
    ]);
    expect(totals.notCrawled).toBe(0);
  });

  it('counts the in-scope URLs left out by --limit / --max-pages the same way as crawl (each URL once)', async () => {
    const s = await shop({ products: 25, count: 10 });
    const options = { roots: [s.url], include: ['/st/dir.asp', '/st/product.asp'] };
    const { totals } = await preview({ ...options, limit: 5 });
    expect(totals.notCrawled).toBe(7); // products 5-10 and dir.asp?Start=11
    const result = await crawl({ ...options, maxPages: 5, out: path.join(dir, 'out') });
    // product 5 is linked from dir.asp and from product 4: still one URL.
    expect(result.notCrawled).toBe(totals.notCrawled);
  });
});

describe('preview --why', () => {
  it('knows that a URL listed in a --sitemap is in scope, as the plan does', async () => {
    const site = await sitemapSite();
    const { rows } = await planRows(['--sitemap', site.url, '--retries', '0']);
    expect(rows.find((row) => row.url === site.product(2))).toMatchObject({ decision: 'crawl', pattern: 'listed' });
    const why = await cli(['preview', '--sitemap', site.url, '--json', '--why', site.product(2)]);
    expect(why.code).toBe(0);
    expect(JSON.parse(why.stdout)).toMatchObject({ decision: 'crawl', pattern: 'listed', file: 'catalog/product2.htm' });
  });

  it('gives the file the crawl writes when the roots span several origins', async () => {
    const a = await shop({ products: 3 });
    const b = await sitemapSite();
    const args = [a.url, b.catalog, '-i', '/st/dir.asp', '/st/product.asp', '/catalog/', '--retries', '0'];
    const target = `${a.origin}/st/product.asp?SKUSetID=2`;
    const { rows } = await planRows(args);
    const planned = rows.find((row) => row.url === target);
    expect(planned.file).toBe(`127.0.0.1_${new URL(a.origin).port}/st/product2.htm`);
    const why = JSON.parse((await cli(['preview', ...args, '--json', '--why', target])).stdout);
    expect(why.file).toBe(planned.file);
  });
});

describe('--write-sitemap', () => {
  it('finishes when the site has its own /sitemap.xml in scope (the name is taken, so the page gets another)', async () => {
    const origin = await serve((req, res) => {
      if (req.url === '/sitemap.xml') {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>');
      } else {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<a href="/sitemap.xml">sitemap</a>');
      }
    });
    // A child process: the hang is a synchronous loop that no in-process timeout could stop.
    const result = await runNode([BIN, 'crawl', `${origin}/`, '--write-sitemap', '--site-url', 'https://static.example/', '-o', 'out', '-q'], { cwd: dir, limitMs: 5000 });
    expect(result.timedOut, 'prerender crawl was still running after 5 s').toBe(false);
    expect(result.code).toBe(0);
    const manifest = await readManifest(path.join(dir, 'out'));
    const page = manifest.pages.find((/** @type {any} */ p) => p.url === `${origin}/sitemap.xml`);
    expect(page.file).not.toMatch(/^sitemap(-\d+)?\.xml$/);
  });
});

describe('sitemaps', () => {
  it('takes only the page <loc> of a sitemap with the Google image extension, not <image:loc>', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>https://shop.example/st/product.asp?SKUSetID=1</loc>
    <image:image><image:loc>https://shop.example/img/product1.jpg</image:loc></image:image>
  </url>
</urlset>`;
    expect(parseSitemap(xml).locs).toEqual(['https://shop.example/st/product.asp?SKUSetID=1']);
  });

  it('reads a valid uncompressed sitemap of 50,000 URLs (over 10 MiB) with the default options', async () => {
    let origin = '';
    let body = '';
    origin = await serve((req, res) => {
      if (req.url === '/sitemap.xml') {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(body);
      } else {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<p>product</p>');
      }
    });
    const entries = [];
    for (let n = 0; n < 50_000; n++) {
      entries.push(`<url><loc>${origin}/catalogue/garden-and-outdoor/furniture/product-with-a-long-descriptive-slug-${n}.html</loc><lastmod>2024-01-01T00:00:00+00:00</lastmod><changefreq>weekly</changefreq><priority>0.5</priority></url>`);
    }
    body = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${entries.join('\n')}\n</urlset>\n`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(10 * 1024 * 1024); // protocol limit: 50,000 URLs and 50 MB
    const { totals } = await preview({ sitemap: [`${origin}/sitemap.xml`], limit: 1, retries: 0 });
    expect(totals.pagesInScope).toBe(1);
  });
});

describe('config files', () => {
  it('accepts maxPageBytes with the k/m/g suffix its own error message offers', () => {
    expect(() => checkConfig({ maxPageBytes: '10m' }, 'prerender.config.json')).not.toThrow();
  });

  it.each([
    ['roots', ['shop.example/st/dir.asp']],
    ['sitemap', ['sitemap.xml']],
    ['header', ['Cookie preview=1']],
    ['pricePath', 'price'],
    ['include', ['st/product.asp']],
  ])('names the file and the key of a bad "%s" value', async (key, value) => {
    await writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ roots: ['http://127.0.0.1:9/st/dir.asp'], [key]: value }));
    const result = await cli(['crawl', '-o', path.join(dir, 'out')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('prerender.config.json');
    expect(result.stderr).toContain(`"${key}"`);
  });

  it('reads a relative "urls" of the config file from the working directory given to run()', async () => {
    const site = await sitemapSite();
    await writeFile(path.join(dir, 'urls.txt'), `${site.product(1)}\n`);
    await writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ urls: 'urls.txt', out: path.join(dir, 'out') }));
    const result = await cli(['crawl', '-q']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('writes a relative "out" of the config file under the working directory given to run()', async () => {
    const site = await sitemapSite();
    const project = path.join(dir, 'project');
    const elsewhere = path.join(dir, 'elsewhere');
    await Promise.all([project, elsewhere].map((d) => mkdir(d)));
    await writeFile(path.join(project, 'prerender.config.json'), JSON.stringify({ roots: [`${site.origin}/info/privacy.asp`], out: 'site' }));
    // run() embedded in a process whose own cwd is another directory.
    const script = `import { run } from ${JSON.stringify(LIB_CLI)};
const io = { stdout: process.stdout, stderr: process.stderr, env: {}, cwd: ${JSON.stringify(project)} };
process.exitCode = await run(['crawl', '-q'], io);`;
    const result = await runNode(['--input-type=module', '-e', script], { cwd: elsewhere, limitMs: 10_000 });
    expect(result.code).toBe(0);
    expect(await exists(path.join(elsewhere, 'site'))).toBe(false);
    expect(await exists(path.join(project, 'site', 'prerender-manifest.json'))).toBe(true);
  });
});
