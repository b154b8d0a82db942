// @ts-check
import { defaultLoader } from '../fetch/index.js';
import { isHtmlType } from '../naming/file-names.js';
import { resolveLinks, scanDocument } from '../document/rewrite.js';

/** Pages `--why` reads for forms, at most: the roots first, then the URL itself. */
const MAX_PAGES_READ = 6;

/**
 * The first of `pages`, fetched once each, with a form that submits to `target`: a form on a deeper page goes unseen.
 * @param {import('../options/crawl-options.js').ResolvedCrawlOptions} o @param {string[]} pages canonical @param {string} target canonical
 * @param {Map<string, { body: Buffer, contentType: string }>} fetched not fetched again @returns {Promise<string | null>}
 */
export async function formSubmittingTo(o, pages, target, fetched) {
  const loader = defaultLoader({ concurrency: 1, timeout: o.timeout, retries: o.retries, maxPageBytes: o.maxPageBytes, headers: o.headers, retryDelay: o.retryDelay });
  try {
    for (const page of [...new Set(pages)].slice(0, MAX_PAGES_READ)) {
      const known = fetched.get(page);
      const response = known ? null : await loader.load(page, { signal: o.signal }).catch(() => null);
      const body = known?.body ?? (response?.location === undefined ? response?.body : undefined);
      const contentType = known?.contentType ?? String(response?.headers['content-type'] ?? '');
      if (!body || !isHtmlType(contentType)) continue;
      const scan = scanDocument(body, 'html', /charset=([^;\s]+)/i.exec(contentType)?.[1] ?? 'utf-8');
      resolveLinks(scan, new URL(page));
      if (scan.links.some((link) => link.kind === 'form' && link.key === target)) return page;
    }
    return null;
  } finally {
    await loader.close();
  }
}
