// @ts-check
import { BlobsNotSharedError, PrerenderError, StateEntryError, UsageError, ConfigError } from '../errors.js';

/** Everything the CLI shows a person: progress, summary, and errors (what happened, then what to try). */

/** @param {number} ms */
export function formatDuration(ms) {
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.round(seconds % 60)} s`;
}

/**
 * 12,345: whole numbers by hand, since the first toLocaleString loads ICU's data, a CPU cost every command's summary paid.
 * @param {number} n
 */
export const count = (n) => (Number.isSafeInteger(n) ? String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',') : n.toLocaleString('en-US'));

/** @param {number} bytes */
function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * @typedef {{ fetched: number, failed: number, written: number, queued: number, active: number, startedAt: number, phase?: string }} ProgressStats
 * @typedef {NodeJS.WritableStream & { isTTY?: boolean, columns?: number }} ProgressStream
 */

/** @param {ProgressStats} stats */
function progressText(stats) {
  const elapsed = (Date.now() - stats.startedAt) / 1000;
  const rate = elapsed > 0 ? stats.fetched / elapsed : 0;
  return stats.phase === 'write'
    ? `writing · ${count(stats.written)} of ${count(stats.fetched)} written · ${count(stats.failed)} failed · ${formatDuration(elapsed * 1000)}`
    : `${count(stats.fetched)} fetched · ${count(stats.queued + stats.active)} queued · ${count(stats.failed)} failed · ${rate.toFixed(0)} pages/s · ${formatDuration(elapsed * 1000)}`;
}

/** Redrawn at most 5 times a second. @param {ProgressStream} stream @param {() => ProgressStats} read */
export function startProgress(stream, read) {
  let last = '';
  const draw = () => {
    const width = (stream.columns ?? 100) - 1;
    last = progressText(read()).slice(0, width);
    stream.write(`\r${last}\x1b[K`);
  };
  const timer = setInterval(draw, 200);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      if (last) stream.write('\r\x1b[K');
    },
  };
}

/**
 * The live line on a terminal; in a CI log a line every `intervalSeconds`, as wget's --progress=dot; none with -q or 0.
 * @param {ProgressStream} stream @param {() => ProgressStats} read @param {{ quiet?: boolean, intervalSeconds: number }} options @returns {{ stop(): void } | null}
 */
export function progressFor(stream, read, options) {
  if (options.quiet) return null;
  if (stream.isTTY) return startProgress(stream, read);
  if (options.intervalSeconds <= 0) return null;
  const timer = setInterval(() => stream.write(`prerender: ${progressText(read())}\n`), options.intervalSeconds * 1000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** @param {import('../crawler/index.js').CrawlResult} result @param {{ warningsList?: { url: string, message: string }[] }} [extra] */
export function formatSummary(result, extra = {}) {
  const lines = [];
  const rate = result.durationMs > 0 ? (result.pages / (result.durationMs / 1000)).toFixed(0) : '0';
  const assets = result.assets > 0 ? ` and ${count(result.assets)} asset${result.assets === 1 ? '' : 's'}` : '';
  const churn = result.churn;
  // A re-crawl: last crawl's pages were seen again or kept.
  const recrawl = churn !== undefined && (churn.notModified + churn.sameBytes + churn.changed + churn.removed + churn.stale > 0 || result.kept > 0);
  // It writes only what changed, so its pages are crawled, not all written.
  const did = recrawl ? 're-crawled' : 'wrote';
  const verb = result.interrupted ? `Interrupted: ${did}` : did[0].toUpperCase() + did.slice(1);
  lines.push(`${verb} ${count(result.pages)} page${result.pages === 1 ? '' : 's'}${assets} ${recrawl ? 'into' : 'to'} ${result.out} in ${formatDuration(result.durationMs)} (${rate} pages/s)`);
  // An origin down during a re-crawl: every page kept from the last crawl, which the counts alone do not say.
  if (result.stale > 0 && result.stale >= result.pages) lines.push('No page could be fetched: every file is the last crawl\'s, kept stale (see the warnings below)');
  const carried = result.carried ? result.carried.fresh + result.carried.listed + result.carried.dated : 0;
  if (carried > 0) {
    const { fresh, listed, dated } = result.carried;
    const how = [fresh > 0 ? `${count(fresh)} still fresh` : '', listed > 0 ? `${count(listed)} not in the --changed list` : '', dated > 0 ? `${count(dated)} by their sitemap date` : ''].filter(Boolean);
    lines.push(`Fetched ${count(result.fetched)} page${result.fetched === 1 ? '' : 's'}; carried ${count(carried)} from the last crawl without a request (${how.join(', ')})`);
  }
  if (result.resumed > 0) lines.push(`Resumed the crawl killed or interrupted before: ${count(result.resumed)} page${result.resumed === 1 ? '' : 's'} taken from its journal, not fetched again`);
  if (result.failed > 0) {
    lines.push(`${count(result.failed)} failed:`);
    for (const failure of result.failures.slice(0, 5)) {
      const from = failure.referrers[0] ? ` (linked from ${failure.referrers[0]})` : '';
      lines.push(`  ${failure.url}  ${failure.message}${from}`);
    }
    if (result.failed > 5) lines.push(`  … and ${count(result.failed - 5)} more: see "errors" in the manifest`);
    for (const code of new Set(result.failures.map((failure) => failure.code))) if (code && FAILURE_HINTS[code]) lines.push(FAILURE_HINTS[code]);
  }
  const missing = result.requisitesMissing ?? [];
  if (missing.length > 0) {
    lines.push(`${count(missing.length)} requisite${missing.length === 1 ? '' : 's'} the site lacks (HTTP 404/410), listed in the manifest's errors but not counted as failed (--requisite-errors fail counts them):`);
    for (const error of missing.slice(0, 3)) lines.push(`  ${error.url}  ${error.message}${error.referrers[0] ? ` (linked from ${error.referrers[0]})` : ''}`);
    if (missing.length > 3) lines.push(`  … and ${count(missing.length - 3)} more: see "errors" in the manifest`);
  }
  const warnings = extra.warningsList ?? [];
  if (result.warnings > 0) {
    lines.push(`${count(result.warnings)} warning${result.warnings === 1 ? '' : 's'}:`);
    for (const warning of warnings.slice(0, 3)) lines.push(`  ${warning.url}  ${warning.message}`);
    if (result.warnings > 3) lines.push(`  … and ${count(result.warnings - 3)} more: see "warnings" in the manifest`);
  }
  if (result.requisitesNotFetched > 0) {
    lines.push(`${count(result.requisitesNotFetched)} stylesheet/script/image reference${result.requisitesNotFetched === 1 ? ' to the site was' : 's to the site were'} not fetched (they still load from the live site); add --assets to copy them into the tree`);
  }
  if (result.notCrawled > 0) lines.push(`${result.notCrawledSaturated ? 'At least ' : ''}${count(result.notCrawled)} in-scope URLs were not crawled: --max-pages ${count(result.maxPages)} reached; raise --max-pages to crawl them (links to them stay live, or lead to the file the last crawl left)`);
  if (recrawl) {
    lines.push(`Changes since the last crawl: ${count(churn.new)} new, ${count(churn.changed)} changed, ${count(churn.notModified)} unchanged (304), ${count(churn.sameBytes)} unchanged (same bytes), ${count(churn.removed)} removed, ${count(churn.stale)} stale (last good copy kept), ${count(churn.failed)} failed; ${count(churn.filesWritten)} file${churn.filesWritten === 1 ? '' : 's'} written (${formatBytes(churn.bytesWritten)})`);
  }
  if (result.pruneRefused) lines.push('Pages gone from the site were not removed: more than --prune-max (see the warning); run again with --force to remove them');
  else if (recrawl && !result.complete) {
    // A re-crawl that was not complete removes nothing: say why, as for --prune-max.
    const failed = result.failures.filter((failure) => failure.status !== 404 && failure.status !== 410).length;
    const why = [
      result.interrupted ? 'it was interrupted' : '',
      result.notCrawled > 0 ? '--max-pages cut it short' : '',
      result.tooDeep > 0 ? '--max-depth cut it short' : '',
      result.tooLong > 0 ? '--max-url-length cut it short' : '',
      result.sitemapsCut ? 'not every sitemap was read' : '',
      result.rootLost ? 'a root answered 404/410 or left the scope' : '',
      failed > 0 ? `${count(failed)} page${failed === 1 ? '' : 's'} failed` : '',
      result.stale > 0 ? `${count(result.stale)} page${result.stale === 1 ? ' was' : 's were'} kept stale` : '',
    ].filter(Boolean);
    const kept = result.kept > 0
      ? `the files of ${count(result.kept)} page${result.kept === 1 ? '' : 's'} of the last crawl it did not reach, or that are gone, are kept, and listed as stale; the next complete crawl removes those gone from the site`
      : 'the next complete crawl removes the files of pages gone from the site';
    lines.push(`Nothing was removed, since this crawl was not complete (${why.join(', ') || 'see the warnings'}): ${kept}`);
  }
  lines.push(`Manifest: ${result.manifest}`);
  return lines.join('\n') + '\n';
}

