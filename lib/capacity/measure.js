// @ts-check
/** A capacity run: each operation's cost at the origin and from the static tree, then each tier's step load against the latency target. */
import os from 'node:os';
import path from 'node:path';
import { readManifest } from '../output/manifest/index.js';
import { UsageError } from '../errors.js';
import { treeCpuReader, tickMs } from './cpu.js';
import { runLoad } from './load.js';
import { mixRequests, resolveOperations } from './operations.js';
import { isLoopback } from './capacity-options.js';
import { startServeProcess } from './serve-process.js';
import { beforeAfter, capacityOf, cpuMsPerRequest, cpuPercent, mcyclesFromCpuMs, overCapacity, percentile } from './tca.js';

/**
 * @typedef {import('./profile.js').Profile} Profile @typedef {import('./operations.js').Operation} Operation
 * @typedef {import('./operations.js').LoadRequest} LoadRequest @typedef {'static' | 'dynamic'} TierName
 * @typedef {{
 *   out: string, origin: string, staticUrl?: string | null, originPid?: number | null, staticPid?: number | null, profile: Profile,
 *   steps: number[], stepDurationMs: number, operationDurationMs: number, latencyTarget: import('./tca.js').LatencyTarget,
 *   targetShoppers?: number | null, cpuMhz?: number | null, maxRps: number, serverCores?: number, iOwnThisSite?: boolean,
 *   prices?: string | null, signal?: AbortSignal, onProgress?: (event: ProgressEvent) => void }} CapacityOptions
 * @typedef {{ type: 'operation', tier: TierName, name: string, figures: Figures } | { type: 'step-start', tier: TierName, shoppers: number, rps: number }
 *   | { type: 'step', tier: TierName, step: Step }} ProgressEvent
 * @typedef {{
 *   requests: number, rps: number, p50Ms: number | null, p95Ms: number | null, p99Ms: number | null, atTargetMs: number | null,
 *   errors: number, errorKinds: Record<string, number>, cpuMs: number | null, cpuMsPerRequest: number | null,
 *   cpuPercent: number | null, mcyclesPerRequest?: number | null, wallMs: number, stopped: 'done' | 'error' | 'aborted' }} Figures
 * @typedef {{
 *   shoppers: number, offeredRps: number, capped: boolean, rps: number, p50Ms: number | null, p95Ms: number | null,
 *   p99Ms: number | null, atTargetMs: number | null, errors: number, errorKinds: Record<string, number>, cpuPercent: number | null,
 *   cpuMs: number | null, over: string[] }} Step offeredRps is capped at --max-rps (capped: true); atTargetMs is at the target's percentile.
 */

const OPERATION_CONNECTIONS = 8;
/** Enough for a step's requests in flight: each more connection costs autocannon CPU, which delays the answers it times. */
const STEP_CONNECTIONS = 64;

export const CAPACITY_NOTES = Object.freeze({
  CPU_UNKNOWN: 'a server\'s CPU cannot be read (not on this machine, or no --origin-pid / --static-pid): its cost is unknown',
  CPU_RESOLUTION: 'a cost run used less CPU than /proc can tell apart from nothing: its cost is not given',
  PID_IDLE: 'the process named by --origin-pid or --static-pid used no CPU while it answered requests: is it the server?',
  RATE_CAPPED: 'a step wanted more operations per second than --max-rps: it ran at --max-rps, and the tier stopped there',
  MACHINE_BUSY: 'this machine had more runnable processes than cores: the load generator waited for CPU too, so latency and operations/s are understated (CPU per request holds)',
});

