// @ts-check
/**
 * crawl-bench's figures: each tool's median over the rounds, the issue's
 * targets for prerender, and the table printed at the end.
 */

/** The issue's targets. */
const TARGETS = {
  cpuMsPerPage: 1,
  /** @param {number} products */
  peakRssMB: (products) => (products <= 20_000 ? 250 : 400),
};

/** Figures given as the median of the rounds. */
const MEDIAN_OF = /** @type {const} */ (['wallMs', 'pagesPerSecond', 'userMs', 'systemMs', 'cpuMsPerPage', 'peakRssMB', 'originCpuMsPerPage', 'otherLoadCores']);

/** @param {number[]} values */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * A tool's rounds and their medians. A run is ok when the tool exited 0 and
 * wrote every page of the shop (and, where there is one, its output check passed).
 * @param {Record<string, any>[]} runs
 */
export function summarise(runs) {
  /** @type {Record<string, number>} */
  const figures = {};
  for (const key of MEDIAN_OF) figures[key] = median(runs.map((run) => run[key]));
  const problems = [];
  for (const [i, run] of runs.entries()) {
    const which = runs.length > 1 ? `round ${i + 1}: ` : '';
    if (run.exitCode !== 0) problems.push(`${which}exit ${run.exitCode ?? run.signal}${run.stderr ? `: ${run.stderr.split('\n')[0]}` : ''}`);
    if (run.written.written !== run.written.expected) {
      problems.push(`${which}wrote ${run.written.written} of the shop's ${run.written.expected} pages; missing ${run.written.missing.join(', ')}`);
    }
    if (run.verify && !run.verify.ok) problems.push(`${which}${run.verify.problems.join('; ')}`);
  }
  return {
    median: figures,
    pagesWritten: Math.min(...runs.map((run) => run.written.written)),
    expectedPages: runs[0].written.expected,
    ok: problems.length === 0,
    problems,
    runs,
  };
}

/**
 * @param {Record<string, any>} report
 */
export function judge(report) {
  const prerender = report.tools.prerender.median;
  const targets = [];
  const wget = report.tools.wget?.median;
  if (wget) {
    targets.push({ target: 'faster than wget --mirror', value: `${fmtS(prerender.wallMs)} vs ${fmtS(wget.wallMs)}`, pass: prerender.wallMs < wget.wallMs });
  }
  targets.push({ target: `crawler CPU <= ${TARGETS.cpuMsPerPage} ms/page`, value: `${prerender.cpuMsPerPage} ms`, pass: prerender.cpuMsPerPage <= TARGETS.cpuMsPerPage });
  const limit = TARGETS.peakRssMB(report.shop.products);
  targets.push({ target: `peak RSS < ${limit} MB`, value: `${prerender.peakRssMB} MB`, pass: prerender.peakRssMB < limit });
  const ok = report.tools.prerender.ok;
  targets.push({ target: 'output verified', value: ok ? `${report.tools.prerender.pagesWritten} pages` : report.tools.prerender.problems[0], pass: ok });
  return targets;
}

/** @param {number} ms */
const fmtS = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** @param {number} n */
const fmtN = (n) => n.toLocaleString('en-US');

