// @ts-check
import { spawn } from 'node:child_process';
import { DeployError } from '../errors.js';

/**
 * One `tar -c` of the files to send (links inside OUT followed), written to every target's `ssh … tar -x`. It starts once every
 * member has attached or left, moves at the slowest receiver's pace, and drops a receiver that dies.
 * @typedef {import('node:stream').Writable} Writable
 */
export class Fanout {
  /**
   * @param {string} out the paths are relative to it @param {string[]} files @param {number} members how many will attach or leave
   * @param {{ tar?: string, signal?: AbortSignal }} [options]
   */
  constructor(out, files, members, options = {}) {
    this.out = out;
    this.files = files;
    this.pending = members;
    this.options = options;
    /** @type {Set<Writable>} */ this.sinks = new Set();
    this.started = false;
    /** @type {(value: void) => void} */ let resolve = () => {};
    /** @type {(error: Error) => void} */ let reject = () => {};
    /** Once the whole stream was read and handed to every sink, or failed. */
    this.done = new Promise((ok, fail) => { resolve = ok; reject = fail; });
    this.done.catch(() => {}); // each member awaits it; none may be left to crash the process
    this.resolve = resolve;
    this.reject = reject;
  }

  /** @param {Writable} sink */
  attach(sink) {
    sink.on('error', () => this.drop(sink));
    sink.on('close', () => this.drop(sink));
    this.sinks.add(sink);
    this.arrived();
    return this.done;
  }

  /** It failed before, or already has the release. */
  leave() {
    this.arrived();
  }

  arrived() {
    this.pending--;
    if (this.pending <= 0 && !this.started) this.start();
  }

  /** @param {Writable} sink */
  drop(sink) {
    if (!this.sinks.delete(sink)) return;
    this.onDrain?.();
  }

  start() {
    this.started = true;
    if (this.sinks.size === 0 || this.files.length === 0) {
      for (const sink of this.sinks) sink.end();
      this.resolve();
      return;
    }
    // --verbatim-files-from: a name like "-C" is a name; -h: a link inside OUT is sent as its file.
    const tar = spawn(this.options.tar ?? 'tar', ['-c', '-f', '-', '-C', this.out, '-h', '--no-recursion', '--null', '--verbatim-files-from', '-T', '-'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const abort = () => tar.kill('SIGTERM');
    this.options.signal?.addEventListener('abort', abort, { once: true });
    let stderr = '';
    tar.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-4000); });
    tar.stdin.on('error', () => {}); // its exit code tells
    tar.stdin.end(this.files.join('\0') + '\0');
    let waiting = 0;
    tar.stdout.on('data', (/** @type {Buffer} */ chunk) => {
      waiting = 0;
      for (const sink of this.sinks) {
        if (!sink.write(chunk)) {
          waiting++;
          sink.once('drain', () => this.onDrain?.());
        }
      }
      if (waiting > 0) {
        tar.stdout.pause();
        this.onDrain = () => {
          // Resume once every sink still there has room again.
          if ([...this.sinks].every((sink) => !sink.writableNeedDrain)) {
            this.onDrain = undefined;
            tar.stdout.resume();
          }
        };
      }
    });
    const finish = (/** @type {Error | null} */ error) => {
      this.options.signal?.removeEventListener('abort', abort);
      for (const sink of this.sinks) {
        if (error) sink.destroy(error);
        else sink.end();
      }
      if (error) this.reject(error);
      else this.resolve();
    };
    tar.once('error', (error) => finish(new DeployError(`cannot run tar: ${error.message}`, { code: 'DEPLOY_TRANSFER', cause: error })));
    tar.once('close', (code) => {
      if (code === 0) finish(null);
      else finish(new DeployError(`reading the files to send failed (tar exit ${code}): ${stderr.trim() || 'no message'}`, { code: 'DEPLOY_TRANSFER' }));
    });
  }
}
