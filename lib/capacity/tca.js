// @ts-check
/**
 * Transaction Cost Analysis, the arithmetic only: cost per operation from
 * CPU and throughput, a step judged against the latency target, capacity,
 * shoppers per server and servers for a target load. Pure functions: the
 * measuring is elsewhere (load.js, cpu.js, run.js).
 */

/**
 * The study's cost per operation: the CPU cycles a server spends per second
 * (utilisation × processors × clock) divided by the operations it completes.
 * 4 processors at 400 MHz, fully used, completing 16 operations/s: 100 Mcycles.
 * @param {{ utilisation: number, cores: number, mhz: number, opsPerSecond: number }} load
 *   utilisation: 0..1 of all cores
 * @returns {number | null} Mcycles per operation; null when no operation completed
 */
export function mcyclesPerOperation({ utilisation, cores, mhz, opsPerSecond }) {
  if (!(opsPerSecond > 0)) return null;
  return (utilisation * cores * mhz) / opsPerSecond;
}

/**
 * The same cost from CPU time: a millisecond of CPU at `mhz` is mhz / 1000 Mcycles.
 * @param {number | null} cpuMs CPU milliseconds per operation
 * @param {number} mhz
 */
export function mcyclesFromCpuMs(cpuMs, mhz) {
  return cpuMs === null ? null : (cpuMs * mhz) / 1000;
}

/**
 * CPU milliseconds per request; null when the CPU is unknown or nothing was answered.
 * @param {number | null} cpuMs CPU used by the server's processes over the run
 * @param {number} requests requests answered over the run
 */
export function cpuMsPerRequest(cpuMs, requests) {
  return cpuMs === null || !(requests > 0) ? null : cpuMs / requests;
}

/**
 * CPU utilisation in percent of all the machine's cores (the study's "CPU %").
 * @param {number | null} cpuMs
 * @param {number} wallMs
 * @param {number} cores
 */
export function cpuPercent(cpuMs, wallMs, cores) {
  return cpuMs === null || !(wallMs > 0) ? null : (100 * cpuMs) / (wallMs * cores);
}

/**
 * The p-th percentile (nearest rank) of sorted values; null for none.
 * @param {number[]} sorted ascending
 * @param {number} p 0..100
 */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/**
 * @typedef {{ percentile: number, ms: number }} LatencyTarget
 * @typedef {{ shoppers: number, offeredRps: number, rps: number, errors: number, latencyMs: number | null }} StepFigures
 *   latencyMs: the step's latency at the target's percentile
 */

/** A step that completes less than this share of the operations offered has fallen behind (its queue grows). */
export const KEEP_UP_SHARE = 0.8;

/**
 * Why a step is over capacity (empty: within it): errors, latency over the
 * target, or the server falling behind the operations offered.
 * @param {StepFigures} step
 * @param {LatencyTarget} target
 * @returns {string[]}
 */
export function overCapacity(step, target) {
  /** @type {string[]} */
  const reasons = [];
  if (step.errors > 0) reasons.push(`${step.errors} error${step.errors === 1 ? '' : 's'}`);
  if (step.latencyMs === null) reasons.push('no answer');
  else if (step.latencyMs > target.ms) reasons.push(`p${target.percentile} ${Math.round(step.latencyMs)} ms > ${target.ms} ms`);
  if (step.rps < KEEP_UP_SHARE * step.offeredRps) reasons.push(`${step.rps.toFixed(1)} ops/s answered of ${step.offeredRps} offered`);
  return reasons;
}

/**
 * Capacity: the shoppers of the largest step before the first one over
 * capacity (0 when the first is); `reached` says whether a step broke.
 * @param {{ shoppers: number, over: string[] }[]} steps in the order run
 */
export function capacityOf(steps) {
  let shoppers = 0;
  for (const step of steps) {
    if (step.over.length > 0) return { shoppers, reached: true };
    shoppers = step.shoppers;
  }
  return { shoppers, reached: false };
}

/**
 * @typedef {{ weight: number, dynamicMs: number | null, staticMs: number | null, isStatic: boolean }} OperationCost
 *   dynamicMs: CPU per request at the origin; staticMs: from the static tree (static operations only)
 */

/**
 * CPU milliseconds one shopper costs per second: each operation's share of
 * a shopper's operations times its cost, times the operations a shopper
 * makes per second (one per think time). Shares of the whole profile: the
 * cost of a part of it (its static operations) is that part's alone.
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

/**
 * Shoppers one server carries: its CPU (cores × 1,000 ms each second)
 * over what a shopper costs each second. Null when the cost is unknown,
 * or nothing (no measurable cost: no bound to give).
 * @param {number | null} costPerShopperSecond
 * @param {number} cores
 */
export function shoppersPerServer(costPerShopperSecond, cores) {
  if (costPerShopperSecond === null || !(costPerShopperSecond > 0)) return null;
  return Math.floor((cores * 1000) / costPerShopperSecond);
}

/**
 * Servers for `target` shoppers, at least one; null when a server's share is unknown or none.
 * @param {number} target
 * @param {number | null} perServer
 */
export function serversFor(target, perServer) {
  if (perServer === null || perServer < 1) return null;
  return Math.max(1, Math.ceil(target / perServer));
}

/**
 * Before (every operation at the origin) and after (static operations from
 * the static tree, the rest at the origin): shoppers per server, and servers
 * for `target` shoppers. After, the static and dynamic tiers are separate
 * servers; shoppers per server pools their CPU.
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
