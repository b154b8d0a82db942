// @ts-check
import { describe, expect, it } from 'vitest';
import {
  beforeAfter, capacityOf, cpuMsPerRequest, cpuPercent, mcyclesFromCpuMs, mcyclesPerOperation, overCapacity, percentile, serversFor, shoppersPerServer,
} from '../../lib/capacity/tca.js';
import { parseDuration, parseLatencyTarget, parseSteps } from '../../lib/capacity/capacity-options.js';
import { checkProfile, defaultProfile, loadProfile } from '../../lib/capacity/profile.js';
import { loadConfigFile } from '../../lib/options/config-file.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { mixRequests } from '../../lib/capacity/operations.js';

/** The arithmetic of Transaction Cost Analysis (lib/capacity/tca.js), and the option values it takes. */

describe('cost per operation', () => {
  it('gives the seed study\'s worked example: 4 processors at 400 MHz completing 16 transactions/s cost 100 Mcycles each', () => {
    expect(mcyclesPerOperation({ utilisation: 1, cores: 4, mhz: 400, opsPerSecond: 16 })).toBe(100);
    // The same server half used for the same rate: half the cycles.
    expect(mcyclesPerOperation({ utilisation: 0.5, cores: 4, mhz: 400, opsPerSecond: 16 })).toBe(50);
    expect(mcyclesPerOperation({ utilisation: 1, cores: 4, mhz: 400, opsPerSecond: 0 })).toBeNull();
  });

  it('agrees with the cost counted in CPU time: 4 cores for a second over 16 transactions is 250 ms each, 100 Mcycles at 400 MHz', () => {
    const ms = cpuMsPerRequest(4 * 1000, 16);
    expect(ms).toBe(250);
    expect(mcyclesFromCpuMs(ms, 400)).toBe(100);
    expect(mcyclesFromCpuMs(null, 400)).toBeNull();
  });

  it('has no cost when the CPU is unknown or nothing was answered, and utilisation over all cores', () => {
    expect(cpuMsPerRequest(null, 100)).toBeNull();
    expect(cpuMsPerRequest(50, 0)).toBeNull();
    expect(cpuPercent(500, 1000, 2)).toBe(25);
    expect(cpuPercent(null, 1000, 2)).toBeNull();
  });
});

describe('steps and capacity', () => {
  const target = { percentile: 95, ms: 500 };
  it('judges a step over capacity on errors, latency over the target, or answers falling behind the rate offered', () => {
    const fine = { shoppers: 10, offeredRps: 10, rps: 9.9, errors: 0, latencyMs: 120 };
    expect(overCapacity(fine, target)).toEqual([]);
    expect(overCapacity({ ...fine, errors: 2 }, target)).toEqual(['2 errors']);
    expect(overCapacity({ ...fine, latencyMs: 501 }, target)).toEqual(['p95 501 ms > 500 ms']);
    expect(overCapacity({ ...fine, rps: 7 }, target)).toEqual(['7.0 ops/s answered of 10 offered']);
    expect(overCapacity({ ...fine, latencyMs: null }, target)).toEqual(['no answer']);
  });

  it('takes the largest step before the first one over capacity', () => {
    expect(capacityOf([{ shoppers: 10, over: [] }, { shoppers: 20, over: [] }, { shoppers: 40, over: ['x'] }])).toEqual({ shoppers: 20, reached: true });
    expect(capacityOf([{ shoppers: 10, over: [] }, { shoppers: 20, over: [] }])).toEqual({ shoppers: 20, reached: false });
    expect(capacityOf([{ shoppers: 10, over: ['x'] }])).toEqual({ shoppers: 0, reached: true });
  });

  it('reads percentiles by nearest rank', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 95)).toBe(95);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 95)).toBeNull();
  });
});

describe('shoppers per server, before and after', () => {
  it('divides a server\'s CPU by what a shopper costs each second', () => {
    // 10 ms an operation, one operation every 10 s: 1 ms of CPU a second per shopper; 2 cores carry 2,000.
    expect(shoppersPerServer(1, 2)).toBe(2000);
    expect(shoppersPerServer(null, 2)).toBeNull();
    expect(serversFor(4500, 2000)).toBe(3);
    expect(serversFor(10, 2000)).toBe(1);
    expect(serversFor(10, null)).toBeNull();
  });

  it('partitions: browse operations priced at the static tree, the rest at the origin', () => {
    const operations = [
      { weight: 90, isStatic: true, dynamicMs: 10, staticMs: 0.5 },
      { weight: 10, isStatic: false, dynamicMs: 20, staticMs: null },
    ];
    const result = beforeAfter({ operations, thinkTimeMs: 10_000, cores: 1, target: 1000 });
    // Before: (0.9 × 10 + 0.1 × 20) ms per operation, 0.1 operation a second: 1.1 ms/s per shopper.
    expect(result.cpuMsPerShopperSecond.before).toBeCloseTo(1.1, 10);
    // After: 0.9 × 0.5 at the static tier, 0.1 × 20 at the origin: 0.045 + 0.2 ms/s.
    expect(result.cpuMsPerShopperSecond.static).toBeCloseTo(0.045, 10);
    expect(result.cpuMsPerShopperSecond.dynamic).toBeCloseTo(0.2, 10);
    expect(result.shoppersPerServer).toEqual({ before: 909, after: 4081 });
    // 1,000 shoppers: 1,100 ms/s before (2 servers of one core); after, 45 ms/s static and 200 ms/s dynamic (1 + 1).
    expect(result.servers).toEqual({ before: 2, after: 2, afterStatic: 1, afterDynamic: 1 });
  });

  it('gives no figure when a cost is unknown', () => {
    const result = beforeAfter({ operations: [{ weight: 1, isStatic: true, dynamicMs: null, staticMs: 0.1 }], thinkTimeMs: 1000, cores: 1, target: 10 });
    expect(result.shoppersPerServer.before).toBeNull();
    expect(result.servers.before).toBeNull();
    expect(result.shoppersPerServer.after).toBe(10_000);
  });
});

