// @ts-check
/**
 * Reading another process's CPU and memory from /proc (Linux). Used for the
 * origin (whose CPU we read while it is alive, so no race with its exit) and
 * for sampling the crawler's resident set over time.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { clockTicks, processTree } from '../../lib/capacity/cpu.js';

export { clockTicks, processTree };

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

/**
 * Follows a process tree that starts and ends processes (a browser and its
 * renderers): each call to `sample()` reads /proc/<pid>/stat of every
 * process once (one directory listing, no per-thread files), adds the
 * descendants of the root to the processes it knows, and keeps sampling a
 * known process until it is gone, even after it left the tree (Chromium's
 * zygote children are reparented when the browser exits, and their CPU never
 * reaches a waiting parent's cutime). CPU is each known process's last
 * user + sys: what a process spent in its last interval before it ended is
 * not counted. Memory: summed VmRSS of the live processes of the tree, and
 * summed Pss (smaps_rollup, costly to read: only when asked).
 */
export class TreeSampler {
  /** @type {Map<number, number>} pid → last CPU ticks (user + sys) */
  #cpu = new Map();
  /** @type {Set<number>} pids alive at the last sample */
  #live = new Set();

  /** @param {number} root */
  constructor(root) {
    this.root = root;
  }

  /**
   * @param {{ pss?: boolean }} [options]
   * @returns {{ rssKB: number, pssKB: number | null }}
   */
  sample({ pss = false } = {}) {
    /** @type {Map<number, number[]>} ppid → children */
    const children = new Map();
    /** @type {Map<number, number>} pid → CPU ticks */
    const ticks = new Map();
    for (const entry of readdirSync('/proc')) {
      const pid = Number(entry);
      if (!Number.isInteger(pid)) continue;
      let stat;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      } catch {
        continue; // ended meanwhile
      }
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(fields[1]);
      ticks.set(pid, Number(fields[11]) + Number(fields[12]));
      const list = children.get(ppid);
      if (list) list.push(pid);
      else children.set(ppid, [pid]);
    }
    const tree = [this.root];
    for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
    for (const pid of tree) if (!this.#cpu.has(pid)) this.#cpu.set(pid, 0);
    this.#live.clear();
    for (const pid of this.#cpu.keys()) {
      const now = ticks.get(pid);
      if (now === undefined) continue;
      this.#cpu.set(pid, now);
      this.#live.add(pid);
    }
    let rssKB = 0;
    let pssKB = pss ? 0 : null;
    for (const pid of this.#live) {
      rssKB += memoryOf(pid)?.rssKB ?? 0;
      if (pssKB !== null) {
        try {
          pssKB += Number(/Pss:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
        } catch {
          // ended meanwhile
        }
      }
    }
    return { rssKB, pssKB };
  }

  /** CPU of every process seen in the tree, user + sys, in milliseconds. */
  get cpuMs() {
    let total = 0;
    for (const value of this.#cpu.values()) total += value;
    return (total * 1000) / clockTicks();
  }

  /** Processes seen in the tree so far. */
  get seen() {
    return this.#cpu.size;
  }
}