/** @param {CapacityOptions} options */
export async function measureCapacity(options) {
  const { profile, signal } = options;
  const manifest = await readManifest(options.out).catch((error) => {
    if (error?.code === 'ENOENT') throw new UsageError(`${options.out} holds no prerender-manifest.json: crawl the site into it first (prerender crawl ... -o ${path.basename(options.out)})`, { cause: error });
    throw error;
  });
  const operations = resolveOperations(profile, manifest);
  const hasStatic = operations.some((op) => op.isStatic);
  await checkHosts(options, hasStatic);
  checkFirstSteps(options, operations);
  const cores = os.availableParallelism();
  /** @type {{ code: keyof typeof CAPACITY_NOTES, message: string }[]} */ const notes = [];
  const originCpu = pidReader(options.originPid, '--origin-pid');
  const serve = hasStatic && !options.staticUrl ? await startServeProcess(options.out, { prices: options.prices }) : null;
  try {
    const staticCpu = serve ? treeCpuReader(serve.pid) : pidReader(options.staticPid, '--static-pid');
    const servers = {
      static: { base: serve?.url ?? options.staticUrl ?? null, cpu: staticCpu, kind: serve ? 'prerender serve' : 'static server' },
      dynamic: { base: options.origin, cpu: originCpu, kind: 'origin' },
    };
    if (!originCpu) notes.push({ code: 'CPU_UNKNOWN', message: `the origin's CPU is unknown${options.originPid ? '' : ' (no --origin-pid)'}: throughput and latency only` });
    if (hasStatic && !staticCpu) notes.push({ code: 'CPU_UNKNOWN', message: 'the static server\'s CPU is unknown (no --static-pid): throughput and latency only' });
    const run = { options, cores, notes, servers, stop: /** @type {string | null} */ (null), requests: 0, selfCpu: process.cpuUsage() };
    const costs = await measureOperations(run, operations);
    /** @type {Record<TierName, Step[]>} */ const steps = { static: [], dynamic: [] };
    for (const tier of /** @type {TierName[]} */ (['static', 'dynamic'])) {
      if (run.stop || signal?.aborted || (tier === 'static' && !hasStatic)) continue;
      steps[tier] = await stepTier(run, tier, operations);
    }
    return buildResult(run, operations, costs, steps);
  } finally {
    await serve?.stop();
  }
}

/**
 /** Load goes only where the user pointed, and beyond this machine only when told it may. @param {CapacityOptions} options @param {boolean} hasStatic */
async function checkHosts(options, hasStatic) {
  const named = [['--origin', options.origin], ...(hasStatic && options.staticUrl ? [['--static-url', options.staticUrl]] : [])];
  for (const [flag, url] of named) {
    if (!options.iOwnThisSite && !(await isLoopback(url))) {
      throw new UsageError(`${flag} ${url} is not this machine: a capacity run loads it heavily; if it is your own site, say so with --i-own-this-site`);
    }
  }
}

/** autocannon paces in whole requests per second. @param {CapacityOptions} options @param {Operation[]} operations */
function checkFirstSteps({ steps, profile }, operations) {
  const share = staticShare(operations);
  const first = steps[0];
  for (const [tier, part] of /** @type {const} */ ([['dynamic', 1], ['static', share]])) {
    if (part === 0) continue;
    const rps = (first * part * 1000) / profile.thinkTimeMs;
    if (rps < 0.5) {
      throw new UsageError(`${first} shoppers thinking ${(profile.thinkTimeMs / 1000).toFixed(1)} s between operations offer ${rps.toFixed(2)} operations/s to the ${tier} tier; `
        + `the load is paced in whole requests per second: give more shoppers (--steps) or a shorter --think-time`);
    }
  }
}

/** @param {Operation[]} operations */
function staticShare(operations) {
  const total = operations.reduce((sum, op) => sum + op.weight, 0);
  return operations.reduce((sum, op) => sum + (op.isStatic ? op.weight : 0), 0) / total;
}

/** @param {number | null | undefined} pid @param {string} flag */
function pidReader(pid, flag) {
  if (pid === null || pid === undefined) return null;
  const reader = treeCpuReader(pid);
  if (!reader) throw new UsageError(`${flag} ${pid}: no such process whose CPU this user can read in /proc${process.platform === 'linux' ? '' : ' (Linux only)'}`);
  return reader;
}

