// @ts-check
/** The capacity report on the terminal, in the study's tables. @typedef {import('./measure.js').CapacityResult} CapacityResult @typedef {import('./measure.js').Step} Step */

/** @param {number} n */ export const whole = (n) => Math.round(n).toLocaleString('en');

/**
 /** Only the digits that mean something: 0.0812, 1.23, 45.6, 1,234. @param {number | null | undefined} ms */
export function ms(ms) {
  if (ms === null || ms === undefined) return '-';
  if (ms >= 100) return whole(ms);
  if (ms >= 10) return ms.toFixed(1);
  if (ms >= 1) return ms.toFixed(2);
  return ms.toPrecision(2);
}

/** @param {number | null | undefined} n */ const maybe = (n) => (n === null || n === undefined ? 'unknown' : whole(n));

/**
 /** The first column left-aligned, and the last too when it holds words. @param {string[][]} rows @param {string} indent @param {boolean} [lastWords] */
function table(rows, indent = '  ', lastWords = false) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length)));
  const last = rows[0].length - 1;
  const cell = (/** @type {string} */ text, /** @type {number} */ c) => (c === 0 || (lastWords && c === last) ? text.padEnd(widths[c]) : text.padStart(widths[c]));
  return rows.map((row) => indent + row.map(cell).join('   ').trimEnd()).join('\n') + '\n';
}

/** @param {CapacityResult['tiers']['static']} tier */
export function capacityWords(tier) {
  if (tier.steps.length === 0) return 'not measured';
  const broke = tier.steps.find((step) => step.over.length > 0);
  if (broke) return `${whole(tier.capacityShoppers)} shoppers (${whole(broke.shoppers)}: ${broke.over.join(', ')})`;
  const last = tier.steps[tier.steps.length - 1];
  return `at least ${whole(tier.capacityShoppers)} shoppers (every step within the target${last.capped ? '; the last one capped by --max-rps' : ''})`;
}

/** @param {CapacityResult} result @param {'static' | 'dynamic'} name */
function formatTier(result, name) {
  const tier = result.tiers[name];
  const title = name === 'static' ? 'Static tier' : 'Dynamic tier';
  const cost = tier.cpuMsPerRequest === null ? 'CPU unknown' : `${ms(tier.cpuMsPerRequest)} ms CPU per request${tier.mcyclesPerRequest ? ` (${tier.mcyclesPerRequest.toFixed(2)} Mcycles)` : ''}`;
  const text = `${title}: ${tier.serverKind} (${tier.server}), ${cost}\n`;
  if (tier.steps.length === 0) return text + '  no step run\n';
  const p = result.latencyTarget.percentile;
  const rows = [['shoppers', 'ops/s', 'p50 ms', `p95 ms`, ...(p === 95 || p === 50 ? [] : [`p${p} ms`]), 'errors', 'CPU %', 'step']];
  for (const step of tier.steps) {
    rows.push([
      whole(step.shoppers), step.rps.toFixed(1), ms(step.p50Ms), ms(step.p95Ms), ...(p === 95 || p === 50 ? [] : [ms(step.atTargetMs)]),
      String(step.errors), step.cpuPercent === null ? '-' : step.cpuPercent.toFixed(1), step.over.length > 0 ? 'over' : step.capped ? 'capped' : 'ok',
    ]);
  }
  return text + table(rows, '  ', true) + `  capacity: ${capacityWords(tier)}\n`;
}

