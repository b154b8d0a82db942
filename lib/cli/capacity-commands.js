// @ts-check
import { Option } from 'commander';
import os from 'node:os';
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import { explainError, redact } from './report.js';
import { parseDuration, parseLatencyTarget, parsePositive, parseServerUrl, parseSteps, parseWhole } from '../capacity/capacity-options.js';

/**
 * `prerender capacity OUT --origin URL` over measureCapacity. Exit 1: a step over capacity, or errors that stopped the run.
 * @typedef {import('./index.js').Io} Io
 */

export const CAPACITY_DEFAULTS = Object.freeze({
  steps: '250,500,1000,2000,4000',
  stepDuration: '10s',
  operationDuration: '5s',
  latencyTarget: 'p95=500ms',
  maxRps: 100,
});

const HELP = `
Transaction Cost Analysis, as XBuilder's 1999 capacity study did it. First the
CPU cost of each operation of the profile, at the origin and from the static
tree (every page once to warm up, then requests for --operation-duration, at
most --max-rps); then shoppers in steps, each held --step-duration, for the
static tier (the tree, served by a \`prerender serve\` started on 127.0.0.1,
or --static-url) and the dynamic tier (every operation at the origin). A tier
stops at its first step over the latency target, with errors, or falling
behind; errors stop the run.

CPU is read from /proc: the serve it starts, --origin-pid and --static-pid
(with their child processes). Without them the CPU is unknown: throughput and
latency only. Shoppers per server = a server's CPU (--server-cores) over what
a shopper costs each second; before = every operation at the origin, after =
browse operations from the static tree.

Safety: load goes only to --origin and --static-url, at most --max-rps;
a host that is not this machine needs --i-own-this-site. Ctrl-C stops at once.

Exit status: 0 every step within the target; 1 a step over capacity, or errors
(the run stopped there); 2 usage error; 130 interrupted.

Example (the fixture shop, see docs/capacity.md):
  prerender capacity out --origin http://127.0.0.1:8080 --origin-pid 4242 \\
      --think-time 1s --steps 10,20,40,80 --target-shoppers 5000 --html report.html`;

/** @param {import('commander').Command} program @param {Io} io @param {(code: number) => void} setExitCode */
export function addCapacityCommand(program, io, setExitCode) {
  program
    .command('capacity')
    .description('measure what pre-rendering buys the site: cost per operation, shoppers per server, before and after (Transaction Cost Analysis)')
    .argument('<out>', 'the tree written by "prerender crawl" (its manifest gives the static pages)')
    .requiredOption('--origin <url>', 'the dynamic site (the dynamic tier; every operation "before")')
    .option('--static-url <url>', 'a static server of the tree you run (nginx) instead of the `prerender serve` started on 127.0.0.1')
    .option('--origin-pid <pid>', 'the origin\'s process (its children counted too): its CPU per request')
    .option('--static-pid <pid>', 'the --static-url server\'s process (nginx\'s master): its CPU per request')
    .option('--profile <file>', 'the user profile: a JSON file, or a config file\'s "capacity" (default: the catalogue shop of the study, see docs/capacity.md)')
    .option('--think-time <duration>', 'time between a shopper\'s operations, instead of the profile\'s')
    .option('--steps <list>', `shoppers at each step (default: ${CAPACITY_DEFAULTS.steps})`)
    .option('--step-duration <duration>', `how long each step lasts (default: ${CAPACITY_DEFAULTS.stepDuration})`)
    .option('--operation-duration <duration>', `how long each operation's cost is measured, on each tier (default: ${CAPACITY_DEFAULTS.operationDuration})`)
    .option('--latency-target <pN=duration>', `a step is within capacity while this percentile stays under this (default: ${CAPACITY_DEFAULTS.latencyTarget})`)
    .option('--max-rps <n>', `requests per second never exceeded, on each server (default: ${CAPACITY_DEFAULTS.maxRps})`)
    .option('--target-shoppers <n>', 'concurrent shoppers to size the servers for, before and after')
    .option('--server-cores <n>', 'cores of one server, for shoppers per server (default: this machine\'s)')
    .option('--cpu-mhz <mhz>', 'clock of the servers\' cores: costs in Mcycles, as the study gave them')
    .option('--prices <source>', 'price source for the `prerender serve` started (as for serve): its pages are filled per request')
    .addOption(new Option('--i-own-this-site', 'allow load to a host that is not this machine (yours, or one you may load-test)'))
    .option('--json', 'print every figure as one JSON object')
    .option('--html <file>', 'write the report as one self-contained HTML page with charts')
    .addHelpText('after', HELP)
    .action(async (out, flags) => {
      setExitCode(await capacityAction(out, flags, io));
    });
}

