// @ts-check
/**
 * The measured runs of crawl-bench: the origin, one prerender crawl, one
 * peer's crawl. Each tool runs as a child process; a run's figures are those
 * of that tool alone (not the origin's, not the driver's), and
 * `otherLoadCores` tells how busy the rest of the machine was meanwhile.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pagesWritten } from './pages-written.js';
import { TreeSampler, machineBusyMs, memoryOf, startSampler, treeCpuMs } from './proc.js';

const BENCH = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Child processes to stop if the benchmark itself is interrupted. */
/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();

/** Those of them that lead a process group of their own. */
/** @type {WeakSet<import('node:child_process').ChildProcess>} */
const groups = new WeakSet();

/** @param {import('node:child_process').ChildProcess} child */
function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/**
 * Ends every child at once. A peer runs in a process group of its own
 * (under GNU time), and the whole group goes: the tool would outlive time.
 */
export function killChildren() {
  for (const child of children) {
    try {
      if (groups.has(child)) process.kill(-(/** @type {number} */ (child.pid)), 'SIGKILL');
      else child.kill('SIGKILL');
    } catch {
      child.kill('SIGKILL'); // the group is gone already
    }
  }
}

/**
 * @param {number} value
 * @param {number} digits
 */
export function round(value, digits) {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/**
 * Starts bench/origin.js and waits for its URL.
 * @param {{ products: number, count: number, workers: number, latencyMs?: number }} options
 * @returns {Promise<{ url: string, pid: number, stop: () => Promise<void> }>}
 */
export async function startOrigin({ products, count, workers, latencyMs = 0 }) {
  const child = track(spawn(process.execPath, [path.join(BENCH, 'origin.js'), '--products', String(products), '--count', String(count), '--port', '0', '--workers', String(workers), '--latency-ms', String(latencyMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  }));
  const exited = once(child, 'exit');
  const lines = createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) });
  const [first] = await Promise.race([
    once(lines, 'line'),
    exited.then(([code]) => { throw new Error(`the origin exited (${code}) before printing its URL`); }),
  ]);
  lines.close();
  child.stdout?.resume();
  return {
    url: String(first).trim(),
    pid: /** @type {number} */ (child.pid),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/**
 * What the origin and the rest of the machine did during a run.
 * @param {number} originPid
 */
function watchMachine(originPid) {
  const originCpuBefore = treeCpuMs(originPid);
  const busyBefore = machineBusyMs();
  const selfBefore = process.cpuUsage();
  return {
    /**
     * @param {number} toolCpuMs
     * @param {number} wallMs
     */
    end(toolCpuMs, wallMs) {
      const originCpuMs = treeCpuMs(originPid) - originCpuBefore;
      const self = process.cpuUsage(selfBefore);
      const busyMs = machineBusyMs() - busyBefore;
      return {
        /** @param {number} pages */
        originCpuMsPerPage: (pages) => round(originCpuMs / Math.max(pages, 1), 3),
        otherLoadCores: round(Math.max(0, busyMs - toolCpuMs - originCpuMs - (self.user + self.system) / 1000) / wallMs, 2),
      };
    },
  };
}

/**
 * One prerender crawl: CPU and peak RSS from getrusage(RUSAGE_SELF), written
 * at exit by the preloaded bench/lib/rusage.js (prerender is one process).
 * @param {{ prerender: string, origin: { url: string, pid: number }, out: string, crawlerFlags: string[], nodeArgs: string[], sampleMs: number, shop: { products: number, count: number } }} options
 */
export async function runPrerender({ prerender, origin, out, crawlerFlags, nodeArgs, sampleMs, shop }) {
  const usageFile = path.join(path.dirname(out), `${path.basename(out)}-rusage.json`);
  const args = [
    ...nodeArgs,
    '--import', pathToFileURL(path.join(BENCH, 'lib', 'rusage.js')).href,
    path.join(prerender, 'bin', 'prerender.js'),
    'crawl', `${origin.url}/st/dir.asp`, '-i', '/st/dir.asp', '/st/product.asp', '-o', out, '--quiet', '--json', ...crawlerFlags,
  ];
  const command = `node bin/prerender.js crawl ORIGIN/st/dir.asp -i /st/dir.asp /st/product.asp -o OUT --quiet --json${crawlerFlags.length ? ' ' + crawlerFlags.join(' ') : ''}`;
  const machine = watchMachine(origin.pid);
  const started = performance.now();
  const child = track(spawn(process.execPath, args, {
    cwd: path.dirname(out),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PRERENDER_BENCH_RUSAGE: usageFile },
  }));
  const sampler = startSampler(/** @type {number} */ (child.pid), sampleMs);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk) => { stdout += chunk; });
  child.stderr?.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
  const [exitCode, signal] = await once(child, 'exit');
  const wallMs = performance.now() - started;
  const sampled = sampler.stop();
  /** @type {Record<string, any>} */
  let usage = {};
  try {
    usage = JSON.parse(readFileSync(usageFile, 'utf8'));
  } catch {
    throw new Error(`the crawler left no resource usage (exit ${exitCode ?? signal}); stderr: ${stderr.slice(0, 2000)}`);
  }
  /** @type {Record<string, any> | null} */
  let result = null;
  try {
    result = JSON.parse(stdout.trim().split('\n').pop() ?? '');
  } catch {
    // reported through exitCode and the checks of the output
  }
  const cpuMs = (usage.userCPUTime + usage.systemCPUTime) / 1000;
  const around = machine.end(cpuMs, wallMs);
  const written = pagesWritten(out, shop);
  const pages = written.written;
  return {
    command,
    exitCode,
    signal,
    stderr: stderr.trim().slice(0, 2000),
    measuredWith: 'getrusage(RUSAGE_SELF) at exit',
    result: result && { pages: result.pages, failed: result.failed, warnings: result.warnings, notCrawled: result.notCrawled, durationMs: result.durationMs },
    pages,
    written,
    wallMs: Math.round(wallMs),
    pagesPerSecond: round(pages / (wallMs / 1000), 0),
    userMs: Math.round(usage.userCPUTime / 1000),
    systemMs: Math.round(usage.systemCPUTime / 1000),
    cpuMsPerPage: round(cpuMs / Math.max(pages, 1), 3),
    cpuUtilisation: round(cpuMs / wallMs, 2),
    peakRssMB: round(usage.maxRSS / 1024, 1),
    sampledHwmMB: round(sampled.hwmKB / 1024, 1),
    contextSwitches: { voluntary: usage.voluntaryContextSwitches, involuntary: usage.involuntaryContextSwitches },
    originCpuMsPerPage: around.originCpuMsPerPage(pages),
    otherLoadCores: around.otherLoadCores,
    rssTimeline: timeline(sampled.samples),
  };
}