/** @param {CapacityResult} result */
function formatOperations(result) {
  const mhz = result.cpuMhz;
  const rows = [['operation', 'weight', 'tier', 'origin ms', 'static ms', ...(mhz ? ['origin Mcycles', 'static Mcycles'] : []), 'ratio']];
  const total = result.operations.reduce((sum, op) => sum + op.weight, 0);
  for (const op of result.operations) {
    const dynamic = op.dynamic?.cpuMsPerRequest ?? null;
    const stat = op.static?.cpuMsPerRequest ?? null;
    rows.push([
      op.name, `${((100 * op.weight) / total).toFixed(0)}%`, op.tier, ms(dynamic), op.static ? ms(stat) : '-',
      ...(mhz ? [mc(op.dynamic?.mcyclesPerRequest), op.static ? mc(op.static.mcyclesPerRequest) : '-'] : []),
      dynamic !== null && stat !== null && stat > 0 ? `${(dynamic / stat).toFixed(1)}×` : '',
    ]);
  }
  return `Cost per operation (CPU per request${mhz ? `; Mcycles at ${mhz} MHz` : ''})\n` + table(rows);
}

/** @param {number | null | undefined} n */ const mc = (n) => (n === null || n === undefined ? '-' : n.toFixed(2));

/** @param {CapacityResult} result */
function formatSummary(result) {
  const { summary } = result;
  const per = summary.shoppersPerServer;
  const rows = [
    ['', 'before (all dynamic)', 'after (partitioned)', ''],
    ['shoppers per server', maybe(per.before), maybe(per.after), per.before && per.after ? `${(per.after / per.before).toFixed(1)}×` : ''],
  ];
  if (summary.targetShoppers !== null) {
    const split = summary.servers.afterStatic !== null ? `static ${summary.servers.afterStatic}, dynamic ${summary.servers.afterDynamic}` : '';
    rows.push([`servers for ${whole(summary.targetShoppers)} shoppers`, maybe(summary.servers.before), maybe(summary.servers.after), split]);
  }
  const cores = `${summary.serverCores} core${summary.serverCores === 1 ? '' : 's'}`;
  return `Before and after (a server of ${cores}; a shopper makes an operation every ${(result.profile.thinkTimeMs / 1000).toFixed(1)} s)\n` + table(rows, '  ', true);
}

/** @param {CapacityResult} result @returns {string} */
export function formatCapacity(result) {
  const target = `p${result.latencyTarget.percentile} ≤ ${whole(result.latencyTarget.ms)} ms`;
  const parts = [
    `prerender capacity: ${result.profile.name}; target ${target}; ${result.machine.cpu}, ${result.machine.cores} cores\n`,
    formatOperations(result),
    formatTier(result, 'static'),
    formatTier(result, 'dynamic'),
    formatSummary(result),
  ];
  const notes = [...new Set(result.notes.map((note) => note.message))];
  if (notes.length > 0) parts.push(`Notes\n${notes.map((note) => `  - ${note}\n`).join('')}`);
  if (result.interrupted) parts.push('Interrupted: the figures are those of the steps run before.\n');
  else if (result.stoppedBecause) parts.push(`Stopped: ${result.stoppedBecause}\n`);
  return parts.join('\n');
}

/** @param {import('./measure.js').ProgressEvent} event */
export function formatProgress(event) {
  if (event.type === 'step-start') return `${event.tier} tier: ${whole(event.shoppers)} shoppers (${event.rps} ops/s)...\n`;
  if (event.type === 'operation') {
    const f = event.figures;
    return `cost of "${event.name}" (${event.tier === 'static' ? 'static tree' : 'origin'}): ${f.requests} requests, ${f.rps.toFixed(0)}/s, p50 ${ms(f.p50Ms)} ms, CPU ${f.cpuMsPerRequest === null ? 'unknown' : `${ms(f.cpuMsPerRequest)} ms`} per request${f.errors ? `, ${f.errors} error${f.errors === 1 ? '' : 's'}` : ''}\n`;
  }
  const s = event.step;
  return `${event.tier} tier: ${whole(s.shoppers)} shoppers: ${s.rps.toFixed(1)} ops/s, p95 ${ms(s.p95Ms)} ms, ${s.errors} error${s.errors === 1 ? '' : 's'}, CPU ${s.cpuPercent === null ? '-' : `${s.cpuPercent.toFixed(1)}%`}: ${s.over.length > 0 ? `over capacity (${s.over.join(', ')})` : 'within the target'}\n`;
}
