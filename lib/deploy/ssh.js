// @ts-check
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AbortError, DeployError, LockedError } from '../errors.js';
import { isAlive } from '../output/lock.js';
import { CURRENT, LOCK_NAME, RELEASES, TMP_PREFIX, idFromLink, parseHeader, parseRecord } from './release.js';
import { targetLabel } from './targets.js';
import { checkHashes, parseHashes, removalList } from './verify.js';

/**
 * A remote web root over the system `ssh`: the same release layout and
 * atomic switch as a local target. One ssh connection per target and run (a
 * control master of our own in a temp directory), every remote step a short
 * POSIX sh script whose arguments are passed quoted, never spliced into its
 * text. Processes are spawned with argument lists: no local shell. The work
 * on the server grows with the changed files, but for one `cp -al`:
 *
 *   lock:     mkdir DIR/.prerender-lock (atomic), our pid/host/time inside
 *   prepare:  cp -al releases/PREVIOUS releases/.tmp-ID (one command: hard
 *             links, no data), then rm the changed and vanished paths (list
 *             on stdin)
 *   receive:  tar -x of the new and changed files (one tar stream read once
 *             from OUT, shared by every target of the run: fanout.js)
 *   verify:   sha256sum of the files received (or, --verify all, of every
 *             file of the release), compared with the manifest's sha256
 *   commit:   the record, then releases/.tmp-ID -> releases/ID
 *   switch:   ln -sfn releases/ID .current.tmp.ID && mv -T .current.tmp.ID current
 *
 * The server needs sh, GNU coreutils (cp -al, sha256sum, xargs -0) and tar.
 *
 * @typedef {import('./targets.js').DeployTarget} DeployTarget
 * @typedef {import('./targets.js').StagePlan} StagePlan
 * @typedef {import('./targets.js').StageResult} StageResult
 * @typedef {import('./release.js').ReleaseInfo} ReleaseInfo
 * @typedef {{ user?: string, host: string, port?: number, path: string }} SshSpec
 * @typedef {{
 *   name?: string, sshKey?: string, sshOption?: string[], verify?: 'all' | 'sent',
 *   ssh?: string, signal?: AbortSignal,
 * }} SshOptions
 *   ssh: the ssh program (default "ssh")
 */

/**
 * Quote one word for a POSIX shell.
 * @param {string} word
 */
