// @ts-check
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AbortError, DeployError, LockedError } from '../errors.js';
import { holderText, isStale, onlyAPersonCanTell, ownerText, parseOwner } from './release-lock.js';
import { CURRENT, LOCK_NAME, RELEASES, TMP_PREFIX, idFromLink, parseHeader, parseRecord } from './release.js';
import { COMMIT_SCRIPT, LOCK_STATE_SCRIPT, STAGE_SCRIPT, STATE_SCRIPT, SWITCH_SCRIPT, UNLOCK_SCRIPT, checkAll, checkLine, parseCheckFailures, shQuote } from './ssh-scripts.js';
import { detailOf, sshFailure } from './ssh-errors.js';
import { targetLabel } from './targets.js';
import { remoteTreeProblem } from './sound.js';
import { removalList } from './verify.js';

/** @typedef {import('./source.js').FileInfo} FileInfo */

/**
 * A remote web root over the system `ssh`, with a local target's release layout and atomic switch. One control master of our
 * own per target and run; every remote step a short POSIX sh script whose arguments are passed quoted, never spliced; no local
 * shell. Three remote commands per target and run, the server's work growing with the changed files but for one `cp -al`:
 * lock and state: mkdir DIR/.prerender-lock (atomic), then the releases, the current's record and whether its tree is exactly that;
 * stage: cp -al of a sound previous release, rm of the changed and vanished paths, tar -x of the shared stream (fanout.js),
 *   sha256sum -c against the manifest, the record, and the rename into releases/ID; its stdin: the lists (lengths in its
 *   arguments, read with head -c), then the tar stream;
 * switch: ln -sfn and mv -T of `current`, the releases beyond --keep and the lock removed.
 * The server needs sh, GNU coreutils and tar; it hashes with openssl where it has one (CHECK_SUMS).
 * @typedef {import('./targets.js').DeployTarget} DeployTarget @typedef {import('./targets.js').StagePlan} StagePlan
 * @typedef {import('./targets.js').StageResult} StageResult @typedef {import('./release.js').ReleaseInfo} ReleaseInfo
 * @typedef {{ user?: string, host: string, port?: number, path: string }} SshSpec
 * @typedef {{ name?: string, sshKey?: string, sshOption?: string[], verify?: 'all' | 'sent', ssh?: string, signal?: AbortSignal }} SshOptions
 */

/** What the master's remote command prints once connected. */
const MASTER_READY = 'prerender-ssh-ready';

/** Idle time of an exited process's pipes before they are closed. */
const PIPE_GRACE_MS = 1000;

/**
 * A ProxyCommand that ssh started inherits its pipes and may outlive it, and an open pipe would keep this process alive.
 * @param {import('node:child_process').ChildProcess} child
 */
function releasePipes(child) {
  const streams = [child.stdin, child.stdout, child.stderr].filter((stream) => stream !== null);
  child.once('exit', () => {
    /** @type {NodeJS.Timeout} */ let timer;
    const idle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => { for (const stream of streams) stream.destroy(); }, PIPE_GRACE_MS);
    };
    for (const stream of [child.stdout, child.stderr]) stream?.on('data', idle);
    child.once('close', () => clearTimeout(timer));
    idle();
  });
}

/** @implements {DeployTarget} */
export class SshTarget {
  /** @param {SshSpec} spec @param {SshOptions} [options] */
  constructor(spec, options = {}) {
    this.spec = spec;
    this.options = options;
    this.label = options.name ?? targetLabel({ kind: 'ssh', ...spec });
    this.kind = /** @type {const} */ ('ssh');
    this.destination = spec.user ? `${spec.user}@${spec.host}` : spec.host;
    /** @type {import('node:child_process').ChildProcess | null} */ this.master = null;
    /** @type {string | null} */ this.controlDir = null;
    /** @type {Promise<void> | null} */ this.connecting = null;
    /** @type {Set<import('node:child_process').ChildProcess>} */ this.children = new Set();
    /** @type {string | undefined} the owner text of our lock, while we hold it */
    this.lockText = undefined;
    /** @type {string | undefined} the state read with the lock */
    this.stateAnswer = undefined;
    /** ssh's own messages: why the connection ended */
    this.masterStderr = '';
    /** A later exit 255 is a lost connection. */
    this.connected = false;
  }

