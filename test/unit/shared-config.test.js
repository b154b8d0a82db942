// @ts-check
import { describe, expect, it } from 'vitest';
import { LOCAL_OPTIONS, RESULT_OPTIONS, configDifference, sharedConfig, workerOptions } from '../../lib/distributed/config.js';
import { resolveCrawlOptions } from '../../lib/options/crawl-options.js';
import { bucketsAddCores, machineOf } from '../../lib/distributed/shared.js';

const base = { roots: ['http://shop.test/st/dir.asp'], frontier: 'redis://127.0.0.1:6379/0', crawlId: 'c1' };

describe('the stored configuration of a shared crawl', () => {
  it('carries every option that changes what a worker fetches, names or renders; the worker keeps its own tabs, connections, threads and browser', () => {
    const o = resolveCrawlOptions({
      ...base, robots: true, name: ['/doku.php?id=*', '{query.id}.html'], assets: true, assetsOrigins: ['https://cdn.shop.test'], relativeLinks: false,
      render: true, renderWait: ['selector:#app a'], renderOnly: ['/st/'], renderTimeout: 5000, renderConcurrency: 3, browser: '/opt/chrome', threads: 2,
    });
    const config = sharedConfig(o, [], '1.2.3');
    const worker = resolveCrawlOptions(workerOptions(JSON.parse(JSON.stringify(config)), { frontier: base.frontier, crawlId: 'c1', renderConcurrency: 6, concurrency: 4, threads: 0 }));
    for (const name of ['robots', 'name', 'assetsOrigins', 'relativeLinks', 'render', 'renderWait', 'renderOnly', 'renderTimeout']) {
      expect(/** @type {any} */ (worker)[name], name).toEqual(/** @type {any} */ (o)[name]);
    }
    expect(worker.renderConcurrency).toBe(6);
    expect(worker.concurrency).toBe(4);
    expect(worker.threads).toBe(0); // --threads is each process's own
    expect(Object.keys(config.options)).not.toContain('threads');
    expect(worker.browser).toBeUndefined(); // found on the worker's own machine, never the coordinator's path
    for (const name of LOCAL_OPTIONS) expect(RESULT_OPTIONS).not.toContain(name);
  });

  it('compares a key an older stored configuration lacks as its default, and names what differs', () => {
    const given = sharedConfig(resolveCrawlOptions(base), [], '1.2.3');
    const older = JSON.parse(JSON.stringify(given));
    for (const name of ['render', 'renderWait', 'robots', 'name', 'relativeLinks', 'assetsOrigins']) delete older.options[name];
    expect(configDifference(older, given)).toBeNull();
    const rendering = sharedConfig(resolveCrawlOptions({ ...base, render: true, renderWait: ['selector:#app a'] }), [], '1.2.3');
    expect(configDifference(older, rendering)).toMatch(/--render \(stored false, given true\).*--render-wait/);
  });

  it('a process names its machine by PRERENDER_HOST or its host name; a name that could not sit in a lease entry is refused', () => {
    expect(machineOf({ PRERENDER_HOST: 'render-7.eu' })).toBe('render-7.eu');
    expect(machineOf({})).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(machineOf({ PRERENDER_HOST: '' })).toBe(machineOf({}));
    for (const bad of ['a|b', 'a b', 'x'.repeat(254)]) expect(() => machineOf({ PRERENDER_HOST: bad })).toThrow(/PRERENDER_HOST must be a machine name/);
  });

  it('buckets of the finishing phase go out only when they add cores', () => {
    const info = (/** @type {string} */ host) => JSON.stringify({ host, pid: 1, role: 'worker' });
    const here = { host: 'a', threads: 2, cores: 2 };
    expect(bucketsAddCores([], here)).toBe(false); // nobody to help
    expect(bucketsAddCores([info('a'), info('a')], here)).toBe(false); // the same two cores, already busy
    expect(bucketsAddCores([info('a'), info('b')], here)).toBe(true); // another machine
    expect(bucketsAddCores([info('a'), null], here)).toBe(true); // unknown: may be another machine
    expect(bucketsAddCores([info('a'), '{'], here)).toBe(true);
    expect(bucketsAddCores([info('a')], { ...here, threads: 1 })).toBe(true); // this process leaves a core idle
    expect(bucketsAddCores([], { ...here, threads: 0 })).toBe(false);
  });
});
