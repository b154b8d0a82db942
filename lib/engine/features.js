// @ts-check
import { plugResume } from './resume.js';
import { plugUnasked } from './unasked.js';
import { plugRecrawl } from './carry.js';
import { plugIgnore } from './ignore-spans.js';
import { plugEarlyWrites } from './early.js';
import { plugPrecompress } from './precompress.js';

/** Every feature on the hooks, in the order each hook asks them; the phases never ask which apply. @param {import('./run.js').CrawlRun} run */
export function plugFeatures(run) {
  if (run.resumed || run.journal) plugResume(run);
  if (run.unasked) plugUnasked(run);
  if (run.prior) plugRecrawl(run);
  if (run.ignore) plugIgnore(run);
  const { revalidator, early } = run;
  if (revalidator) run.hooks.on('afterPage', 'revalidation', (page) => revalidator.forget(page.key));
  if (early) plugEarlyWrites(run, early);
  if (run.options.precompress.length > 0) plugPrecompress(run);
}
