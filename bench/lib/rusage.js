// @ts-check
/**
 * Preloaded into the crawler child (`node --import bench/lib/rusage.js ...`):
 * when the process exits, write its own getrusage(RUSAGE_SELF) as JSON to the
 * file named by PRERENDER_BENCH_RUSAGE. That is the crawler process alone, all
 * its threads (main, libuv pool, V8 GC), and nothing of the origin or the
 * benchmark driver. It costs nothing while the crawl runs.
 */
import { writeFileSync } from 'node:fs';

const target = process.env.PRERENDER_BENCH_RUSAGE;
if (target) {
  process.on('exit', (code) => {
    const usage = process.resourceUsage();
    const memory = process.memoryUsage();
    writeFileSync(target, JSON.stringify({
      code,
      userCPUTime: usage.userCPUTime, // microseconds
      systemCPUTime: usage.systemCPUTime, // microseconds
      maxRSS: usage.maxRSS, // kilobytes (ru_maxrss)
      voluntaryContextSwitches: usage.voluntaryContextSwitches,
      involuntaryContextSwitches: usage.involuntaryContextSwitches,
      fsRead: usage.fsRead,
      fsWrite: usage.fsWrite,
      heapUsedAtExit: memory.heapUsed,
      rssAtExit: memory.rss,
      uptimeMs: Math.round(process.uptime() * 1000),
    }));
  });
}