/** What to try, said once under the failures when one has that code. */
const FAILURE_HINTS = /** @type {Record<string, string>} */ ({
  RENDER_MEMORY: 'A rendered page went past --render-memory and its renderer was killed: raise --render-memory if the site\'s pages need that much',
});

const HINTS = /** @type {Record<string, string>} */ ({
  EACCES: 'permission denied: choose another --out directory or fix its permissions',
  EPERM: 'operation not permitted: choose another --out directory or fix its permissions',
  ENOSPC: 'the disk is full: free space or choose another --out directory',
  EROFS: 'the file system is read-only: choose another --out directory',
  ENOTDIR: 'a path in --out is a file, not a directory',
  EEXIST: 'a file is in the way of a directory of the tree',
  ECONNREFUSED: 'nothing is listening there: is the site running, and is the URL right?',
  ENOTFOUND: 'the host name does not resolve: check the URL',
  EADDRINUSE: 'the port is in use: choose another --port (0 picks a free one)',
});

/** What prerender keeps in each entry of OUT/.prerender (StateEntryError). */
const STATE_ENTRIES = /** @type {Record<string, string>} */ ({
  lock: 'the lock of the crawl writing to OUT (a file)',
  'state.ndjson': "the last crawl's state (a file)",
  'journal.ndjson': 'the journal of an interrupted crawl (a file)',
  'blobs.log': 'the staged pages (a file)',
  'blobs.idx': "the staged pages' index (a file)",
  'follow.bin': 'the links each page followed (a file)',
  blobs: "a shared crawl's blob directory (a directory)",
});