/** @param {Record<string, any>} report */
export function render(report) {
  const { shop, machine: m, tools, ceiling } = report;
  const names = Object.keys(tools);
  const rounds = report.rounds;
  const lines = [''];
  lines.push(`prerender crawl benchmark, ${report.date.slice(0, 10)}, ${m.cpus} x ${m.cpuModel}, ${m.memoryGB} GB, Node ${m.node}`);
  lines.push(`prerender: ${report.prerender.dir}${report.prerender.commit ? ` @ ${report.prerender.commit}${report.prerender.dirty ? ' (+ uncommitted changes in lib/ or bin/)' : ''}` : ''}${report.label ? ` — ${report.label}` : ''}`);
  for (const [peer, version] of Object.entries(m.peers ?? {})) lines.push(`${peer}: ${version ?? 'version unknown'}`);
  lines.push(`shop: ${fmtN(shop.products)} products of ${fmtN(shop.productBytes)} bytes + ${shop.dirPages} dir.asp pages = ${fmtN(shop.totalPages)} pages; origin ${report.latencyMs ? `answers after ${report.latencyMs} ms` : 'at memory speed'}`);
  lines.push(`${rounds} round${rounds > 1 ? 's' : ''} (${names.join(', ')} in turn)${rounds > 1 ? ', medians' : ''}; concurrency ${report.concurrency} where a tool has one`);
  lines.push('');
  const rows = [['', ...names]];
  const row = (/** @type {string} */ label, /** @type {(t: Record<string, any>) => string} */ get) => rows.push([label, ...names.map((name) => get(tools[name]))]);
  row('pages/s', (t) => `${fmtN(t.median.pagesPerSecond)}${rounds > 1 ? ` (${t.runs.map((/** @type {any} */ r) => fmtN(r.pagesPerSecond)).join(', ')})` : ''}`);
  row('wall time', (t) => fmtS(t.median.wallMs));
  row('CPU user+sys', (t) => `${fmtS(t.median.userMs + t.median.systemMs)} (${fmtS(t.median.userMs)} + ${fmtS(t.median.systemMs)})`);
  row('CPU ms/page', (t) => String(t.median.cpuMsPerPage));
  row('peak RSS', (t) => `${t.median.peakRssMB} MB`);
  row('pages written', (t) => `${fmtN(t.pagesWritten)} of ${fmtN(t.expectedPages)}${t.pagesWritten < t.expectedPages ? ' MISSED' : ''}`);
  row('origin CPU ms/page', (t) => String(t.median.originCpuMsPerPage));
  row('other processes (cores)', (t) => String(t.median.otherLoadCores));
  row('exit codes', (t) => t.runs.map((/** @type {any} */ r) => String(r.exitCode ?? r.signal)).join(', '));
  const widths = rows[0].map((_, i) => Math.max(...rows.map((cells) => cells[i].length)));
  for (const cells of rows) lines.push('  ' + cells.map((cell, i) => cell.padEnd(widths[i])).join('   ').trimEnd());
  lines.push('');
  for (const name of names) lines.push(`  ${name} command: ${tools[name].runs[0].command}`);
  const measured = new Set(names.filter((name) => name !== 'prerender').map((name) => tools[name].runs[0].measuredWith));
  if (measured.size > 0) lines.push(`  peers measured with: ${[...measured].join('; ')}`);
  const last = tools.prerender.runs[tools.prerender.runs.length - 1];
  lines.push(`  prerender RSS (MB) at 10..100 % of its last run: ${last.rssTimeline.map((/** @type {{ rssMB: number }} */ p) => p.rssMB).join(' ')}; VmHWM sampled ${last.sampledHwmMB} MB`);
  if (ceiling) {
    lines.push(`  origin ceiling (autocannon, ${ceiling.connections} connections, ${ceiling.seconds} s): ${ceiling.requestsPerSecond} req/s, ${ceiling.megabytesPerSecond} MB/s, p99 ${ceiling.latencyP99Ms} ms, ${ceiling.originCpuMsPerRequest} ms origin CPU/request`);
  }
  if (names.some((name) => tools[name].runs.some((/** @type {any} */ r) => r.otherLoadCores > 0.15))) {
    lines.push('  WARNING: other processes used CPU during a measured run; its figures are not clean');
  }
  for (const name of names) {
    if (!tools[name].ok) lines.push(`  ${name} WRONG: ${tools[name].problems.join('; ')}`);
  }
  lines.push('');
  for (const t of report.targets) lines.push(`  ${t.pass ? 'PASS' : 'FAIL'}  ${t.target}: ${t.value}`);
  lines.push('');
  return lines.join('\n');
}