  /** The master and the rest. */
  baseArgs() {
    // ssh keeps the first value it is given for an option: the user's come first.
    const args = (this.options.sshOption ?? []).flatMap((option) => ['-o', option]);
    args.push('-o', 'BatchMode=yes', '-o', 'ConnectTimeout=15', '-o', 'ServerAliveInterval=10', '-o', 'ServerAliveCountMax=3');
    if (this.spec.port) args.push('-p', String(this.spec.port));
    if (this.options.sshKey) args.push('-i', this.options.sshKey, '-o', 'IdentitiesOnly=yes');
    return args;
  }

  clientArgs() {
    return [...this.baseArgs(), '-o', 'ControlMaster=no', '-S', path.join(/** @type {string} */ (this.controlDir), 'cm')];
  }

  /** Once: one authentication per run. */
  connect() {
    this.connecting ??= this.startMaster();
    return this.connecting;
  }

  async startMaster() {
    this.controlDir = await mkdtemp(path.join(os.tmpdir(), 'prerender-ssh-'));
    const socket = path.join(this.controlDir, 'cm');
    // The master's remote command reads the stdin only we hold: if this process dies, even by SIGKILL, the master ends.
    // What it prints first says it is connected: ssh listens on the socket before it opens the session.
    const master = spawn(this.options.ssh ?? 'ssh', [...this.baseArgs(), '-M', '-o', 'ControlPersist=no', '-S', socket, '--', this.destination, `echo ${MASTER_READY}; cat >/dev/null`], { stdio: ['pipe', 'pipe', 'pipe'] });
    master.stdin?.on('error', () => {}); // gone: its exit says why
    releasePipes(master);
    this.master = master;
    master.stderr?.setEncoding('utf8').on('data', (chunk) => { this.masterStderr = (this.masterStderr + chunk).slice(-4000); });
    /** @type {Promise<{ code: number | null, error?: Error }>} */ const exited = new Promise((resolve) => {
      master.once('error', (error) => resolve({ code: null, error }));
      master.once('exit', (code) => resolve({ code }));
    });
    /** @type {Promise<'ready'>} */ const ready = new Promise((resolve) => {
      let seen = '';
      master.stdout?.setEncoding('utf8').on('data', (chunk) => {
        seen = (seen + chunk).slice(-4 * MASTER_READY.length);
        if (seen.includes(MASTER_READY)) resolve('ready');
      });
    });
    await this.untilConnected(master, ready, exited);
  }

  /**
   * The master's word, else `ssh -O check` now and then: a server's ForceCommand runs instead of ours and says nothing.
   * Bounded by ConnectTimeout plus authentication.
   * @param {import('node:child_process').ChildProcess} master @param {Promise<'ready'>} ready @param {Promise<{ code: number | null, error?: Error }>} exited
   */
  async untilConnected(master, ready, exited) {
    const deadline = Date.now() + 30_000;
    for (let attempt = 0; ; attempt++) {
      /** @type {NodeJS.Timeout | undefined} */ let timer;
      const done = await Promise.race([ready, exited, new Promise((resolve) => { timer = setTimeout(resolve, attempt === 0 ? 1000 : 250, null); })]);
      clearTimeout(timer);
      if (done === 'ready') break;
      if (done) {
        const { code, error } = /** @type {{ code: number | null, error?: Error }} */ (done);
        throw sshFailure({ what: 'connecting', code: code ?? 255, error, stderr: this.masterStderr, connected: false });
      }
      const check = await this.spawnCollect([...this.clientArgs(), '-O', 'check', '--', this.destination], { quiet: true }).catch(() => null);
      if (check?.code === 0) break;
      if (Date.now() > deadline || this.options.signal?.aborted) {
        master.kill();
        throw new DeployError('ssh did not connect within 30 s', { code: 'DEPLOY_SSH', detail: detailOf(this.masterStderr) || undefined });
      }
    }
    this.connected = true;
  }