describe('option values', () => {
  it('reads durations, steps and the latency target', () => {
    expect(parseDuration('10s', '--x')).toBe(10_000);
    expect(parseDuration('500ms', '--x')).toBe(500);
    expect(parseDuration('2m', '--x')).toBe(120_000);
    expect(parseDuration('3', '--x')).toBe(3000);
    expect(() => parseDuration('soon', '--step-duration')).toThrow(/--step-duration must be a duration/);
    expect(parseSteps('10,20,40,80')).toEqual([10, 20, 40, 80]);
    expect(() => parseSteps('10,5')).toThrow(/rise/);
    expect(() => parseSteps('10,x')).toThrow(/whole numbers/);
    expect(parseLatencyTarget('p95=500ms')).toEqual({ percentile: 95, ms: 500 });
    expect(parseLatencyTarget('p99=1s')).toEqual({ percentile: 99, ms: 1000 });
    expect(parseLatencyTarget('p50=80')).toEqual({ percentile: 50, ms: 80 });
    expect(() => parseLatencyTarget('p42=1s')).toThrow(/percentile/);
  });
});

describe('profiles', () => {
  it('the built-in one is the study\'s catalogue shop: 66 s between operations (10 in an 11-minute session)', () => {
    const profile = defaultProfile();
    expect(profile.thinkTimeMs).toBe(66_000);
    expect(profile.operations.map((op) => [op.name, op.weight])).toEqual([['browse category', 30], ['view product', 60], ['add to cart', 6], ['checkout', 4]]);
  });

  it('refuses what it cannot use, saying where', () => {
    expect(() => checkProfile({ operations: [] }, 'p.json')).toThrow(/p.json: "operations" must be a non-empty list/);
    expect(() => checkProfile({ thinkTime: '5s', operations: [{ name: 'a', weight: 1 }] }, 'p.json')).toThrow(/either "pages".*or "dynamic"/);
    expect(() => checkProfile({ thinkTime: '5s', operations: [{ name: 'a', weight: 1, dynamic: 'cart' }] }, 'p.json')).toThrow(/starting with "\/"/);
    expect(() => checkProfile({ operations: [{ name: 'a', weight: 1, dynamic: '/cart' }] }, 'p.json')).toThrow(/thinkTime/);
    expect(checkProfile({ thinkTime: '5s', operations: [{ name: 'a', weight: 1, dynamic: '/cart' }] }, 'p.json').thinkTimeMs).toBe(5000);
  });

  it('reads a profile from a JSON file, or from a config file\'s "capacity" (which the crawl commands accept and leave alone)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-profile-'));
    try {
      const profile = { thinkTime: '30s', operations: [{ name: 'home', weight: 1, pages: '/' }, { name: 'basket', weight: 1, dynamic: '/basket' }] };
      await writeFile(path.join(dir, 'p.json'), JSON.stringify(profile));
      await writeFile(path.join(dir, 'prerender.config.mjs'), `export default { roots: ['http://shop.test/'], capacity: ${JSON.stringify(profile)} };\n`);
      for (const file of ['p.json', 'prerender.config.mjs']) {
        const loaded = await loadProfile(file, dir);
        expect(loaded.thinkTimeMs).toBe(30_000);
        expect(loaded.operations).toEqual([{ name: 'home', weight: 1, pages: ['/'] }, { name: 'basket', weight: 1, dynamic: ['/basket'] }]);
      }
      expect((await loadConfigFile(path.join(dir, 'prerender.config.mjs'))).capacity).toEqual(profile);
      await writeFile(path.join(dir, 'bad.json'), JSON.stringify({ capacity: { thinkTime: '1s', operations: [{ name: 'x', weight: 0, dynamic: '/' }] } }));
      await expect(loadProfile('bad.json', dir)).rejects.toThrow(/bad.json: operation "x": "weight" must be a number greater than 0/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('mixes a tier\'s requests in the profile\'s proportions', () => {
    const a = { method: /** @type {const} */ ('GET'), path: '/a' };
    const b = { method: /** @type {const} */ ('GET'), path: '/b' };
    const list = mixRequests([{ weight: 90, requests: [a] }, { weight: 10, requests: [b] }]);
    expect(list.filter((r) => r.path === '/a')).toHaveLength(900);
    expect(list.filter((r) => r.path === '/b')).toHaveLength(100);
    // Shuffled: the /b requests are not all at the end.
    expect(list.slice(0, 500).some((r) => r.path === '/b')).toBe(true);
  });
});