/** @param {string} out @param {Record<string, any>} flags @param {Io} io */
async function capacityAction(out, flags, io) {
  const cwd = io.cwd ?? process.cwd();
  try {
    const options = await resolveOptions(out, flags, cwd);
    const { measureCapacity } = await import('../capacity/measure.js');
    const { formatCapacity, formatProgress } = await import('../capacity/capacity-report.js');
    const result = await measureCapacity({ ...options, signal: io.signal, onProgress: (event) => io.stderr.write(formatProgress(event)) });
    if (flags.html) {
      const { renderHtml } = await import('../capacity/html.js');
      const file = path.resolve(cwd, flags.html);
      await writeFile(file, renderHtml(result));
      io.stderr.write(`wrote ${file}\n`);
    }
    io.stdout.write(flags.json ? JSON.stringify(result) + '\n' : formatCapacity(result));
    return result.interrupted ? 130 : result.ok ? 0 : 1;
  } catch (error) {
    io.stderr.write(`prerender: ${explainError(error)}\n`);
    if (flags.json) {
      const err = /** @type {{ code?: string, message?: string }} */ (error);
      io.stdout.write(JSON.stringify({ error: { code: err?.code ?? 'ERROR', message: redact(String(err?.message ?? error)) } }) + '\n');
    }
    return 2;
  }
}

/** @param {string} out @param {Record<string, any>} flags @param {string} cwd @returns {Promise<import('../capacity/measure.js').CapacityOptions>} */
async function resolveOptions(out, flags, cwd) {
  const { defaultProfile, loadProfile } = await import('../capacity/profile.js');
  const profile = flags.profile ? await loadProfile(flags.profile, cwd) : defaultProfile();
  if (flags.thinkTime !== undefined) profile.thinkTimeMs = parseDuration(flags.thinkTime, '--think-time');
  const pid = (/** @type {string | undefined} */ value, /** @type {string} */ flag) => (value === undefined ? null : parseWhole(value, flag));
  const prices = flags.prices === undefined || /^https?:\/\//i.test(flags.prices) ? flags.prices ?? null : path.resolve(cwd, flags.prices);
  return {
    out: path.resolve(cwd, out),
    origin: parseServerUrl(flags.origin, '--origin'),
    staticUrl: flags.staticUrl === undefined ? null : parseServerUrl(flags.staticUrl, '--static-url'),
    originPid: pid(flags.originPid, '--origin-pid'),
    staticPid: pid(flags.staticPid, '--static-pid'),
    profile,
    steps: parseSteps(flags.steps ?? CAPACITY_DEFAULTS.steps),
    stepDurationMs: parseDuration(flags.stepDuration ?? CAPACITY_DEFAULTS.stepDuration, '--step-duration'),
    operationDurationMs: parseDuration(flags.operationDuration ?? CAPACITY_DEFAULTS.operationDuration, '--operation-duration'),
    latencyTarget: parseLatencyTarget(flags.latencyTarget ?? CAPACITY_DEFAULTS.latencyTarget),
    maxRps: parseWhole(flags.maxRps ?? CAPACITY_DEFAULTS.maxRps, '--max-rps'),
    targetShoppers: flags.targetShoppers === undefined ? null : parseWhole(flags.targetShoppers, '--target-shoppers'),
    serverCores: flags.serverCores === undefined ? os.availableParallelism() : parseWhole(flags.serverCores, '--server-cores'),
    cpuMhz: flags.cpuMhz === undefined ? null : parsePositive(flags.cpuMhz, '--cpu-mhz'),
    iOwnThisSite: flags.iOwnThisSite === true,
    prices,
  };
}