  /** The last 16 kB of stderr collected, killed on abort, forgotten once ended. @param {string} command @param {string[]} args */
  #start(command, args) {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    releasePipes(child); // 'close' comes, even when a proxy it started holds its pipes
    this.children.add(child);
    const abort = () => child.kill('SIGTERM');
    this.options.signal?.addEventListener('abort', abort, { once: true });
    const out = { stdout: '', stderr: '' };
    child.stdout.setEncoding('utf8').on('data', (chunk) => { out.stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk) => { out.stderr = (out.stderr + chunk).slice(-16_000); });
    child.stdin.on('error', () => {}); // a process that exits early: its exit code and output tell
    /** @type {Promise<{ code: number | null, signal: string | null, error?: Error, stdout: string, stderr: string }>} */
    const exited = new Promise((resolve) => {
      const end = (/** @type {number | null} */ code, /** @type {string | null} */ signal, /** @type {Error | undefined} */ error) => {
        this.children.delete(child);
        this.options.signal?.removeEventListener('abort', abort);
        resolve({ code, signal, error, ...out });
      };
      child.once('error', (error) => end(null, null, error));
      child.once('close', (code, signal) => end(code, signal, undefined));
    });
    return { child, exited };
  }

  /**
   * @param {string[]} args ssh arguments @param {{ input?: string, command?: string, quiet?: boolean }} [options]
   * @returns {Promise<{ code: number | null, signal: string | null, stdout: string, stderr: string }>}
   */
  async spawnCollect(args, options = {}) {
    if (this.options.signal?.aborted) throw new AbortError('interrupted');
    const { child, exited } = this.#start(options.command ?? this.options.ssh ?? 'ssh', args);
    child.stdin.end(options.input ?? '');
    const { code, signal, error, stdout, stderr } = await exited;
    if (error) throw new DeployError(`cannot run ${options.command ?? 'ssh'}: ${error.message}`, { code: 'DEPLOY_SSH', cause: error });
    if (this.options.signal?.aborted) throw new AbortError('interrupted');
    return { code, signal, stdout, stderr };
  }

  /** A sh script with arguments $1, $2... @param {string} what for messages @param {string} script @param {string[]} args @param {string} [input] stdin */
  async remote(what, script, args, input) {
    await this.connect();
    this.assertConnected(what);
    const command = ['sh', '-c', script, 'prerender', ...args].map(shQuote).join(' ');
    const result = await this.spawnCollect([...this.clientArgs(), '--', this.destination, command], { input });
    if (result.code !== 0) throw this.failure(what, result);
    return result.stdout;
  }

  /** With the master gone, ssh would fall back to a connection of its own, through a ProxyCommand that may hang. @param {string} what */
  assertConnected(what) {
    if (this.masterGone()) {
      throw sshFailure({ what, code: 255, stderr: '', masterStderr: this.masterStderr, connected: true });
    }
  }

  /** @param {string} what @param {{ code: number | null, signal?: string | null, error?: Error, stderr: string }} result @param {string} [failCode] */
  failure(what, result, failCode) {
    return sshFailure({ what, ...result, masterStderr: this.masterStderr, connected: this.connected, failCode });
  }

  /**
   * DIR/.prerender-lock made with mkdir, atomic on the server: a lock of a gone process of this host is taken over, any other
   * refused. The same command reads the state for the next state(true).
   */
  async lock() {
    const text = ownerText();
    let stale = null;
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await this.remote('taking the lock', LOCK_STATE_SCRIPT, [this.spec.path, 'files', text, stale === null ? '' : 'take', stale ?? '']);
      if (answer.startsWith('TAKEN\n')) {
        this.lockText = text;
        this.stateAnswer = answer.slice(6);
        return;
      }
      if (answer.startsWith('FULL\n')) throw new DeployError('the target\'s disk is full, even with what failed runs left removed, so the lock cannot be written: free space on it, then run again', { code: 'DEPLOY_DISK_FULL' });
      const held = /^HELD\n([\s\S]*?)\nEND$/m.exec(answer)?.[1].trim() ?? '';
      const owner = parseOwner(held);
      if (isStale(owner)) {
        stale = held; // its process, on this host, is gone: take it over
        continue;
      }
      const lockDir = `${this.spec.path}/${LOCK_NAME}`;
      const remove = `remove the lock: ssh ${this.spec.port ? `-p ${this.spec.port} ` : ''}${this.destination} rm -r ${shQuote(lockDir)}`;
      throw new LockedError(`another prerender publish, deploy or rollback (${holderText(owner)}) holds ${this.label}; wait for it to end.${onlyAPersonCanTell(owner) ? ` If it is gone for good, ${remove}` : ''}`);
    }
    throw new LockedError(`${this.label}: could not take the lock ${this.spec.path}/${LOCK_NAME}: it keeps changing hands`);
  }

  /** Only if still ours; after a lost connection, once more through a new one: a lock left behind would hold off other machines. */
  async unlock() {
    if (!this.lockText) return;
    const text = this.lockText;
    this.lockText = undefined;
    if (this.masterGone()) {
      if (this.controlDir) await rm(this.controlDir, { recursive: true, force: true });
      this.connecting = null;
      this.connected = false;
    }
    await this.remote('removing the lock', UNLOCK_SCRIPT, [this.spec.path, text]);
  }

  masterGone() {
    const master = this.master;
    return master !== null && (master.exitCode !== null || master.signalCode !== null);
  }

  /**
   * Its stdin is `head`, then the shared stream of the files to send; it always attaches to the stream or leaves it.
   * @param {string} what for messages @param {string} script @param {string[]} args @param {Buffer} head @param {import('./fanout.js').Fanout} fanout
   */
  async streamTo(what, script, args, head, fanout) {
    try {
      await this.connect();
      if (this.options.signal?.aborted) throw new AbortError('interrupted');
      this.assertConnected(what);
    } catch (error) {
      fanout.leave(); // the others must not wait for this one
      throw error;
    }
    const command = ['sh', '-c', script, 'prerender', ...args].map(shQuote).join(' ');
    const { child, exited } = this.#start(this.options.ssh ?? 'ssh', [...this.clientArgs(), '--', this.destination, command]);
    // A command that ends early (the release exists): its output says.
    child.stdin.write(head);
    const sent = fanout.attach(child.stdin).then(() => null, (/** @type {Error} */ error) => error);
    const [{ code, signal, error, stdout, stderr }, readError] = await Promise.all([exited, sent]);
    if (this.options.signal?.aborted) throw new AbortError('interrupted');
    if (/^(EXISTS|UNSOUND)$/m.test(stdout) && code === 0) return stdout;
    if (readError) throw readError;
    if (error || code !== 0) throw this.failure(what, { code, signal, error, stderr }, 'DEPLOY_TRANSFER');
    return stdout;
  }

  /** @param {boolean} [withFiles] also the current release's file list, in the same round trip @returns {Promise<import('./targets.js').TargetState>} */
  async state(withFiles = false) {
    let answer = this.stateAnswer;
    this.stateAnswer = undefined; // read with the lock: no other run changed it since
    if (answer === undefined || !withFiles) answer = await this.remote('reading the releases', STATE_SCRIPT, [this.spec.path, withFiles ? 'files' : '']);
    const cut = answer.indexOf('\nRECORD\n');
    const out = cut === -1 ? answer : answer.slice(0, cut + 1);
    if (/^NOTLINK$/m.test(out)) throw new DeployError(`${this.spec.path}/${CURRENT} is not a symbolic link: move it away`, { code: 'DEPLOY_CURRENT_NOT_LINK' });
    const current = idFromLink(/^CURRENT (.*)$/m.exec(out)?.[1] ?? null);
    /** @type {ReleaseInfo[]} */ const releases = [];
    for (const match of out.matchAll(/^RELEASE (.*)$/gm)) {
      try {
        const header = parseHeader(match[1]);
        releases.push({ ...header, current: header.id === current });
      } catch {
        continue; // not one of our records
      }
    }
    releases.sort((a, b) => (a.id < b.id ? -1 : 1));
    const currentFiles = cut !== -1 && releases.some((release) => release.current) ? parseRecord(answer.slice(cut + 8)).files : null;
    const unsound = currentFiles && current ? remoteTreeProblem(out, currentFiles) : null;
    return { current, releases, currentFiles, unsound: unsound && `${RELEASES}/${current}: ${unsound}` };
  }

  /** In one command: links of the previous release, the changed files, their check, the record; `current` untouched. @param {StagePlan} plan @returns {Promise<StageResult>} */
  async stage(plan) {
    const { id, source, diff, previous, fanout } = plan;
    let attached = false;
    try {
      if (!fanout) throw new DeployError('no stream of files to receive');
      const send = diff.send;
      const all = this.options.verify === 'all';
      const remove = Buffer.from(previous ? removalList(diff, previous.files, source.files).join('\0') : '');
      const check = Buffer.from(all ? '' : send.map((file) => checkLine(file, /** @type {FileInfo} */ (source.files.get(file)).sha256)).join(''));
      const record = Buffer.from(plan.record);
      attached = true;
      const answer = await this.streamTo('sending and checking the release', STAGE_SCRIPT, [
        this.spec.path, id, previous?.id ?? '', String(remove.length), String(check.length), String(record.length), all ? 'all' : 'sent', String(send.length),
      ], Buffer.concat([remove, check, record]), fanout);
      if (/^EXISTS$/m.test(answer)) return { sentFiles: 0, sentBytes: 0, verify: { ok: true, checked: 0, failures: [] }, reused: true };
      if (/^UNSOUND$/m.test(answer)) throw new DeployError(`${RELEASES}/${previous?.id} gained a symbolic link or special file during the deploy: nothing was built on it; run again (the next run builds from OUT)`, { code: 'DEPLOY_UNSAFE_TARGET' });
      const sentBytes = send.reduce((sum, file) => sum + (source.files.get(file)?.bytes ?? 0), 0);
      // Unchanged files are links to inodes checked when received; --verify all hashes them again, and finds extra files.
      const failures = all
        ? checkAll(answer.slice(answer.indexOf('\nSUMS\n') + 6), source.files)
        : /^COMMITTED$/m.test(answer) ? [] : parseCheckFailures(answer.slice(answer.indexOf('\nFAILED\n') + 8));
      if (!all && failures.length === 0 && !/^COMMITTED$/m.test(answer)) failures.push({ file: '(release)', reason: `the check did not finish: ${answer.slice(-500)}` });
      const verify = { ok: failures.length === 0, checked: all ? source.files.size : send.length, failures };
      const to = `${this.spec.path}/${RELEASES}/${TMP_PREFIX}${id}`;
      if (!verify.ok) {
        if (all) await this.remote('removing the failed release', 'rm -rf -- "$1" "$1.json" "$1.remove" "$1.check"', [to]).catch(() => {});
        return { sentFiles: send.length, sentBytes, verify, reused: false };
      }
      if (all) await this.remote('committing the release', COMMIT_SCRIPT, [this.spec.path, id]);
      return { sentFiles: send.length, sentBytes, verify, reused: false };
    } finally {
      if (!attached) fanout?.leave();
    }
  }

  /** @param {string} id @param {string[]} [prune] releases to remove once switched */
  async switchTo(id, prune = []) {
    await this.remote('switching current', SWITCH_SCRIPT, [this.spec.path, id, this.lockText ?? '', ...prune]);
    this.lockText = undefined; // removed by the switch: the last step of a run on this target
  }

  async close() {
    for (const child of this.children) child.kill('SIGTERM');
    if (this.master && this.master.exitCode === null && this.master.signalCode === null) {
      const master = this.master;
      const gone = new Promise((resolve) => master.once('exit', resolve));
      master.stdin?.end();
      // Bounded: asked to end (its remote command sees the end of its stdin), then SIGTERM, then SIGKILL.
      const timers = [setTimeout(() => master.kill('SIGTERM'), 5000), setTimeout(() => master.kill('SIGKILL'), 10_000)];
      await gone;
      for (const timer of timers) clearTimeout(timer);
    }
    if (this.controlDir) await rm(this.controlDir, { recursive: true, force: true });
  }
}