/**
 * @typedef {{ options: CapacityOptions, cores: number, notes: { code: keyof typeof CAPACITY_NOTES, message: string }[],
 *   servers: Record<TierName, { base: string | null, cpu: (() => number | null) | null, kind: string }>, stop: string | null,
 *   requests: number, selfCpu: NodeJS.CpuUsage }} Run selfCpu is the load generator's CPU at the start.
 */

/**
 * @param {Run} run @param {TierName} tier
 * @param {{ requests: LoadRequest[], rps: number, connections: number, durationMs: number, timeoutMs: number, whole?: boolean }} load
 * @returns {Promise<Figures>}
 */
async function measure(run, tier, load) {
  const { base, cpu } = run.servers[tier];
  const before = cpu?.() ?? null;
  const result = await runLoad({ ...load, base: /** @type {string} */ (base), signal: run.options.signal });
  const after = cpu?.() ?? null;
  run.requests += result.answered + result.errors;
  const cpuMs = before !== null && after !== null ? after - before : null;
  const perRequest = cpuMs !== null && cpuMs < tickMs() && result.answered > 0 ? null : cpuMsPerRequest(cpuMs, result.answered);
  if (load.whole && cpuMs !== null && result.answered > 0 && cpuMs < tickMs()) {
    run.notes.push({ code: result.answered > 1000 ? 'PID_IDLE' : 'CPU_RESOLUTION', message: `${tier} tier: ${result.answered} requests used under ${tickMs()} ms of CPU` });
  }
  const figures = {
    requests: result.answered,
    rps: result.wallMs > 0 ? (1000 * result.answered) / result.wallMs : 0,
    p50Ms: percentile(result.latencies, 50),
    p95Ms: percentile(result.latencies, 95),
    p99Ms: percentile(result.latencies, 99),
    atTargetMs: percentile(result.latencies, run.options.latencyTarget.percentile),
    errors: result.errors,
    errorKinds: result.errorKinds,
    cpuMs,
    cpuMsPerRequest: perRequest,
    cpuPercent: cpuPercent(cpuMs, result.wallMs, run.cores),
    wallMs: result.wallMs,
    stopped: result.stopped,
  };
  return run.options.cpuMhz ? { ...figures, mcyclesPerRequest: mcyclesFromCpuMs(perRequest, run.options.cpuMhz) } : figures;
}

/**
 * Each tier is first warmed up with its mix, uncounted: a cold server's first requests cost it more.
 * @param {Run} run @param {Operation[]} operations
 */
async function measureOperations(run, operations) {
  const { maxRps, operationDurationMs, latencyTarget } = run.options;
  /** @type {Map<string, Record<TierName, Figures | null>>} */
  const costs = new Map(operations.map((op) => [op.name, { dynamic: null, static: null }]));
  // Every request sent is answered (whole): the CPU read is then that of the requests counted.
  const load = (/** @type {LoadRequest[]} */ requests) => ({
    requests, rps: maxRps, connections: Math.min(OPERATION_CONNECTIONS, maxRps), durationMs: operationDurationMs,
    timeoutMs: Math.max(10_000, 4 * latencyTarget.ms), whole: true,
  });
  for (const tier of /** @type {TierName[]} */ (['dynamic', 'static'])) {
    const mine = operations.filter((op) => tier === 'dynamic' || op.isStatic);
    if (mine.length === 0 || run.stop || run.options.signal?.aborted) continue;
    // Warm-up fills a static server's cache, as in production; the cost runs then send a fifth more than it answered meanwhile.
    const unique = [...new Map(tierRequests(tier, operations, true).map((r) => [r.path, r])).values()];
    const warmMs = 2 * operationDurationMs;
    const warm = await runLoad({ ...load(unique), whole: false, once: true, durationMs: warmMs, base: /** @type {string} */ (run.servers[tier].base), signal: run.options.signal });
    run.requests += warm.answered + warm.errors;
    if (warm.errors > 0) run.stop = `${tier} tier, warming up: ${describeErrors(warm.errorKinds)}`;
    const pace = Math.max(1, Math.min(maxRps, Math.ceil((1.2 * 1000 * warm.answered) / Math.max(1, warm.wallMs))));
    await settle(run.servers[tier].cpu);
    for (const op of mine) {
      if (run.stop || run.options.signal?.aborted) break;
      const figures = await measure(run, tier, { ...load(/** @type {LoadRequest[]} */ (tier === 'dynamic' ? op.dynamic : op.static)), rps: pace });
      /** @type {Record<TierName, Figures | null>} */ (costs.get(op.name))[tier] = figures;
      run.options.onProgress?.({ type: 'operation', tier, name: op.name, figures });
      if (figures.errors > 0) run.stop = `operation "${op.name}" (${tier}): ${describeErrors(figures.errorKinds)}`;
    }
  }
  return costs;
}

