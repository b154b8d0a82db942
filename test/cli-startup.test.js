// @ts-check
/**
 * Every command pays for what the CLI loads before it runs: the HTTP client
 * (undici) and puppeteer-core are loaded by the commands that crawl or
 * render, not by `--help`, `publish` or `verify` (they cost a start about
 * 0.25 s on the 2-vCPU machine of BENCHMARKS.md). Nor does a crawl load
 * htmlparser2's DOM packages, which its package entry would.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './helpers/cli.js';

describe('what a command loads', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-startup-'));
    // A module hook that names the heavy packages as they are resolved.
    await writeFile(path.join(dir, 'hooks.mjs'), `export async function resolve(specifier, context, next) {
  if (['undici', 'puppeteer-core', 'domhandler', 'domutils', 'dom-serializer'].includes(specifier)) process.stderr.write('LOADED ' + specifier + '\\n');
  return next(specifier, context);
}\n`);
    // undici is required (CommonJS), which the resolve hook does not see on Node 20: its files in the require cache tell.
    await writeFile(path.join(dir, 'register.mjs'), `import { createRequire, register } from 'node:module';
register('./hooks.mjs', import.meta.url);
const cache = createRequire(import.meta.url).cache;
process.on('exit', () => {
  if (Object.keys(cache).some((file) => file.includes('/node_modules/undici/'))) process.stderr.write('LOADED undici\\n');
});
`);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** @param {string[]} args @returns {string[]} the heavy packages loaded */
  const loaded = (args) => {
    const child = spawnSync(process.execPath, ['--import', path.join(dir, 'register.mjs'), ...args], { encoding: 'utf8', timeout: 30_000 });
    return [...new Set([...child.stderr.matchAll(/^LOADED (\S+)$/gm)].map((match) => match[1]))].sort();
  };

  it('sees a heavy package when one is loaded (the check works)', () => {
    expect(loaded(['-e', "await import('undici')", '--input-type=module'])).toEqual(['undici']);
  });

  it('--help, publish and verify load neither undici nor puppeteer-core; crawl loads undici only, and of htmlparser2 only its tokenizer and parser', () => {
    expect(loaded([BIN, '--help'])).toEqual([]);
    expect(loaded([BIN, 'verify', path.join(dir, 'no-such-tree')])).toEqual([]);
    expect(loaded([BIN, 'publish', path.join(dir, 'no-such-tree'), '--to', path.join(dir, 'www')])).toEqual([]);
    expect(loaded([BIN, 'crawl', 'http://127.0.0.1:9/', '-o', path.join(dir, 'out'), '--retries', '0', '--timeout', '1000', '-q'])).toEqual(['undici']);
  });
});

describe('V8 at start-up', () => {
  it('keeps WebAssembly at its baseline tier: no optimising compile of undici\'s parser that the process must wait for at exit', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-flags-'));
    try {
      // Every V8 flag the CLI sets, as it sets it.
      await writeFile(path.join(dir, 'flags.mjs'), `import v8 from 'node:v8';
const set = v8.setFlagsFromString;
v8.setFlagsFromString = (flags) => { process.stderr.write('FLAG ' + flags + '\\n'); set(flags); };
`);
      for (const args of [['--version'], ['crawl', 'http://127.0.0.1:9/', '-o', path.join(dir, 'out'), '--retries', '0', '-q']]) {
        const child = spawnSync(process.execPath, ['--import', path.join(dir, 'flags.mjs'), BIN, ...args], { encoding: 'utf8', timeout: 30_000 });
        expect(child.stderr.split('\n').filter((line) => line.startsWith('FLAG '))[0], args[0]).toBe('FLAG --liftoff-only');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a reader that goes away', () => {
  it('`prerender crawl --help | head -1`: no stack trace, exit 0', async () => {
    const child = spawn(process.execPath, [BIN, 'crawl', '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone before the help is written: the write gets EPIPE
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const [code] = await once(child, 'close');
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
