// @ts-check
import { count, formatDuration } from './report.js';

/** What publish, deploy, verify, releases and rollback print for a person, the churn table among them. */

/** @param {number} bytes */
export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

/** @param {string[][]} rows first row: headings @param {boolean[]} right columns aligned right */
function table(rows, right) {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) => row.map((cell, column) => (right[column] ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join('  ').trimEnd()).join('\n') + '\n';
}

/** @param {import('../deploy/diff.js').Count | undefined} c */
const cell = (c) => (c ? `${count(c.files)} (${formatBytes(c.bytes)})` : '-');

/** @param {{ message: string, detail?: string }} error @param {boolean} verbose with the detail lines (ssh's and tar's words), indented */
export function errorLines(error, verbose) {
  const detail = verbose && error.detail ? error.detail.split('\n').map((line) => `    ${line}`) : [];
  return [error.message, ...detail].join('\n');
}

/** @param {import('../deploy/deploy.js').DeployResult} result @param {{ verbose?: boolean }} [options] */
export function formatDeploy(result, options = {}) {
  const lines = [];
  lines.push(`${result.dryRun ? 'Dry run: release' : 'Release'} ${result.id}: ${count(result.pages)} pages, ${count(result.files)} files (${formatBytes(result.bytes)}) from ${result.out}, checked against the manifest in ${formatDuration(result.sourceMs)}`);
  lines.push('');
  const rows = [['target', 'new', 'changed', 'unchanged', 'removed', 'sent', 'verify', 'time', 'result']];
  for (const t of result.targets) {
    const verify = t.verify === null ? '-' : t.verify.ok ? (t.verify.checked > 0 ? `ok (${count(t.verify.checked)})` : 'ok') : `FAILED (${count(t.verify.failures.length)})`;
    rows.push([
      t.target, cell(t.churn?.new), cell(t.churn?.changed), cell(t.churn?.unchanged), cell(t.churn?.removed),
      result.dryRun ? '-' : cell(t.sent), verify, formatDuration(t.durationMs), t.status,
    ]);
  }
  lines.push(table(rows, [false, true, true, true, true, true, false, true, false]).trimEnd());
  lines.push('');
  for (const t of result.targets) {
    if (t.reused) lines.push(`${t.target}: release ${t.reused} holds this very tree (the same manifest): ${result.dryRun ? 'would switch' : t.status === 'switched' ? 'switched' : 'to switch'} to it, nothing sent`);
    for (const warning of t.warnings ?? []) lines.push(`${t.target}: warning ${warning.code}: ${warning.message}`);
    if (t.error) lines.push(`${t.target}: ${errorLines(t.error, options.verbose === true)}`);
    if (t.plan) {
      const shown = (/** @type {string[]} */ files, /** @type {string} */ verb) => {
        if (files.length === 0) return;
        lines.push(`${t.target}: would ${verb} ${count(files.length)} file${files.length === 1 ? '' : 's'}:`);
        for (const file of files.slice(0, 20)) lines.push(`  ${file}`);
        if (files.length > 20) lines.push(`  … and ${count(files.length - 20)} more (--json lists them all)`);
      };
      shown(t.plan.send, 'send');
      shown(t.plan.remove, 'remove (by the switch)');
      lines.push(`${t.target}: would switch current from ${t.previous ?? '(none)'} to ${t.reused ?? result.id}`);
    }
  }
  if (result.dryRun) {
    lines.push('Nothing was sent, removed or switched.');
  } else {
    const switched = result.targets.filter((t) => t.status === 'switched').map((t) => t.target);
    const unchanged = result.targets.filter((t) => t.status !== 'switched').map((t) => `${t.target} (${t.status})`);
    lines.push(`Switched: ${switched.length > 0 ? switched.join(', ') : 'none'}${unchanged.length > 0 ? `; current untouched on: ${unchanged.join(', ')}` : ''}`);
    const pruned = result.targets.flatMap((t) => t.pruned.map((id) => `${id} on ${t.target}`));
    if (pruned.length > 0) lines.push(`Old releases removed: ${pruned.join(', ')}`);
  }
  lines.push(`Done in ${formatDuration(result.durationMs)}`);
  return lines.join('\n') + '\n';
}

/** @param {Awaited<ReturnType<typeof import('../deploy/deploy.js').verify>>} report */
export function formatVerify(report) {
  const lines = [`${report.ok ? 'OK' : 'MISMATCH'}: ${report.out}: ${count(report.files)} files (${formatBytes(report.bytes)}) of ${count(report.pages)} pages re-hashed in ${formatDuration(report.durationMs)}`];
  for (const [name, list] of /** @type {const} */ ([['unsafe', report.unsafe], ['missing', report.missing], ['changed', report.changed], ['unlisted', report.unlisted]])) {
    if (list.length === 0) continue;
    lines.push(`${count(list.length)} ${name}:`);
    for (const problem of list.slice(0, 20)) lines.push(`  ${problem.file}  ${problem.reason}`);
    if (list.length > 20) lines.push(`  … and ${count(list.length - 20)} more (--json lists them all)`);
  }
  return lines.join('\n') + '\n';
}

/** @param {Awaited<ReturnType<typeof import('../deploy/deploy.js').listReleases>>} list */
export function formatReleases(list) {
  if (list.releases.length === 0) return `${list.target}: no releases\n`;
  const rows = [['', 'release', 'created', 'pages', 'files', 'size']];
  for (const release of list.releases) {
    rows.push([release.current ? '*' : '', release.id, release.createdAt, count(release.pages), count(release.files), formatBytes(release.bytes)]);
  }
  return `${list.target}:\n` + table(rows, [false, false, false, true, true, true]) + (list.current ? '* current\n' : 'no release is current\n');
}
