// @ts-check
/** The capacity report as one self-contained HTML page: summary, inline SVG charts and tables. */
import { escapeHtml } from '../serve/escape.js';
import { capacityWords, ms, whole } from './capacity-report.js';
import { barChart, lineChart } from './svg.js';

/** @typedef {import('./measure.js').CapacityResult} CapacityResult */

const COLORS = { static: '#2a7f62', dynamic: '#b8512e' };

const STYLE = `
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2327; margin: 24px auto; max-width: 1180px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.meta { color: #555; margin: 0 0 16px; }
.cards { display: flex; gap: 16px; flex-wrap: wrap; }
.card { border: 1px solid #d5d9dc; border-radius: 8px; padding: 12px 16px; min-width: 220px; }
.card b { display: block; font-size: 26px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px; }
svg { max-width: 100%; height: auto; border: 1px solid #e3e6e8; border-radius: 6px; background: #fff; }
svg text { font: 12px system-ui, sans-serif; fill: #333; } svg .title { font-size: 14px; font-weight: 600; }
svg .grid { stroke: #e8eaec; } svg .limit { stroke: #c0392b; stroke-dasharray: 6 4; stroke-width: 1.5; }
svg .limit-label { fill: #c0392b; } svg .value { font-size: 11px; }
table { border-collapse: collapse; margin: 4px 0 8px; } th, td { padding: 4px 12px; text-align: right; border-bottom: 1px solid #e3e6e8; }
th:first-child, td:first-child, .words th:last-child, .words td:last-child { text-align: left; } th { background: #f4f6f7; }
.over { color: #b03a2e; font-weight: 600; } .note { color: #555; }
`;

/** @param {string[]} header @param {(string | number)[][]} rows cells already escaped @param {string} [className] */
function table(header, rows, className) {
  const head = `<tr>${header.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr>`;
  const body = rows.map((row) => `<tr>${row.map((cell) => `<td>${String(cell)}</td>`).join('')}</tr>`).join('\n');
  return `<table${className ? ` class="${className}"` : ''}>\n${head}\n${body}\n</table>`;
}

/** @param {CapacityResult} result */
function charts(result) {
  const { tiers } = result;
  const shoppers = [...new Set([...tiers.static.steps, ...tiers.dynamic.steps].map((s) => s.shoppers))].sort((a, b) => a - b);
  const categories = shoppers.map((n) => whole(n));
  const series = (/** @type {'static' | 'dynamic'} */ name, /** @type {(s: import('./measure.js').Step) => number | null} */ pick) => ({
    name: name === 'static' ? 'static tier' : 'dynamic tier (origin)',
    color: COLORS[name],
    values: shoppers.map((n) => {
      const step = tiers[name].steps.find((s) => s.shoppers === n);
      return step ? pick(step) : null;
    }),
  });
  const both = (/** @type {(s: import('./measure.js').Step) => number | null} */ pick) => [series('static', pick), series('dynamic', pick)].filter((s) => s.values.some((v) => v !== null));
  const target = result.latencyTarget;
  const out = [
    lineChart({ title: 'Operations per second', xTitle: 'shoppers', yTitle: 'operations/s', categories, series: both((s) => s.rps) }),
    lineChart({
      title: `p95 latency${target.percentile === 95 ? ' and the target' : ''}`, xTitle: 'shoppers', yTitle: 'ms', categories, series: both((s) => s.p95Ms),
      limit: target.percentile === 95 ? { value: target.ms, label: `target ${whole(target.ms)} ms` } : undefined,
    }),
    barChart({
      title: 'CPU cost per operation', yTitle: 'CPU ms per request',
      groups: result.operations.map((op) => ({
        label: op.name,
        bars: [
          { name: 'at the origin', color: COLORS.dynamic, value: op.dynamic?.cpuMsPerRequest ?? null, text: op.dynamic?.cpuMsPerRequest == null ? 'unknown' : ms(op.dynamic.cpuMsPerRequest) },
          ...(op.static ? [{ name: 'from the static tree', color: COLORS.static, value: op.static.cpuMsPerRequest, text: op.static.cpuMsPerRequest === null ? 'unknown' : ms(op.static.cpuMsPerRequest) }] : []),
        ],
      })),
    }),
  ];
  const per = result.summary.shoppersPerServer;
  if (per.before !== null || per.after !== null) {
    out.push(barChart({
      title: 'Shoppers per server', yTitle: 'shoppers',
      groups: [
        { label: 'before (all dynamic)', bars: [{ name: 'before', color: COLORS.dynamic, value: per.before, text: per.before === null ? 'unknown' : whole(per.before) }] },
        { label: 'after (partitioned)', bars: [{ name: 'after', color: COLORS.static, value: per.after, text: per.after === null ? 'unknown' : whole(per.after) }] },
      ],
    }));
  }
  return `<div class="charts">\n${out.join('\n')}\n</div>`;
}

