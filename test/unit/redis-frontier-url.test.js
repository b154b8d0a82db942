// @ts-check
/**
 * The --frontier URL (or REDIS_URL, or a config file's "frontier"): checked
 * up front, in one place (lib/options/frontier-url.js), and never shown
 * with its password. No Redis is needed: every case is refused before a
 * connection is tried.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { frontierUrlProblem, redactUrl } from '../../lib/options/frontier-url.js';
import { connectRedis } from '../../lib/distributed/connection.js';
import { runCli } from '../helpers/cli.js';
import { startCli } from '../helpers/processes.js';
import { useTestDir } from '../helpers/fixtures.js';

let dir = '';

describe('the frontier URL', () => {
  useTestDir('prerender-frontier-url-', (made) => { dir = made; });

  it('is shown without its password: user:***@, a password= query parameter, and text that is no valid URL', () => {
    expect(redactUrl('redis://alice:AlicePW123@127.0.0.1:6392/0')).toBe('redis://alice:***@127.0.0.1:6392/0');
    expect(redactUrl('redis://:s3cretpw@127.0.0.1:6391')).toBe('redis://:***@127.0.0.1:6391');
    expect(redactUrl('http://:s3cretpw@127.0.0.1:6391')).toBe('http://:***@127.0.0.1:6391');
    expect(redactUrl('redis://127.0.0.1:6392/0?password=WrongPW&db=1')).toBe('redis://127.0.0.1:6392/0?password=***&db=1');
    expect(redactUrl('redis://127.0.0.1:6392/0?sentinelPassword=WrongPW')).toBe('redis://127.0.0.1:6392/0?sentinelPassword=***');
    expect(redactUrl('redis://:pw@127.0.0.1:notaport')).toBe('redis://:***@127.0.0.1:notaport');
    expect(redactUrl('redis://u:pa/ss@127.0.0.1:6379/0')).not.toContain('pa/ss');
    expect(redactUrl('redis://127.0.0.1:6379/0')).toBe('redis://127.0.0.1:6379/0');
  });

  it('is refused up front when its database, port or host is not usable', () => {
    for (const bad of ['redis://h:6379/abc', 'redis://h:6379/0/1', 'redis://h:6379/-1', 'redis://h:6379/1.5', 'redis://h:6379?db=x']) {
      expect(frontierUrlProblem(bad), bad).toMatch(/database .* whole number/);
    }
    for (const bad of ['redis://:pw@127.0.0.1:notaport', 'redis://[::1', 'redis://a b:6379/0', 'redis://h:99999/0']) {
      expect(frontierUrlProblem(bad), bad).toMatch(/valid host and a numeric port/);
    }
    expect(frontierUrlProblem('http://h:6379/0')).toBe('a redis:// or rediss:// URL');
    for (const good of ['redis://h:6379/0', 'redis://h:6379', 'redis://h/', 'rediss://u:p@h:6380/15', 'redis://h:6379?db=3', 'redis://[::1]:6379/2']) {
      expect(frontierUrlProblem(good), good).toBe(null);
    }
  });

  it('a frontier URL of the wrong scheme is refused without its password: --frontier, REDIS_URL and a config file', async () => {
    const crawl = await runCli(['crawl', 'http://127.0.0.1:1/', '--frontier', 'http://:s3cretpw@127.0.0.1:6391', '--crawl-id', 'a', '-o', path.join(dir, 'out')], { cwd: dir });
    expect(crawl.code).toBe(2);
    expect(crawl.stderr.trim().split('\n')).toHaveLength(1);
    expect(crawl.stderr).toContain('--frontier must be a redis:// or rediss:// URL, got "http://:***@127.0.0.1:6391"');
    expect(crawl.stderr).not.toContain('s3cretpw');

    const env = { ...process.env, REDIS_URL: 'http://:s3cretpw@127.0.0.1:6391' };
    const fromEnv = await startCli(['crawl', 'http://127.0.0.1:1/', '--crawl-id', 'a', '-o', path.join(dir, 'out')], { env, cwd: dir, limitMs: 60_000 }).done;
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('http://:***@127.0.0.1:6391');
    expect(fromEnv.stderr).not.toContain('s3cretpw');
    for (const command of ['worker', 'status']) {
      const result = await startCli([command, '--crawl-id', 'a'], { env, cwd: dir, limitMs: 60_000 }).done;
      expect(result.code, command).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain('REDIS_URL (for --frontier) must be a redis:// or rediss:// URL, got "http://:***@127.0.0.1:6391"');
    }

    await writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ roots: ['http://127.0.0.1:1/'], frontier: 'http://alice:AlicePW123@127.0.0.1:6392/0', crawlId: 'a' }));
    const fromFile = await runCli(['crawl', '-o', path.join(dir, 'out')], { cwd: dir });
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toContain('"frontier" must be a redis:// or rediss:// URL, got "http://alice:***@127.0.0.1:6392/0"');
    expect(fromFile.stderr).not.toContain('AlicePW123');
    // A list given by mistake is not shown with its password either.
    await writeFile(path.join(dir, 'prerender.config.json'), JSON.stringify({ roots: ['http://127.0.0.1:1/'], frontier: ['redis://alice:AlicePW123@127.0.0.1:6392/0'], crawlId: 'a' }));
    const listed = await runCli(['crawl', '-o', path.join(dir, 'out')], { cwd: dir });
    expect(listed.code).toBe(2);
    expect(listed.stderr).not.toContain('AlicePW123');
  });

  it('a bad database, port or host: exit 2, one line naming --frontier, no stack trace, for crawl, worker and status; the API refuses it too', async () => {
    const urls = ['redis://127.0.0.1:6391/abc', 'redis://127.0.0.1:6391/0/1', 'redis://127.0.0.1:6391/-1', 'redis://:pw@127.0.0.1:notaport', 'redis://[::1:6391/0'];
    for (const url of urls) {
      const runs = await Promise.all([
        runCli(['crawl', 'http://127.0.0.1:1/', '--frontier', url, '--crawl-id', 'a', '-o', path.join(dir, 'out')], { cwd: dir }),
        runCli(['worker', '--frontier', url, '--crawl-id', 'a'], { cwd: dir }),
        runCli(['status', '--frontier', url, '--crawl-id', 'a'], { cwd: dir }),
      ]);
      for (const result of runs) {
        expect(result.code, url).toBe(2);
        expect(result.stderr.trim().split('\n'), url).toHaveLength(1);
        expect(result.stderr, url).toMatch(/^prerender: --frontier must be a redis:\/\/ or rediss:\/\/ URL (whose database|with a valid host)/);
        expect(result.stderr, url).not.toMatch(/looks like a bug|Invalid URL|\n\s+at /);
        expect(result.stderr, url).not.toContain(':pw@');
      }
    }
    await expect(connectRedis('redis://127.0.0.1:6391/abc', { timeoutSeconds: 1 })).rejects.toMatchObject({ code: 'FRONTIER_URL' });
  });
});
