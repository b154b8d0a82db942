// @ts-check
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fanout } from '../../lib/deploy/fanout.js';

/** A sink that keeps what it is given. */
function collector() {
  const stream = new PassThrough();
  /** @type {Buffer[]} */
  const chunks = [];
  stream.on('data', (chunk) => chunks.push(chunk));
  return { stream, bytes: () => Buffer.concat(chunks) };
}

/** @param {Buffer} archive */
const names = (archive) => execFileSync('tar', ['-t', '-f', '-'], { input: archive }).toString('utf8').split('\n').filter(Boolean);

describe('Fanout: one reading of the files to send, for several targets', () => {
  /** @type {string} */
  let dir;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'prerender-fanout-'));
    await mkdir(path.join(dir, 'b'));
    await writeFile(path.join(dir, 'a'), 'x'.repeat(300_000));
    await writeFile(path.join(dir, 'b/c'), 'second');
    await writeFile(path.join(dir, '-C'), 'a name like an option');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('starts once every member attached or left, and gives each receiver the same archive', async () => {
    const fanout = new Fanout(dir, ['a', 'b/c', '-C'], 3);
    const one = collector();
    const two = collector();
    const done = fanout.attach(one.stream);
    expect(fanout.started).toBe(false);
    fanout.leave();
    expect(fanout.started).toBe(false);
    fanout.attach(two.stream);
    expect(fanout.started).toBe(true);
    await done;
    expect(names(one.bytes())).toEqual(['a', 'b/c', '-C']);
    expect(two.bytes().equals(one.bytes())).toBe(true);
  });

  it('a receiver that dies is dropped; the others get everything', async () => {
    const fanout = new Fanout(dir, ['a', 'b/c'], 2);
    const dead = new PassThrough({ highWaterMark: 1024 });
    const live = collector();
    fanout.attach(dead); // never read: it would hold the stream back
    const done = fanout.attach(live.stream);
    setImmediate(() => dead.destroy());
    await done;
    expect(names(live.bytes())).toEqual(['a', 'b/c']);
  });

  it('a file that cannot be read fails the stream for every receiver', async () => {
    const fanout = new Fanout(dir, ['a', 'missing'], 1);
    const sink = collector();
    const closed = new Promise((resolve) => sink.stream.once('close', resolve));
    await expect(fanout.attach(sink.stream)).rejects.toMatchObject({ code: 'DEPLOY_TRANSFER', message: /missing/ });
    await closed;
    expect(sink.stream.destroyed).toBe(true);
  });

  it('nothing to send, or nobody to send it to: done at once', async () => {
    const empty = new Fanout(dir, [], 1);
    const sink = collector();
    await empty.attach(sink.stream);
    const nobody = new Fanout(dir, ['a'], 2);
    nobody.leave();
    nobody.leave();
    await nobody.done;
  });
});