/** @param {CapacityResult} result @param {'static' | 'dynamic'} name */
function tierSection(result, name) {
  const tier = result.tiers[name];
  const title = name === 'static' ? 'Static tier' : 'Dynamic tier';
  const cost = tier.cpuMsPerRequest === null ? 'CPU unknown' : `${ms(tier.cpuMsPerRequest)} ms CPU per request`;
  const rows = tier.steps.map((s) => [
    whole(s.shoppers), s.rps.toFixed(1), ms(s.p50Ms), ms(s.p95Ms), s.errors, s.cpuPercent === null ? '-' : s.cpuPercent.toFixed(1),
    s.over.length > 0 ? `<span class="over">over: ${escapeHtml(s.over.join(', '))}</span>` : s.capped ? 'capped by --max-rps' : 'within',
  ]);
  return `<h2>${title}: ${escapeHtml(tier.serverKind)} <small>(${escapeHtml(String(tier.server))})</small>, ${cost}</h2>
${rows.length ? table(['shoppers', 'ops/s', 'p50 ms', 'p95 ms', 'errors', 'CPU %', 'step'], rows, 'words') : '<p>No step run.</p>'}
<p>Capacity: ${escapeHtml(capacityWords(tier))}.</p>`;
}

/** @param {CapacityResult} result */
function summaryCards(result) {
  const { summary } = result;
  const per = summary.shoppersPerServer;
  const card = (/** @type {string} */ what, /** @type {string} */ value, /** @type {string} */ sub) => `<div class="card">${escapeHtml(what)}<b>${escapeHtml(value)}</b><span class="note">${escapeHtml(sub)}</span></div>`;
  const cards = [
    card('Shoppers per server, before', per.before === null ? 'unknown' : whole(per.before), 'every operation at the origin'),
    card('Shoppers per server, after', per.after === null ? 'unknown' : whole(per.after), per.before && per.after ? `${(per.after / per.before).toFixed(1)}× with browse pages static` : 'browse pages static'),
  ];
  if (summary.targetShoppers !== null) {
    const { servers } = summary;
    cards.push(card(`Servers for ${whole(summary.targetShoppers)} shoppers`, `${servers.before ?? '?'} → ${servers.after ?? '?'}`, servers.afterStatic !== null ? `after: ${servers.afterStatic} static, ${servers.afterDynamic} dynamic` : ''));
  }
  return `<div class="cards">${cards.join('\n')}</div>`;
}

/** @param {CapacityResult} result @returns {string} */
export function renderHtml(result) {
  const total = result.operations.reduce((sum, op) => sum + op.weight, 0);
  const operations = table(['operation', 'weight', 'tier', 'origin ms', 'static ms', 'origin p50 ms', 'static p50 ms'], result.operations.map((op) => [
    escapeHtml(op.name), `${((100 * op.weight) / total).toFixed(0)}%`, op.tier, ms(op.dynamic?.cpuMsPerRequest), op.static ? ms(op.static.cpuMsPerRequest) : '-',
    ms(op.dynamic?.p50Ms), op.static ? ms(op.static.p50Ms) : '-',
  ]));
  const notes = [...new Set(result.notes.map((n) => n.message))];
  const status = result.interrupted ? 'Interrupted: the figures are those of the steps run before.' : result.stoppedBecause ? `Stopped: ${result.stoppedBecause}` : '';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Capacity: ${escapeHtml(result.profile.name)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Capacity before and after pre-rendering</h1>
<p class="meta">${escapeHtml(result.profile.name)}; a shopper makes an operation every ${(result.profile.thinkTimeMs / 1000).toFixed(1)} s;
target p${result.latencyTarget.percentile} ≤ ${whole(result.latencyTarget.ms)} ms; a server of ${result.summary.serverCores} cores;
measured on ${escapeHtml(result.machine.cpu)} (${result.machine.cores} cores), ${escapeHtml(result.generatedAt)}.</p>
${summaryCards(result)}
${status ? `<p class="over">${escapeHtml(status)}</p>` : ''}
${charts(result)}
<h2>Cost per operation (CPU per request)</h2>
${operations}
${tierSection(result, 'static')}
${tierSection(result, 'dynamic')}
${notes.length ? `<h2>Notes</h2><ul>${notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul>` : ''}
</body>
</html>
`;
}
