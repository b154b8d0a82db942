// @ts-check
/** Processes from /proc (Linux): a process's descendants, and what one holds in memory. Elsewhere none are found. */
import { readFileSync, readdirSync } from 'node:fs';

/**
 * A process's start time, in clock ticks since boot: with its pid, it names one process even after the pid is reused.
 * Null where /proc cannot tell.
 * @param {number} pid
 * @returns {string | null}
 */
export function startTicks(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  // The command (field 2) may hold spaces and parentheses: fields are counted from its last ')'; field 22 is the start time.
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  return start && /^\d+$/.test(start) ? start : null;
}

/** A process and its descendants, the process first; bounded. @param {number} pid */
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
 * A process's private anonymous resident memory (RssAnon: its heaps, not the files it maps), in bytes; null once it is gone.
 * @param {number} pid
 */
export function privateBytes(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return null;
  }
  const kb = /^RssAnon:\s*(\d+) kB/m.exec(status);
  return kb ? Number(kb[1]) * 1024 : null;
}