/** Errors whose one line is made here from their fields. @param {unknown} error @returns {string | null} */
function explainByFields(error) {
  if (error instanceof StateEntryError) {
    return `cannot use ${error.path}: it is ${error.found}, where prerender keeps ${STATE_ENTRIES[error.entry] ?? 'its own file'}; remove it, or crawl with --full to start over`;
  }
  if (error instanceof BlobsNotSharedError) {
    return `this worker does not see the blob directory of crawl "${error.crawlId}": ${error.dir} holds no probe of it; share the coordinator's ${error.shared} with this machine and give its path here with --blobs`;
  }
  return null;
}

/** Human text for an error: what happened, then what to try; never a stack, never a header secret. @param {unknown} error */
export function explainError(error) {
  if (error instanceof UsageError || error instanceof ConfigError) return error.message;
  const line = explainByFields(error);
  if (line) return redact(line);
  const err = /** @type {any} */ (error);
  const code = err?.code ?? err?.cause?.code;
  const causeCode = err?.cause?.code;
  const hint = (typeof code === 'string' ? HINTS[code] : undefined) ?? (typeof causeCode === 'string' ? HINTS[causeCode] : undefined);
  const message = redact(String(err?.message ?? error));
  if (hint) return `${message}\n  ${hint}`;
  if (error instanceof PrerenderError) return message;
  return `${message}\n  this looks like a bug in prerender; please report it with the command you ran`;
}

/** @param {string} text */
export function redact(text) {
  return text.replace(/\b(cookie|authorization|proxy-authorization)\s*:\s*[^\n]*/gi, '$1: [redacted]');
}

/** @param {import('../preview/index.js').PlanRow} row */
export function formatPlanRow(row) {
  const file = row.file ? `  -> ${row.file}` : '';
  const line = `${row.decision.padEnd(8)}  ${row.url}${file}  (${row.reason})\n`;
  return row.rendered ? line + formatRendered(row.rendered) : line;
}