/** Waits (at most 2 s) until the CPU stops moving, so a cut run's requests do not count in the next. @param {(() => number | null) | null} cpu */
async function settle(cpu) {
  if (!cpu) return;
  let last = cpu();
  for (let i = 0; i < 40; i++) {
    await new Promise((resolve) => { setTimeout(resolve, 50); });
    const now = cpu();
    if (now === last) return;
    last = now;
  }
}

/** A tier's requests in the profile's proportions, or all of them. @param {TierName} tier @param {Operation[]} operations @param {boolean} [every] */
function tierRequests(tier, operations, every = false) {
  const parts = operations.filter((op) => tier === 'dynamic' || op.isStatic)
    .map((op) => ({ weight: op.weight, requests: /** @type {LoadRequest[]} */ (tier === 'dynamic' ? op.dynamic : op.static) }));
  return every ? parts.flatMap((part) => part.requests) : mixRequests(parts);
}

/** @param {Record<string, number>} kinds */
export function describeErrors(kinds) {
  return Object.entries(kinds).map(([kind, count]) => `${count} × ${kind}`).join(', ');
}

/** Steps up the shoppers until a step is over capacity or capped by --max-rps. @param {Run} run @param {TierName} tier @param {Operation[]} operations */
async function stepTier(run, tier, operations) {
  const { profile, maxRps, stepDurationMs, latencyTarget, signal } = run.options;
  const requests = tierRequests(tier, operations);
  const share = tier === 'dynamic' ? 1 : staticShare(operations);
  /** @type {Step[]} */ const steps = [];
  for (const shoppers of run.options.steps) {
    if (signal?.aborted) break;
    const wanted = Math.max(1, Math.round((shoppers * share * 1000) / profile.thinkTimeMs));
    const capped = wanted > maxRps;
    const rps = Math.min(wanted, maxRps);
    run.options.onProgress?.({ type: 'step-start', tier, shoppers, rps });
    const figures = await measure(run, tier, {
      requests, rps, connections: Math.min(STEP_CONNECTIONS, rps), durationMs: stepDurationMs,
      timeoutMs: Math.min(30_000, Math.max(1000, 4 * latencyTarget.ms)),
    });
    if (figures.stopped === 'aborted') break;
    const over = overCapacity({ shoppers, offeredRps: rps, rps: figures.rps, errors: figures.errors, latencyMs: figures.atTargetMs }, latencyTarget);
    /** @type {Step} */ const step = {
      shoppers, offeredRps: rps, capped, rps: figures.rps, p50Ms: figures.p50Ms, p95Ms: figures.p95Ms, p99Ms: figures.p99Ms, atTargetMs: figures.atTargetMs,
      errors: figures.errors, errorKinds: figures.errorKinds, cpuPercent: figures.cpuPercent, cpuMs: figures.cpuMs, over,
    };
    steps.push(step);
    run.options.onProgress?.({ type: 'step', tier, step });
    if (figures.errors > 0) run.stop = `${tier} tier, ${shoppers.toLocaleString('en')} shoppers: ${describeErrors(figures.errorKinds)}`;
    if (over.length > 0) break;
    if (capped) {
      run.notes.push({ code: 'RATE_CAPPED', message: `${tier} tier: ${shoppers.toLocaleString('en')} shoppers want ${wanted} operations/s; ran at --max-rps ${maxRps}, and stopped there` });
      break;
    }
  }
  return steps;
}