export const shQuote = (word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

const STATE_SCRIPT = `
cd -- "$1" 2>/dev/null || exit 0
cur=$(readlink ${CURRENT} 2>/dev/null) || cur=
if [ -e ${CURRENT} ] && [ ! -L ${CURRENT} ]; then echo "NOTLINK"; fi
printf 'CURRENT %s\\n' "$cur"
[ -d ${RELEASES} ] || exit 0
for f in ${RELEASES}/*.json; do
  [ -f "$f" ] || continue
  id=\${f#${RELEASES}/}; id=\${id%.json}
  [ -d "${RELEASES}/$id" ] || continue
  printf 'RELEASE '; head -n 1 "$f"
done
id=\${cur##*/}
if [ "$2" = files ] && [ -n "$id" ] && [ -f "${RELEASES}/$id.json" ]; then echo RECORD; cat -- "${RELEASES}/$id.json"; fi`;

const PREPARE_SCRIPT = `
set -e
mkdir -p -- "$1/${RELEASES}"
cd -- "$1/${RELEASES}"
rm -rf ./${TMP_PREFIX}*
for f in *.json; do
  [ -f "$f" ] || continue
  [ -d "\${f%.json}" ] || rm -f -- "$f"
done
if [ -d "$2" ] && [ -f "$2.json" ]; then echo EXISTS; exit 0; fi
rm -rf -- "$2"
if [ -n "$3" ] && [ -d "$3" ]; then cp -al -- "$3" "${TMP_PREFIX}$2"; else mkdir -- "${TMP_PREFIX}$2"; fi
cd -- "${TMP_PREFIX}$2"
xargs -0 -r rm -rf --
echo READY`;

const RECEIVE_SCRIPT = `
cd -- "$1" || exit 1
exec tar -x -f - --no-same-owner`;

const VERIFY_SCRIPT = `
cd -- "$1" || exit 1
if [ "$2" = all ]; then find . -type f -print0 | xargs -0 -r sha256sum --; else xargs -0 -r sha256sum --; fi
exit 0`;

const LOCK_SCRIPT = `
mkdir -p -- "$1" && cd -- "$1" || exit 1
if [ -n "$3" ] && [ "$(cat ${LOCK_NAME}/owner 2>/dev/null)" = "$3" ]; then
  # A stale lock: move it aside (only one taker can), then check it was that one.
  if mv -- ${LOCK_NAME} "${LOCK_NAME}.stale.$$" 2>/dev/null; then
    if [ "$(cat "${LOCK_NAME}.stale.$$/owner" 2>/dev/null)" = "$3" ]; then rm -rf -- "${LOCK_NAME}.stale.$$"
    else mv -- "${LOCK_NAME}.stale.$$" ${LOCK_NAME} 2>/dev/null || rm -rf -- "${LOCK_NAME}.stale.$$"; fi
  fi
fi
if mkdir -- ${LOCK_NAME} 2>/dev/null; then printf '%s\n' "$2" > ${LOCK_NAME}/owner; echo TAKEN; exit 0; fi
echo HELD
cat -- ${LOCK_NAME}/owner 2>/dev/null
exit 0`;

const UNLOCK_SCRIPT = `
cd -- "$1" || exit 0
if [ "$(cat ${LOCK_NAME}/owner 2>/dev/null)" = "$2" ]; then rm -rf -- ${LOCK_NAME}; fi`;

const COMMIT_SCRIPT = `
set -e
cd -- "$1/${RELEASES}"
cat > "${TMP_PREFIX}$2.json"
mv -f -- "${TMP_PREFIX}$2.json" "$2.json"
mv -T -- "${TMP_PREFIX}$2" "$2"`;

const SWITCH_SCRIPT = `
set -e
cd -- "$1"
if [ ! -d "${RELEASES}/$2" ] || [ ! -f "${RELEASES}/$2.json" ]; then echo "no complete release $2 in $1/${RELEASES}" >&2; exit 3; fi
if [ -e ${CURRENT} ] && [ ! -L ${CURRENT} ]; then echo "$1/${CURRENT} is not a symbolic link: move it away" >&2; exit 4; fi
ln -sfn -- "${RELEASES}/$2" ".${CURRENT}.tmp.$2"
mv -T -- ".${CURRENT}.tmp.$2" ${CURRENT}
new=$2
shift 2
for id in "$@"; do
  [ "$id" = "$new" ] && continue
  rm -f -- "${RELEASES}/$id.json"
  rm -rf -- "${RELEASES}/$id"
done`;


/** @implements {DeployTarget} */
export class SshTarget {
  /**
   * @param {SshSpec} spec
   * @param {SshOptions} [options]
   */
  constructor(spec, options = {}) {
    this.spec = spec;
    this.options = options;
    this.label = options.name ?? targetLabel({ kind: 'ssh', ...spec });
    this.kind = /** @type {const} */ ('ssh');
    this.destination = spec.user ? `${spec.user}@${spec.host}` : spec.host;
    /** @type {import('node:child_process').ChildProcess | null} */
    this.master = null;
    /** @type {string | null} */
    this.controlDir = null;
    /** @type {Promise<void> | null} */
    this.connecting = null;
    /** @type {Set<import('node:child_process').ChildProcess>} */
    this.children = new Set();
    /** @type {string | undefined} the owner text of our lock, while we hold it */
    this.lockText = undefined;
  }

  /** Options every ssh process gets (the master and the rest). */
  baseArgs() {
    // ssh keeps the first value it is given for an option: the user's come first.
    const args = (this.options.sshOption ?? []).flatMap((option) => ['-o', option]);
    args.push('-o', 'BatchMode=yes', '-o', 'ConnectTimeout=15', '-o', 'ServerAliveInterval=10', '-o', 'ServerAliveCountMax=3');
    if (this.spec.port) args.push('-p', String(this.spec.port));
    if (this.options.sshKey) args.push('-i', this.options.sshKey, '-o', 'IdentitiesOnly=yes');
    return args;
  }

  /** Options for a process that rides on the master's connection. */
  clientArgs() {
    return [...this.baseArgs(), '-o', 'ControlMaster=no', '-S', path.join(/** @type {string} */ (this.controlDir), 'cm')];
  }

  /** Start our control master once: one authentication per run. */
  connect() {
    this.connecting ??= this.startMaster();
    return this.connecting;
  }

  async startMaster() {
    this.controlDir = await mkdtemp(path.join(os.tmpdir(), 'prerender-ssh-'));
    const socket = path.join(this.controlDir, 'cm');
    // The master's remote command reads its stdin, which only we hold: if this
    // process dies (even by SIGKILL) the pipe closes and the master ends.
    const master = spawn(this.options.ssh ?? 'ssh', [...this.baseArgs(), '-M', '-o', 'ControlPersist=no', '-S', socket, '--', this.destination, 'cat >/dev/null'], { stdio: ['pipe', 'ignore', 'pipe'] });
    master.stdin?.on('error', () => {}); // gone: its exit says why
    this.master = master;
    let stderr = '';
    master.stderr?.on('data', (chunk) => { stderr = (stderr + chunk).slice(-4000); });
    /** @type {Promise<{ code: number | null, error?: Error }>} */
    const exited = new Promise((resolve) => {
      master.once('error', (error) => resolve({ code: null, error }));
      master.once('exit', (code) => resolve({ code }));
    });
    // Ready when `ssh -O check` answers; bounded by ConnectTimeout plus authentication.
    const deadline = Date.now() + 30_000;
    for (let attempt = 0; ; attempt++) {
      const check = await this.spawnCollect([...this.clientArgs(), '-O', 'check', '--', this.destination], { quiet: true }).catch(() => null);
      if (check?.code === 0) return;
      const done = await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, Math.min(20 * 2 ** attempt, 200), null))]);
      if (done) {
        const { code, error } = /** @type {{ code: number | null, error?: Error }} */ (done);
        throw new DeployError(`${this.label}: cannot connect with ssh${error ? ` (${error.message})` : ` (exit ${code})`}: ${stderr.trim() || 'no message'}`, { code: 'DEPLOY_SSH', cause: error });
      }
      if (Date.now() > deadline || this.options.signal?.aborted) {
        master.kill();
        throw new DeployError(`${this.label}: ssh did not connect within 30 s: ${stderr.trim()}`, { code: 'DEPLOY_SSH' });
      }
    }
  }

  /**
   * Spawn a process (no shell), collect its output.
   * @param {string[]} args ssh arguments
   * @param {{ input?: string, command?: string, quiet?: boolean }} [options]
   * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
   */
  spawnCollect(args, options = {}) {
    return new Promise((resolve, reject) => {
      if (this.options.signal?.aborted) {
        reject(new AbortError('interrupted'));
        return;
      }
      const child = spawn(options.command ?? this.options.ssh ?? 'ssh', args, { stdio: ['pipe', 'pipe', 'pipe'] });
      this.children.add(child);
      const abort = () => child.kill('SIGTERM');
      this.options.signal?.addEventListener('abort', abort, { once: true });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk; });
      child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-16_000); });
      child.stdin.on('error', () => {}); // a process that exits early: its exit code tells
      child.stdin.end(options.input ?? '');
      child.once('error', (error) => {
        this.children.delete(child);
        reject(new DeployError(`${this.label}: cannot run ${options.command ?? 'ssh'}: ${error.message}`, { code: 'DEPLOY_SSH', cause: error }));
      });
      child.once('close', (code) => {
        this.children.delete(child);
        this.options.signal?.removeEventListener('abort', abort);
        if (this.options.signal?.aborted) reject(new AbortError('interrupted'));
        else resolve({ code, stdout, stderr });
      });
    });
  }

  /**
   * Run a sh script on the remote host with arguments $1, $2...
   * @param {string} what for messages
   * @param {string} script
   * @param {string[]} args
   * @param {string} [input] stdin
   */
  async remote(what, script, args, input) {
    await this.connect();
    const command = ['sh', '-c', script, 'prerender', ...args].map(shQuote).join(' ');
    const result = await this.spawnCollect([...this.clientArgs(), '--', this.destination, command], { input });
    if (result.code !== 0) throw new DeployError(`${this.label}: ${what} failed (exit ${result.code}): ${result.stderr.trim() || 'no message'}`, { code: 'DEPLOY_REMOTE' });
    return result.stdout;
  }

  /**
   * Take the target's lock: DIR/.prerender-lock made with mkdir (atomic on
   * the server), our pid, host and time inside. A lock left by a process of
   * this host that is gone (killed) is taken over; any other is refused.
   */
  async lock() {
    const text = JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString() });
    let stale = '';
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await this.remote('taking the lock', LOCK_SCRIPT, [this.spec.path, text, stale]);
      if (/^TAKEN$/m.test(answer)) {
        this.lockText = text;
        return;
      }
      const held = answer.replace(/^HELD\n/, '').trim();
      /** @type {import('../output/lock.js').LockOwner | null} */
      let owner = null;
      try {
        const parsed = JSON.parse(held);
        if (Number.isSafeInteger(parsed?.pid) && typeof parsed.host === 'string') owner = parsed;
      } catch {
        owner = null;
      }
      if (owner && !isAlive(owner)) {
        stale = held; // killed on this host: take it over
        continue;
      }
      const lockDir = `${this.spec.path}/${LOCK_NAME}`;
      const who = owner ? `pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}` : 'a process that is starting';
      throw new LockedError(`another prerender publish or deploy (${who}) holds ${this.label}; wait for it to end. If it is gone (killed on another machine, or the lock is older than any run), remove the lock: ssh ${this.destination}${this.spec.port ? ` -p ${this.spec.port}` : ''} rm -r ${shQuote(lockDir)}`);
    }
    throw new LockedError(`${this.label}: could not take the lock ${this.spec.path}/${LOCK_NAME}: it keeps changing hands`);
  }

  /** Remove our lock (only if it still is ours). */
  async unlock() {
    if (!this.lockText) return;
    const text = this.lockText;
    this.lockText = undefined;
    await this.remote('removing the lock', UNLOCK_SCRIPT, [this.spec.path, text]);
  }

  /**
   * Run a remote sh script whose stdin is a stream we write (the files to send).
   * @param {string} what for messages
   * @param {string} script
   * @param {string[]} args
   * @param {import('./fanout.js').Fanout} fanout
   */
  async receive(what, script, args, fanout) {
    await this.connect();
    if (this.options.signal?.aborted) throw new AbortError('interrupted');
    const command = ['sh', '-c', script, 'prerender', ...args].map(shQuote).join(' ');
    const child = spawn(this.options.ssh ?? 'ssh', [...this.clientArgs(), '--', this.destination, command], { stdio: ['pipe', 'ignore', 'pipe'] });
    this.children.add(child);
    const abort = () => child.kill('SIGTERM');
    this.options.signal?.addEventListener('abort', abort, { once: true });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-16_000); });
    /** @type {Promise<{ code: number | null, error?: Error }>} */
    const exited = new Promise((resolve) => {
      child.once('error', (error) => resolve({ code: null, error }));
      child.once('close', (code) => resolve({ code }));
    });
    const sent = fanout.attach(child.stdin).then(() => null, (/** @type {Error} */ error) => error);
    const [{ code, error }, readError] = await Promise.all([exited, sent]);
    this.children.delete(child);
    this.options.signal?.removeEventListener('abort', abort);
    if (this.options.signal?.aborted) throw new AbortError('interrupted');
    if (readError) throw readError;
    if (error || code !== 0) throw new DeployError(`${this.label}: ${what} failed (${error ? error.message : `exit ${code}`}): ${stderr.trim() || 'no message'}`, { code: 'DEPLOY_TRANSFER', cause: error });
  }

  /**
   * @param {boolean} [withFiles] also the current release's file list, in the same round trip
   * @returns {Promise<import('./targets.js').TargetState>}
   */
  async state(withFiles = false) {
    const answer = await this.remote('reading the releases', STATE_SCRIPT, [this.spec.path, withFiles ? 'files' : '']);
    const cut = answer.indexOf('\nRECORD\n');
    const out = cut === -1 ? answer : answer.slice(0, cut + 1);
    if (/^NOTLINK$/m.test(out)) throw new DeployError(`${this.label}: ${this.spec.path}/${CURRENT} is not a symbolic link: move it away`, { code: 'DEPLOY_CURRENT_NOT_LINK' });
    const current = idFromLink(/^CURRENT (.*)$/m.exec(out)?.[1] ?? null);
    /** @type {ReleaseInfo[]} */
    const releases = [];
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
    return { current, releases, currentFiles };
  }

  /**
   * Build releases/ID on the server: links of the previous release, the
   * changed files received from the shared stream, a check of what came;
   * then its record. `current` is not touched.
   * @param {StagePlan} plan
   * @returns {Promise<StageResult>}
   */
  async stage(plan) {
    const { id, source, diff, previous, fanout } = plan;
    let attached = false;
    try {
      const remove = previous ? removalList(diff, previous.files, source.files) : [];
      const prepared = await this.remote('preparing the release directory', PREPARE_SCRIPT, [this.spec.path, id, previous?.id ?? ''], remove.join('\0'));
      if (/^EXISTS$/m.test(prepared)) return { sentFiles: 0, sentBytes: 0, verify: { ok: true, checked: 0, failures: [] }, reused: true };
      const to = `${this.spec.path}/${RELEASES}/${TMP_PREFIX}${id}`;
      const send = diff.send;
      if (!fanout) throw new DeployError(`${this.label}: no stream of files to receive`);
      attached = true;
      await this.receive('receiving the files', RECEIVE_SCRIPT, [to], fanout);
      const sentBytes = send.reduce((sum, file) => sum + (source.files.get(file)?.bytes ?? 0), 0);

      // The check: the files received, hashed on the server against the
      // manifest's sha256. Unchanged files are links to inodes of the
      // previous release, checked when they were received (--verify all
      // hashes them again, and lists files the release should not have).
      const all = this.options.verify === 'all';
      const hashed = parseHashes(await this.remote('checking the release', VERIFY_SCRIPT, [to, all ? 'all' : 'sent'], all ? '' : send.join('\0')), all);
      const failures = checkHashes(all ? [...source.files.keys()] : send, source.files, hashed, all);
      const verify = { ok: failures.length === 0, checked: all ? source.files.size : send.length, failures };
      if (!verify.ok) {
        await this.remote('removing the failed release', `rm -rf -- "$1"`, [to]).catch(() => {});
        return { sentFiles: send.length, sentBytes, verify, reused: false };
      }
      await this.remote('committing the release', COMMIT_SCRIPT, [this.spec.path, id], plan.record);
      return { sentFiles: send.length, sentBytes, verify, reused: false };
    } finally {
      if (!attached) fanout?.leave();
    }
  }

  /**
   * @param {string} id
   * @param {string[]} [prune] releases to remove once switched (never the new current)
   */
  async switchTo(id, prune = []) {
    await this.remote('switching current', SWITCH_SCRIPT, [this.spec.path, id, ...prune]);
  }

  async close() {
    for (const child of this.children) child.kill('SIGTERM');
    if (this.master && this.master.exitCode === null && this.master.signalCode === null) {
      const master = this.master;
      const gone = new Promise((resolve) => master.once('exit', resolve));
      master.stdin?.end();
      const timer = setTimeout(() => master.kill('SIGTERM'), 5000);
      await gone;
      clearTimeout(timer);
    }
    if (this.controlDir) await rm(this.controlDir, { recursive: true, force: true });
  }
}
