// @ts-check
/**
 * Reading another process's CPU and memory from /proc (Linux). Used for the
 * origin (whose CPU we read while it is alive, so no race with its exit) and
 * for sampling the crawler's resident set over time.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

let ticksPerSecond = 0;

/** Clock ticks per second of /proc/<pid>/stat times (usually 100). */
export function clockTicks() {
  if (ticksPerSecond === 0) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * User and system CPU of one process, in milliseconds, or null when it is gone.
 * @param {number} pid
 * @returns {{ userMs: number, systemMs: number } | null}
 */
export function cpuOf(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after "(comm)": state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = clockTicks();
  return { userMs: (Number(fields[11]) * 1000) / ticks, systemMs: (Number(fields[12]) * 1000) / ticks };
}

/**
 * A process and all its descendants (for a clustered origin).
 * @param {number} pid
 * @returns {number[]}
 */
export function processTree(pid) {
  const all = [pid];
  for (let i = 0; i < all.length; i++) {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${all[i]}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const children = readFileSync(`/proc/${all[i]}/task/${task}/children`, 'utf8').trim();
        if (children) all.push(...children.split(/\s+/).map(Number));
      } catch {
        // the task ended meanwhile
      }
    }
  }
  return all;
}

/**
 * CPU of a process tree, in milliseconds (user + system).
 * @param {number} pid
 */
export function treeCpuMs(pid) {
  let total = 0;
  for (const member of processTree(pid)) {
    const cpu = cpuOf(member);
    if (cpu) total += cpu.userMs + cpu.systemMs;
  }
  return total;
}

/**
 * Resident set now and its high-water mark, in kilobytes, or null when gone.
 * @param {number} pid
 * @returns {{ rssKB: number, hwmKB: number } | null}
 */
export function memoryOf(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const rss = /VmRSS:\s+(\d+)/.exec(status);
  const hwm = /VmHWM:\s+(\d+)/.exec(status);
  if (!rss || !hwm) return null;
  return { rssKB: Number(rss[1]), hwmKB: Number(hwm[1]) };
}

/**
 * Samples a process's memory and CPU every `intervalMs` until stopped.
 * @param {number} pid
 * @param {number} intervalMs
 */
export function startSampler(pid, intervalMs) {
  const started = performance.now();
  /** @type {{ t: number, rssKB: number, cpuMs: number }[]} */
  const samples = [];
  let hwmKB = 0;
  let lastCpuMs = 0;
  const sample = () => {
    const memory = memoryOf(pid);
    const cpu = cpuOf(pid);
    if (!memory || !cpu) return;
    hwmKB = Math.max(hwmKB, memory.hwmKB);
    lastCpuMs = cpu.userMs + cpu.systemMs;
    samples.push({ t: Math.round(performance.now() - started), rssKB: memory.rssKB, cpuMs: Math.round(lastCpuMs) });
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    /** Stop sampling; the figures are those of the last sample taken. */
    stop() {
      clearInterval(timer);
      return { hwmKB, lastCpuMs, samples };
    },
  };
}

/**
 * CPU time used by the whole machine since boot (all cores, not idle or
 * waiting for I/O), in milliseconds: to see how busy other processes were.
 */
export function machineBusyMs() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1000) / clockTicks();
}
