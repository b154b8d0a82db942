// @ts-check
/**
 * What a render never lets through: methods but GET and HEAD (no cart POST, no beacon), images, media and fonts unless
 * --render-resources all, the built-in analytics and ads hosts unless --no-render-block-defaults, and --render-block.
 */

/** Analytics, tag managers, ads and session recorders, with their subdomains. */
export const DEFAULT_BLOCKED_HOSTS = [
  'google-analytics.com', 'analytics.google.com', 'googletagmanager.com', 'googletagservices.com',
  'doubleclick.net', 'googlesyndication.com', 'googleadservices.com', 'adservice.google.com',
  'connect.facebook.net', 'facebook.com', 'bat.bing.com', 'clarity.ms', 'hotjar.com', 'hotjar.io',
  'segment.com', 'segment.io', 'cdn.segment.com', 'mixpanel.com', 'amplitude.com', 'heap.io', 'heapanalytics.com',
  'fullstory.com', 'mouseflow.com', 'newrelic.com', 'nr-data.net', 'sentry.io', 'browser.sentry-cdn.com',
  'scorecardresearch.com', 'quantserve.com', 'criteo.com', 'criteo.net', 'taboola.com', 'outbrain.com',
  'adnxs.com', 'adsrvr.org', 'amazon-adsystem.com', 'pubmatic.com', 'rubiconproject.com', 'openx.net',
  'snap.licdn.com', 'ads.linkedin.com', 'analytics.tiktok.com', 'static.ads-twitter.com', 'ads-twitter.com',
  'matomo.cloud', 'plausible.io', 'cloudflareinsights.com', 'mc.yandex.ru',
];

export const HEAVY_TYPES = new Set(['image', 'media', 'font']);

/** @typedef {(url: URL) => boolean} UrlTest */

/** @param {string} text */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** With a "/", a URL prefix ("*" any run; "/..." a path on any origin); without, a host and its subdomains. @param {string} pattern @returns {UrlTest} */
export function compileBlockPattern(pattern) {
  if (!pattern.includes('/')) {
    const host = pattern.toLowerCase();
    return (url) => url.hostname === host || url.hostname.endsWith(`.${host}`);
  }
  const regex = new RegExp('^' + pattern.split('*').map(escapeRegExp).join('.*'));
  if (pattern.startsWith('/')) return (url) => regex.test(url.pathname + url.search);
  return (url) => regex.test(url.href);
}

/** @param {{ renderBlock: string[], renderBlockDefaults: boolean }} options @returns {UrlTest} true: blocked */
export function createBlocklist({ renderBlock, renderBlockDefaults }) {
  const tests = renderBlock.map(compileBlockPattern);
  if (renderBlockDefaults) {
    const hosts = new Set(DEFAULT_BLOCKED_HOSTS);
    tests.push((url) => {
      for (let host = url.hostname; host.includes('.'); host = host.slice(host.indexOf('.') + 1)) {
        if (hosts.has(host)) return true;
      }
      return false;
    });
  }
  return (url) => tests.some((test) => test(url));
}
