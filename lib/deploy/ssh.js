// @ts-check
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AbortError, DeployError } from '../errors.js';
import { CURRENT, RELEASES, TMP_PREFIX, idFromLink, parseHeader, parseRecord } from './release.js';
import { targetLabel } from './targets.js';

/**
 * A remote web root over the system `ssh` and `rsync`: the same release
 * layout and atomic switch as a local target. One ssh connection per run
 * (a control master of our own), every remote step a short POSIX sh script
 * whose arguments are passed quoted, never spliced into its text. Processes
 * are spawned with argument lists: no local shell.
 *
 *   stage:  rsync the unchanged files with --link-dest=../PREVIOUS (hard
 *           links, no data), rsync the new and changed ones, then rsync
 *           --checksum --dry-run over the release: any file it would send is
 *           a mismatch. Then the record, and releases/.tmp-ID -> releases/ID.
 *   switch: ln -sfn releases/ID .current.tmp.ID && mv -T .current.tmp.ID current
 *
 * @typedef {import('./targets.js').DeployTarget} DeployTarget
 * @typedef {import('./targets.js').StagePlan} StagePlan
 * @typedef {import('./targets.js').StageResult} StageResult
 * @typedef {import('./release.js').ReleaseInfo} ReleaseInfo
 * @typedef {{ user?: string, host: string, port?: number, path: string }} SshSpec
 * @typedef {{
 *   name?: string, sshKey?: string, sshOption?: string[], verify?: 'all' | 'sent',
 *   ssh?: string, rsync?: string, signal?: AbortSignal,
 * }} SshOptions
 */

/**
 * Quote one word for a POSIX shell.
 * @param {string} word
 */
export const shQuote = (word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

/**
 * Quote one word for rsync's -e, which splits on spaces and honours single
 * and double quotes (no backslashes).
 * @param {string} word
 */
export function rsyncQuote(word) {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  if (!word.includes("'")) return `'${word}'`;
  if (!word.includes('"')) return `"${word}"`;
  throw new DeployError(`an ssh argument holds both kinds of quote, which rsync -e cannot pass: ${word}`);
}

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
mkdir -- "${TMP_PREFIX}$2"`;

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
   * rsync over our connection.
   * @param {string} what for messages
   * @param {string[]} flags
   * @param {string[]} files paths relative to the source
   * @param {string} from local directory
   * @param {string} to remote directory
   */
  async rsync(what, flags, files, from, to) {
    await this.connect();
    const list = path.join(/** @type {string} */ (this.controlDir), `files-${what.replace(/\W+/g, '-')}`);
    await writeFile(list, files.join('\0'));
    const ssh = [this.options.ssh ?? 'ssh', ...this.clientArgs()].map(rsyncQuote).join(' ');
    const host = this.spec.host.includes(':') ? `[${this.spec.host}]` : this.spec.host;
    const dest = `${this.spec.user ? this.spec.user + '@' : ''}${host}:${to}/`;
    const result = await this.spawnCollect(['-e', ssh, '--from0', `--files-from=${list}`, '--copy-links', '-t', ...flags, '--', `${from}/`, dest], { command: this.options.rsync ?? 'rsync' });
    if (result.code !== 0) throw new DeployError(`${this.label}: rsync (${what}) failed (exit ${result.code}): ${result.stderr.trim() || 'no message'}`, { code: 'DEPLOY_RSYNC' });
    return result.stdout;
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
   * @param {StagePlan} plan
   * @returns {Promise<StageResult>}
   */
  async stage(plan) {
    const { id, source, diff, previous } = plan;
    const prepared = await this.remote('preparing the release directory', PREPARE_SCRIPT, [this.spec.path, id]);
    if (/^EXISTS$/m.test(prepared)) return { sentFiles: 0, sentBytes: 0, verify: { ok: true, checked: 0, failures: [] }, reused: true };
    const to = `${this.spec.path}/${RELEASES}/${TMP_PREFIX}${id}`;
    let sentFiles = 0;
    let sentBytes = 0;
    /** @param {string} stats */
    const count = (stats) => {
      sentFiles += Number(/Number of regular files transferred: ([\d,]+)/.exec(stats)?.[1].replace(/,/g, '') ?? 0);
      sentBytes += Number(/Total transferred file size: ([\d,]+)/.exec(stats)?.[1].replace(/,/g, '') ?? 0);
    };
    const all = [...source.files.keys()].sort();
    if (previous && diff.link.length > 0) {
      // Unchanged by the manifests: hard links to the previous release; a file
      // there that is not what it was (size, time) is sent instead.
      count(await this.rsync('link unchanged', ['--stats', `--link-dest=../${previous.id}`], diff.link, source.out, to));
    }
    const send = previous ? diff.send : all;
    if (send.length > 0) count(await this.rsync('send changed', ['--stats'], send, source.out, to));
    const checkList = this.options.verify === 'sent' ? send : all;
    /** @type {{ file: string, reason: string }[]} */
    const failures = [];
    if (checkList.length > 0) {
      const out = await this.rsync('verify', ['--checksum', '--dry-run', '--out-format=%i %n'], checkList, source.out, to);
      for (const line of out.split('\n')) {
        const match = /^([<>ch*][^ ]*) (.+)$/.exec(line);
        if (match && !match[2].endsWith('/')) failures.push({ file: match[2], reason: match[1].includes('+++') ? 'missing on the target after transfer' : 'checksum differs on the target after transfer' });
      }
    }
    const verify = { ok: failures.length === 0, checked: checkList.length, failures };
    if (!verify.ok) {
      await this.remote('removing the failed release', `rm -rf -- "$1"`, [to]).catch(() => {});
      return { sentFiles, sentBytes, verify, reused: false };
    }
    await this.remote('committing the release', COMMIT_SCRIPT, [this.spec.path, id], plan.record);
    return { sentFiles, sentBytes, verify, reused: false };
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
