// prerender configuration. Keys are the command-line options in camelCase;
// a flag given on the command line overrides the value here.
// Docs: docs/config.md. Check it with: npx prerender preview

/** @type {import('prerender').CrawlOptions} */
export default {
  // Where crawling starts: a whole site, a directory, or one page.
  roots: ['http://localhost:8080/st/dir.asp'],

  // Scope. "/path" is a path on the root's origin, otherwise an absolute URL;
  // a pattern matches as a prefix of the URL (path and query); "*" matches any
  // run of characters; exclude wins. Without include, each root's directory
  // and below is in scope.
  include: ['/st/dir.asp', '/st/product.asp'],
  exclude: [],

  // Output directory for the static tree and prerender-manifest.json.
  out: './prerendered',

  // Politeness and limits.
  concurrency: 8,
  maxPages: 100000,
  timeout: 30000, // ms per request
  retries: 2, // network errors, timeouts, 5xx and 429 (Retry-After honoured)
  maxPageBytes: 10485760, // 10 MiB

  // Out-of-scope links (cart, checkout, search): uncomment when the static
  // tree is served from another host than the dynamic site.
  // dynamicBase: 'https://shop.example.com/',

  // Also fetch in-scope stylesheets, scripts and images.
  assets: false,

  // Price slots: 'filter' (prerender serve), 'ssi' (nginx) or 'esi' (Varnish, CDNs).
  placeholders: 'filter',
  pricePath: '/price',

  // Extra roots without an intermediate page:
  // sitemap: ['http://localhost:8080/sitemap.xml'],
  // urls: 'urls.txt', // one URL per line, '-' for stdin

  // Write sitemap.xml for the static tree (needs siteUrl).
  // writeSitemap: true,
  // siteUrl: 'https://static.example.com/',

  // Extra request headers, e.g. a session cookie for a staging site.
  // header: ['Cookie: preview=1'],

  // Where `prerender deploy out production` sends the tree (docs/deploy.md):
  // named targets, releases kept per target, when to switch.
  // targets: { production: 'ssh://deploy@web1/srv/shop', staging: '/srv/staging/shop' },
  // keep: 5,
  // switch: 'all', // or 'each'
};
