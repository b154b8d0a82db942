// @ts-check
/** A server's CPU from /proc (Linux): user + system time of a process and its descendants, such as nginx's workers. */
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

/** Null when the process is gone. @param {number} pid */
function ticksOf(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  // Fields after "(comm)": utime is field 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** @param {number} pid */
export function processTree(pid) {
  const all = [pid];
  for (let i = 0; i < all.length && all.length < 10_000; i++) {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${all[i]}/task`);
    } catch {
      continue; // ended meanwhile
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
 * Each call returns the tree's CPU milliseconds so far, or null once it is gone; null itself when the process cannot be read.
 * @param {number} pid @returns {(() => number | null) | null}
 */
export function treeCpuReader(pid) {
  if (process.platform !== 'linux' || ticksOf(pid) === null) return null;
  const tick = 1000 / clockTicks();
  return () => {
    if (ticksOf(pid) === null) return null;
    let ticks = 0;
    for (const member of processTree(pid)) ticks += ticksOf(member) ?? 0;
    return ticks * tick;
  };
}

/** The resolution of a reading. */
export const tickMs = () => 1000 / clockTicks();