/**
 * @param {Run} run @param {Operation[]} operations @param {Map<string, Record<TierName, Figures | null>>} costs
 * @param {Record<TierName, Step[]>} steps
 */
function buildResult(run, operations, costs, steps) {
  const { options } = run;
  const serverCores = options.serverCores ?? run.cores;
  const costOf = (/** @type {Operation} */ op, /** @type {TierName} */ tier) => costs.get(op.name)?.[tier]?.cpuMsPerRequest ?? null;
  const summary = beforeAfter({
    operations: operations.map((op) => ({ weight: op.weight, isStatic: op.isStatic, dynamicMs: costOf(op, 'dynamic'), staticMs: op.isStatic ? costOf(op, 'static') : null })),
    thinkTimeMs: options.profile.thinkTimeMs,
    cores: serverCores,
    target: options.targetShoppers ?? null,
  });
  /** A tier's cost per request: its operations' costs weighted by the profile. @param {TierName} tier */
  const tierCost = (tier) => {
    const mine = operations.filter((op) => tier === 'dynamic' || op.isStatic);
    const total = mine.reduce((sum, op) => sum + op.weight, 0);
    let cost = 0;
    for (const op of mine) {
      const ms = costOf(op, tier);
      if (ms === null) return null;
      cost += (op.weight / total) * ms;
    }
    return mine.length === 0 ? null : cost;
  };
  const tier = (/** @type {TierName} */ name) => {
    const capacity = capacityOf(steps[name]);
    const cpuMs = tierCost(name);
    return {
      server: run.servers[name].base,
      serverKind: run.servers[name].kind,
      cpuKnown: run.servers[name].cpu !== null,
      cpuMsPerRequest: cpuMs,
      ...(options.cpuMhz ? { mcyclesPerRequest: mcyclesFromCpuMs(cpuMs, options.cpuMhz) } : {}),
      capacityShoppers: capacity.shoppers,
      capacityReached: capacity.reached,
      steps: steps[name],
    };
  };
  const broken = [...steps.static, ...steps.dynamic].some((step) => step.over.length > 0);
  const self = process.cpuUsage(run.selfCpu);
  const selfMs = (self.user + self.system) / 1000;
  const load = os.loadavg()[0];
  if (load > run.cores) run.notes.push({ code: 'MACHINE_BUSY', message: `this machine was busy (load average ${load.toFixed(1)} on ${run.cores} cores): latency and operations/s are understated; CPU per request holds` });
  return {
    version: 1,
    generatedAt: new Date().toISOString(),
    out: options.out,
    profile: { name: options.profile.name, thinkTimeMs: options.profile.thinkTimeMs },
    latencyTarget: options.latencyTarget,
    stepDurationMs: options.stepDurationMs,
    operationDurationMs: options.operationDurationMs,
    maxRps: options.maxRps,
    machine: { cores: run.cores, cpu: os.cpus()[0]?.model ?? 'unknown', loadAverage: os.loadavg() },
    cpuMhz: options.cpuMhz ?? null,
    operations: operations.map((op) => ({ name: op.name, weight: op.weight, tier: op.isStatic ? 'static' : 'dynamic', dynamic: costs.get(op.name)?.dynamic ?? null, static: costs.get(op.name)?.static ?? null })),
    tiers: { static: tier('static'), dynamic: tier('dynamic') },
    summary: { serverCores, targetShoppers: options.targetShoppers ?? null, ...summary },
    // The load generator's own cost; serve's process apart.
    loadGenerator: { cpuMs: selfMs, requests: run.requests, cpuMsPerRequest: cpuMsPerRequest(selfMs, run.requests) },
    notes: run.notes,
    stoppedBecause: run.stop,
    interrupted: options.signal?.aborted === true,
    ok: !broken && run.stop === null,
  };
}

/** @typedef {ReturnType<typeof buildResult>} CapacityResult */