/** preview --render: what rendering added and aborted. @param {import('../preview/index.js').RenderedInfo} info */
function formatRendered(info) {
  const indent = ' '.repeat(10);
  const lines = [`${indent}rendered in ${info.renderMs} ms${info.partial ? ' (partial: not ready within --render-timeout)' : ''}; ${info.addedLinks.length} link${info.addedLinks.length === 1 ? '' : 's'} not in the raw HTML`];
  for (const link of info.addedLinks.slice(0, 10)) lines.push(`${indent}  + ${link}`);
  if (info.addedLinks.length > 10) lines.push(`${indent}  … and ${info.addedLinks.length - 10} more (see --json)`);
  const { methods, resources, blocked } = info.aborted;
  if (methods + resources + blocked > 0) {
    lines.push(`${indent}aborted: ${methods} non-GET/HEAD, ${resources} image/media/font, ${blocked} blocked`);
    for (const request of info.abortedList.slice(0, 10)) lines.push(`${indent}  x ${request.method} ${request.url} (${request.why})`);
  }
  return lines.join('\n') + '\n';
}

/** @param {import('../preview/index.js').PlanTotals} totals */
export function formatPlanTotals(totals) {
  const lines = ['', `${totals.interrupted ? 'Interrupted. ' : ''}Plan: ${count(totals.pagesInScope)} page${totals.pagesInScope === 1 ? '' : 's'} in scope would be written; ${count(totals.failed)} failed; ${count(totals.notCrawled)} in scope but not crawled (${formatDuration(totals.durationMs)})`];
  if (totals.notFetched !== undefined) {
    lines.push(`Sample: ${count(totals.notFetched)} more in-scope URL${totals.notFetched === 1 ? '' : 's'} found and planned from the URL alone, not fetched (--sample); a crawl fetches them, and may find more`);
  }
  if (totals.dynamicByPath.length > 0) {
    lines.push('Dynamic targets (links kept live), by path:');
    const width = Math.min(60, Math.max(...totals.dynamicByPath.map((group) => group.path.length)));
    for (const group of totals.dynamicByPath.slice(0, 30)) {
      lines.push(`  ${group.path.padEnd(width)}  ${count(group.links)} link${group.links === 1 ? '' : 's'} from ${count(group.pages)} page${group.pages === 1 ? '' : 's'}`);
    }
    if (totals.dynamicByPath.length > 30) lines.push(`  … and ${count(totals.dynamicByPath.length - 30)} more paths (see --json)`);
  }
  if (totals.excludedByPattern.length > 0) {
    lines.push('Exclusions by pattern:');
    for (const group of totals.excludedByPattern) lines.push(`  ${group.pattern}  ${count(group.urls)} URL${group.urls === 1 ? '' : 's'}`);
  }
  lines.push(`Name collisions: ${count(totals.collisions)}; unsafe names refused: ${count(totals.unsafeNames)}${totals.unsafeNames > 0 ? ' (these pages get their default name, as the crawl would write them):' : ''}`);
  for (const fallback of totals.nameFallbacks.slice(0, 5)) lines.push(`  ${fallback.url}  ${fallback.message}`);
  if (totals.unsafeNames > 5) lines.push(`  … and ${count(totals.unsafeNames - 5)} more: see each page's row, or --json`);
  lines.push('Nothing was written.');
  return lines.join('\n') + '\n';
}

/** @param {Record<string, any>} answer */
export function formatWhy(answer) {
  const lines = [answer.url, `  decision  ${answer.decision}`, `  reason    ${answer.reason}`];
  if (answer.roots?.length) lines.push(`  roots     ${answer.roots.join(', ')}`);
  if (answer.status !== undefined) lines.push(`  status    ${answer.status}`);
  if (answer.redirectTo) lines.push(`  redirect  ${answer.redirectTo} (links lead to its file)`);
  if (answer.file) lines.push(`  file      ${answer.file} (${answer.fileFrom}; a collision found by a full crawl would add a suffix)`);
  if (answer.fetchError) lines.push(`  fetch     failed: ${answer.fetchError}`);
  if (answer.fresh) lines.push(`  fresh     ${answer.fresh}`);
  if (answer.asFormAction) lines.push(`  as a form action: ${answer.asFormAction}`);
  lines.push(`  scope     include ${answer.scope.include.join(', ') || '(none)'}; exclude ${answer.scope.exclude.join(', ') || '(none)'}`);
  return lines.join('\n') + '\n';
}