/**
 * One peer's crawl. CPU: user + sys of the whole process tree, from GNU
 * time (wait4's rusage); its peak RSS is that of the largest process. The
 * tree is also sampled from /proc, and a summed RSS above that is the peak.
 * Without /usr/bin/time the samples alone give approximate figures.
 * @param {{ command: { file: string, args: string[], shown: string }, out: string, origin: { url: string, pid: number }, sampleMs: number, shop: { products: number, count: number } }} options
 */
export async function runPeer({ command, out, origin, sampleMs, shop }) {
  const cwd = path.dirname(out);
  const timeFile = path.join(cwd, `${path.basename(out)}-time.txt`);
  const withTime = existsSync('/usr/bin/time');
  const machine = watchMachine(origin.pid);
  const started = performance.now();
  const child = track(withTime
    ? spawn('/usr/bin/time', ['-f', '%e %U %S %M', '-o', timeFile, command.file, ...command.args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    : spawn(command.file, command.args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true }));
  groups.add(child);
  const pid = /** @type {number} */ (child.pid);
  const tree = new TreeSampler(pid);
  let peakTreeKB = 0;
  const sample = () => {
    // GNU time's own few MB are not the tool's.
    const own = withTime ? memoryOf(pid)?.rssKB ?? 0 : 0;
    peakTreeKB = Math.max(peakTreeKB, tree.sample().rssKB - own);
  };
  sample();
  const timer = setInterval(sample, sampleMs);
  let stderr = '';
  child.stdout?.resume();
  child.stderr?.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
  const [exitCode, signal] = await once(child, 'exit');
  const wallMs = performance.now() - started;
  clearInterval(timer);
  let userMs = NaN;
  let systemMs = NaN;
  let maxRssKB = 0;
  if (withTime) {
    const fields = readFileSync(timeFile, 'utf8').trim().split('\n').pop()?.split(' ').map(Number) ?? [];
    [userMs, systemMs, maxRssKB] = [fields[1] * 1000, fields[2] * 1000, fields[3]];
  } else {
    systemMs = tree.cpuMs;
    userMs = 0;
  }
  const cpuMs = userMs + systemMs;
  const around = machine.end(cpuMs, wallMs);
  const written = pagesWritten(out, shop);
  const pages = written.written;
  return {
    command: command.shown,
    exitCode,
    signal,
    stderr: stderr.trim().slice(0, 2000),
    measuredWith: withTime ? 'GNU time (wait4 rusage) + /proc tree samples' : '/proc tree samples (approximate; user and sys summed in systemMs)',
    pages,
    written,
    wallMs: Math.round(wallMs),
    pagesPerSecond: round(pages / (wallMs / 1000), 0),
    userMs: Math.round(userMs),
    systemMs: Math.round(systemMs),
    cpuMsPerPage: round(cpuMs / Math.max(pages, 1), 3),
    cpuUtilisation: round(cpuMs / wallMs, 2),
    peakRssMB: round(Math.max(maxRssKB, peakTreeKB) / 1024, 1),
    processes: tree.seen - (withTime ? 1 : 0),
    originCpuMsPerPage: around.originCpuMsPerPage(pages),
    otherLoadCores: around.otherLoadCores,
  };
}

/**
 * Ten points of the RSS curve (MB), at 10 %, 20 % ... 100 % of the run.
 * @param {{ t: number, rssKB: number, cpuMs: number }[]} samples
 */
function timeline(samples) {
  if (samples.length === 0) return [];
  const end = samples[samples.length - 1].t;
  const points = [];
  for (let i = 1; i <= 10; i++) {
    const at = (end * i) / 10;
    const sample = samples.find((s) => s.t >= at) ?? samples[samples.length - 1];
    points.push({ s: round(sample.t / 1000, 1), rssMB: round(sample.rssKB / 1024, 0), cpuS: round(sample.cpuMs / 1000, 1) });
  }
  return points;
}
