// @ts-check
/** Transaction Cost Analysis, the arithmetic only: pure functions; the measuring is in load.js and cpu.js. */

/**
 * The study's cost: CPU cycles spent per second (utilisation 0..1 × cores × clock) over operations completed.
 * @param {{ utilisation: number, cores: number, mhz: number, opsPerSecond: number }} load
 * @returns {number | null} Mcycles per operation; null when none completed
 */
export function mcyclesPerOperation({ utilisation, cores, mhz, opsPerSecond }) {
  if (!(opsPerSecond > 0)) return null;
  return (utilisation * cores * mhz) / opsPerSecond;
}

/** A CPU millisecond at `mhz` is mhz / 1000 Mcycles. @param {number | null} cpuMs per operation @param {number} mhz */
export function mcyclesFromCpuMs(cpuMs, mhz) {
  return cpuMs === null ? null : (cpuMs * mhz) / 1000;
}

/** @param {number | null} cpuMs the server's, over the run @param {number} requests answered over the run */
export function cpuMsPerRequest(cpuMs, requests) {
  return cpuMs === null || !(requests > 0) ? null : cpuMs / requests;
}

/** Percent of all the machine's cores (the study's "CPU %"). @param {number | null} cpuMs @param {number} wallMs @param {number} cores */
export function cpuPercent(cpuMs, wallMs, cores) {
  return cpuMs === null || !(wallMs > 0) ? null : (100 * cpuMs) / (wallMs * cores);
}

/** Nearest rank; null for none. @param {number[]} sorted ascending @param {number} p 0..100 */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/**
 * @typedef {{ percentile: number, ms: number }} LatencyTarget
 * @typedef {{ shoppers: number, offeredRps: number, rps: number, errors: number, latencyMs: number | null }} StepFigures latencyMs at the target's percentile
 */

/** A step that completes less than this share of the operations offered has fallen behind (its queue grows). */
export const KEEP_UP_SHARE = 0.8;

/** Why a step is over capacity; empty when within it. @param {StepFigures} step @param {LatencyTarget} target @returns {string[]} */
export function overCapacity(step, target) {
  /** @type {string[]} */ const reasons = [];
  if (step.errors > 0) reasons.push(`${step.errors} error${step.errors === 1 ? '' : 's'}`);
  if (step.latencyMs === null) reasons.push('no answer');
  else if (step.latencyMs > target.ms) reasons.push(`p${target.percentile} ${Math.round(step.latencyMs)} ms > ${target.ms} ms`);
  if (step.rps < KEEP_UP_SHARE * step.offeredRps) reasons.push(`${step.rps.toFixed(1)} ops/s answered of ${step.offeredRps} offered`);
  return reasons;
}

/** The shoppers of the last step before the first one over capacity. @param {{ shoppers: number, over: string[] }[]} steps in the order run */
export function capacityOf(steps) {
  let shoppers = 0;
  for (const step of steps) {
    if (step.over.length > 0) return { shoppers, reached: true };
    shoppers = step.shoppers;
  }
  return { shoppers, reached: false };
}

/** @typedef {{ weight: number, dynamicMs: number | null, staticMs: number | null, isStatic: boolean }} OperationCost CPU per request at each tier */

/**
 * Shares are of the whole profile, so the cost of a part of it (its static operations) is that part's alone.
 * @param {{ share: number, ms: number | null }[]} operations share: 0..1 of the profile's weight
 * @param {number} thinkTimeMs
 * @returns {number | null} null when a cost needed is unknown
 */
export function shopperCpuMsPerSecond(operations, thinkTimeMs) {
  let weighted = 0;
  for (const op of operations) {
    if (op.share === 0) continue;
    if (op.ms === null) return null;
    weighted += op.share * op.ms;
  }
  return (weighted * 1000) / thinkTimeMs;
}

/** Null when the cost is unknown or nothing: no measurable cost gives no bound. @param {number | null} costPerShopperSecond @param {number} cores */
export function shoppersPerServer(costPerShopperSecond, cores) {
  if (costPerShopperSecond === null || !(costPerShopperSecond > 0)) return null;
  return Math.floor((cores * 1000) / costPerShopperSecond);
}

/** At least one; null when a server's share is unknown or none. @param {number} target @param {number | null} perServer */
export function serversFor(target, perServer) {
  if (perServer === null || perServer < 1) return null;
  return Math.max(1, Math.ceil(target / perServer));
}

/**
 * Before: every operation at the origin. After: static operations from the static tree, on servers of their own.
 * @param {{ operations: OperationCost[], thinkTimeMs: number, cores: number, target: number | null }} input
 */
export function beforeAfter({ operations, thinkTimeMs, cores, target }) {
  const total = operations.reduce((sum, op) => sum + op.weight, 0);
  const share = (/** @type {OperationCost} */ op, /** @type {boolean} */ counted) => (counted && total > 0 ? op.weight / total : 0);
  const before = shopperCpuMsPerSecond(operations.map((op) => ({ share: share(op, true), ms: op.dynamicMs })), thinkTimeMs);
  const staticCost = shopperCpuMsPerSecond(operations.map((op) => ({ share: share(op, op.isStatic), ms: op.staticMs })), thinkTimeMs);
  const dynamicCost = shopperCpuMsPerSecond(operations.map((op) => ({ share: share(op, !op.isStatic), ms: op.dynamicMs })), thinkTimeMs);
  const after = staticCost === null || dynamicCost === null ? null : staticCost + dynamicCost;
  const perServer = { before: shoppersPerServer(before, cores), after: shoppersPerServer(after, cores) };
  /** @param {number | null} cost @param {number} shoppers */
  const serversOfPart = (cost, shoppers) => (cost === null ? null : cost === 0 ? 0 : Math.ceil((shoppers * cost) / (cores * 1000)));
  const staticServers = target === null ? null : serversOfPart(staticCost, target);
  const dynamicServers = target === null ? null : serversOfPart(dynamicCost, target);
  return {
    cpuMsPerShopperSecond: { before, after, static: staticCost, dynamic: dynamicCost },
    shoppersPerServer: perServer,
    servers: {
      before: target === null ? null : serversFor(target, perServer.before),
      after: staticServers === null || dynamicServers === null ? null : Math.max(1, staticServers + dynamicServers),
      afterStatic: staticServers,
      afterDynamic: dynamicServers,
    },
  };
}
