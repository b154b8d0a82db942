// @ts-check
import { plugResume } from './resume.js';
import { plugUnasked } from './unasked.js';
import { plugRecrawl } from './carry.js';
import { plugIgnore } from './ignore-spans.js';
import { plugEarlyWrites } from './early.js';
import { plugPrecompress } from './precompress.js';

/**
 * Every feature that plugs into the engine's hooks (hooks.js), in the order each hook asks them.
 * The run's parts say which apply; the phases never ask.
 * @param {import('./run.js').CrawlRun} run
 */
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
