// @ts-check
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AbortError, DeployError, LockedError } from '../errors.js';
import { isAlive } from '../output/lock.js';
import { CURRENT, LOCK_NAME, RELEASES, TMP_PREFIX, TRASH_PREFIX, idFromLink, parseHeader, parseRecord } from './release.js';
import { targetLabel } from './targets.js';
import { remoteTreeProblem, TREE_CHECK } from './sound.js';
import { checkHashes, parseHashes, removalList } from './verify.js';

/** @typedef {import('./source.js').FileInfo} FileInfo */

/**
 * A remote web root over the system `ssh`: the same release layout and
 * atomic switch as a local target. One ssh connection per target and run (a
 * control master of our own in a temp directory), every remote step a short
 * POSIX sh script whose arguments are passed quoted, never spliced into its
 * text. Processes are spawned with argument lists: no local shell. Three
 * remote commands per target and run; the work on the server grows with the
 * changed files, but for one `cp -al`:
 *
 *   lock and state: mkdir DIR/.prerender-lock (atomic), our pid/host/time
 *             inside; then the releases, the current one's record, and
 *             whether its tree is exactly that record (sound.js)
 *   stage:    cp -al releases/PREVIOUS releases/.tmp-ID (one command: hard
 *             links, no data; only from a sound release, and the copy
 *             searched for links); rm the changed and vanished paths; tar -x of
 *             the new and changed files (one tar stream read once from OUT,
 *             shared by every target of the run: fanout.js); sha256sum -c of
 *             the files received against the manifest's sha256; if they all
 *             match, the record, and releases/.tmp-ID -> releases/ID. Its
 *             stdin: the removal list, the check list and the record (their
 *             lengths in its arguments, read with head -c), then the tar stream
 *   switch:   ln -sfn releases/ID .current.tmp.ID && mv -T .current.tmp.ID
 *             current; the releases beyond --keep removed; the lock removed
 *
 * The server needs sh, GNU coreutils (cp -al, sha256sum, xargs -0) and tar;
 * it hashes with openssl where it has one (CHECK_SUMS).
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

const STATE_BODY = `
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
if [ "$2" = files ] && [ -n "$id" ] && [ -f "${RELEASES}/$id.json" ]; then
  cd ${RELEASES} || exit 1
  ${TREE_CHECK}
  echo RECORD; cat -- "$id.json"
fi`;

/** $1 dir, $2 "files" for the current record too */
const STATE_SCRIPT = STATE_BODY;

/**
 * $1 dir, $2 "files", $3 our owner text, $4 the owner text of a stale lock to
 * take over (or ""); then the state, as STATE_SCRIPT.
 */
const LOCK_STATE_SCRIPT = `
mkdir -p -- "$1" && cd -- "$1" || exit 1
if [ -n "$4" ] && [ "$(cat ${LOCK_NAME}/owner 2>/dev/null)" = "$4" ]; then
  # A stale lock: move it aside (only one taker can), then check it was that one.
  if mv -- ${LOCK_NAME} "${LOCK_NAME}.stale.$$" 2>/dev/null; then
    if [ "$(cat "${LOCK_NAME}.stale.$$/owner" 2>/dev/null)" = "$4" ]; then rm -rf -- "${LOCK_NAME}.stale.$$"
    else mv -- "${LOCK_NAME}.stale.$$" ${LOCK_NAME} 2>/dev/null || rm -rf -- "${LOCK_NAME}.stale.$$"; fi
  fi
fi
if mkdir -- ${LOCK_NAME} 2>/dev/null; then printf '%s\\n' "$3" > ${LOCK_NAME}/owner; echo TAKEN
else echo HELD; cat -- ${LOCK_NAME}/owner 2>/dev/null; echo; echo END; exit 0; fi
${STATE_BODY}`;

const UNLOCK_SCRIPT = `
cd -- "$1" || exit 0
if [ "$(cat ${LOCK_NAME}/owner 2>/dev/null)" = "$2" ]; then rm -rf -- ${LOCK_NAME}; fi`;

/**
 * Shell functions of the stage script for hashing on the server.
 * - fast_sha256: whether the server's \`openssl dgst -sha256 -r\` answers in
 *   coreutils' format (OpenSSL 1.1 and 3 do). It uses the CPU's SHA
 *   extensions: 5-6 times less CPU than the sha256sum of Debian 12's
 *   coreutils, which is built without them.
 * - check_sums LIST FAILED: the files of a \`sha256sum -c\` check list (LIST)
 *   hashed and compared; what fails is written to FAILED as \`sha256sum -c
 *   --quiet\` says it ("NAME: FAILED", "NAME: FAILED open or read"), and the
 *   status is 0 only when every file matched. Through openssl where
 *   fast_sha256 and no name in the list is escaped (a backslash or a
 *   newline in it); else \`sha256sum -c\`.
 * - all_sums: every file under . hashed, in sha256sum's output format (or
 *   openssl's "HASH *NAME", which parseHashes reads too); names with a
 *   backslash or a newline always by sha256sum, which escapes them. Then
 *   every entry that is neither a file nor a directory, NUL-terminated:
 *   links after a LINKS line, the others after an OTHERS line (parseOdd).
 */
export const CHECK_SUMS = `
fast_sha256() {
  [ "$(openssl dgst -sha256 -r /dev/null 2>/dev/null)" = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 */dev/null" ] && command -v awk >/dev/null 2>&1
}
check_sums() {
  if fast_sha256 && ! grep -q '^\\\\' "$1"; then
    cut -c67- < "$1" | sed 's|^|./|' | tr '\\n' '\\000' | xargs -0 -r openssl dgst -sha256 -r > "$2.sums" 2>/dev/null || true
    awk 'NR == FNR { want[substr($0, 67)] = substr($0, 1, 64); next }
      substr($0, 65, 4) == " *./" { got[substr($0, 69)] = substr($0, 1, 64) }
      END { bad = 0; for (f in want) { if (!(f in got)) { print f ": FAILED open or read"; bad = 1 } else if (got[f] != want[f]) { print f ": FAILED"; bad = 1 } } exit bad }' "$1" "$2.sums" > "$2"
    s=$?; rm -f -- "$2.sums"; return $s
  fi
  sha256sum -c --quiet --strict < "$1" > "$2" 2>/dev/null
}
all_sums() {
  nl='
'
  if fast_sha256; then
    find . -type f ! -path '*\\\\*' ! -path "*$nl*" -print0 | xargs -0 -r openssl dgst -sha256 -r 2>/dev/null || true
    find . -type f \\( -path '*\\\\*' -o -path "*$nl*" \\) -print0 | xargs -0 -r sha256sum -- || true
  else
    find . -type f -print0 | xargs -0 -r sha256sum -- || true
  fi
  printf '\nLINKS\n'; find . -type l -print0
  printf '\nOTHERS\n'; find . ! -type f ! -type d ! -type l -print0
}`;

/**
 * $1 dir, $2 id, $3 previous id (or ""), $4 $5 $6 bytes of the removal list,
 * the check list and the record at the start of stdin, $7 "all" (hash every
 * file, print the sums, do not commit) or "sent", $8 files in the tar stream.
 */
/** The names of release trees (ids: 20261124T131500Z-3f2a9c01), as a sh glob. */
const RELEASE_GLOB = '[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]';

const STAGE_SCRIPT = `
set -e
${CHECK_SUMS}
mkdir -p -- "$1/${RELEASES}"
cd -- "$1/${RELEASES}"
# A killed run's release: its remote side may still be writing into it for a
# moment, so it is moved aside before it is removed, and one that cannot be
# removed yet is left for the next run.
for d in ./${TMP_PREFIX}*; do
  [ -e "$d" ] || continue
  mv -- "$d" "./${TRASH_PREFIX}$$-\${d#./}" 2>/dev/null || true
done
rm -rf ./${TRASH_PREFIX}* 2>/dev/null || true
for f in *.json; do
  [ -f "$f" ] || continue
  [ -d "\${f%.json}" ] || rm -f -- "$f"
done
# A tree without its record: a prune killed between the two (the record goes
# first). No longer a release; removed, but never the one current points to.
cur=$(readlink ../${CURRENT} 2>/dev/null) || cur=
cur=\${cur%/}
cur=\${cur##*/}
for d in ${RELEASE_GLOB}; do
  if [ -d "$d" ] && [ ! -f "$d.json" ] && [ "$d" != "$cur" ]; then rm -rf -- "$d"; fi
done
if [ -d "$2" ] && [ -f "$2.json" ]; then echo EXISTS; exit 0; fi
rm -rf -- "$2"
t="${TMP_PREFIX}$2"
if [ -n "$3" ] && [ -d "$3" ] && [ ! -L "$3" ]; then
  cp -al -- "$3" "$t"
  # Checked sound with the lock; a link planted since would be copied as one.
  if [ -n "$(find "$t" ! -type f ! -type d -print | head -n 1)" ]; then rm -rf -- "$t"; echo UNSOUND; exit 0; fi
else mkdir -- "$t"; fi
head -c "$4" > "$t.remove"
head -c "$5" > "$t.check"
head -c "$6" > "$t.json"
cd -- "$t"
xargs -0 -r rm -rf -- < "../$t.remove"
if [ "$8" != 0 ]; then tar -x -f - --no-same-owner; fi
echo RECEIVED
if [ "$7" = all ]; then echo SUMS; all_sums; exit 0; fi
if [ "$5" = 0 ] || check_sums "../$t.check" "../$t.failed"; then
  cd ..
  rm -f -- "$t.remove" "$t.check" "$t.failed"
  mv -f -- "$t.json" "$2.json"
  mv -T -- "$t" "$2"
  echo COMMITTED
else
  echo FAILED
  cat -- "../$t.failed"
  cd ..
  rm -rf -- "$t" "$t.remove" "$t.check" "$t.failed" "$t.json"
fi`;

/** $1 dir, $2 id: the release staged with "all" and found sound */
const COMMIT_SCRIPT = `
set -e
cd -- "$1/${RELEASES}"
rm -f -- "${TMP_PREFIX}$2.remove" "${TMP_PREFIX}$2.check"
mv -f -- "${TMP_PREFIX}$2.json" "$2.json"
mv -T -- "${TMP_PREFIX}$2" "$2"`;

/** $1 dir, $2 id, $3 our lock's owner text (removed at the end) or "", $4… releases to remove */
const SWITCH_SCRIPT = `
set -e
cd -- "$1"
if [ ! -d "${RELEASES}/$2" ] || [ ! -f "${RELEASES}/$2.json" ]; then echo "no complete release $2 in $1/${RELEASES}" >&2; exit 3; fi
if [ -e ${CURRENT} ] && [ ! -L ${CURRENT} ]; then echo "$1/${CURRENT} is not a symbolic link: move it away" >&2; exit 4; fi
ln -sfn -- "${RELEASES}/$2" ".${CURRENT}.tmp.$2"
mv -T -- ".${CURRENT}.tmp.$2" ${CURRENT}
new=$2
owner=$3
shift 3
for id in "$@"; do
  [ "$id" = "$new" ] && continue
  rm -f -- "${RELEASES}/$id.json"
  rm -rf -- "${RELEASES}/$id"
done
if [ -n "$owner" ] && [ "$(cat ${LOCK_NAME}/owner 2>/dev/null)" = "$owner" ]; then rm -rf -- ${LOCK_NAME}; fi`;

/**
 * A line of a `sha256sum -c` check list; a name with a backslash or a
 * newline is escaped, its line starting with "\".
 * @param {string} file
 * @param {string} sha256
 */
export function checkLine(file, sha256) {
  if (!/[\\\n]/.test(file)) return `${sha256}  ${file}\n`;
  return `\\${sha256}  ${file.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n`;
}

/**
 * The failures `sha256sum -c --quiet` printed: "NAME: FAILED" or
 * "NAME: FAILED open or read" (escaped names start with "\").
 * @param {string} text
 * @returns {{ file: string, reason: string }[]}
 */
export function parseCheckFailures(text) {
  /** @type {{ file: string, reason: string }[]} */
  const failures = [];
  for (const line of text.split('\n')) {
    const match = /^(\\?)(.*): FAILED( open or read)?$/.exec(line);
    if (!match) continue;
    const file = match[1] ? match[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c)) : match[2];
    failures.push({ file, reason: match[3] ? 'missing on the target after transfer' : 'sha256 differs on the target after transfer' });
  }
  return failures.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/**
 * NUL-terminated "./NAME" entries at the start of `text`, up to the first
 * that does not start with "./" (find's names all do).
 * @param {string} text
 * @returns {{ names: string[], end: number }}
 */
function nulEntries(text) {
  /** @type {string[]} */
  const names = [];
  let at = 0;
  while (text.startsWith('./', at)) {
    const end = text.indexOf('\0', at);
    if (end === -1) break;
    names.push(text.slice(at + 2, end));
    at = end + 1;
  }
  return { names, end: at };
}

/**
 * What all_sums printed, against the release's files: the hashes, then the
 * links and other entries that are neither files nor directories.
 * @param {string} text all_sums's output
 * @param {Map<string, FileInfo>} files
 */
export function checkAll(text, files) {
  const cut = text.indexOf('\nLINKS\n');
  if (cut === -1) return [{ file: '(release)', reason: `the check did not finish: ${text.slice(-500)}` }];
  const links = nulEntries(text.slice(cut + 7));
  const rest = text.slice(cut + 7 + links.end);
  const others = rest.startsWith('\nOTHERS\n') ? nulEntries(rest.slice(8)).names : [];
  return checkHashes([...files.keys()], files, parseHashes(text.slice(0, cut), true), true, { links: links.names, others });
}

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
    /** @type {string | undefined} the state read with the lock */
    this.stateAnswer = undefined;
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
   * Spawn a process (no shell): its output collected (the last 16 kB of
   * stderr), killed on abort, forgotten once it has ended.
   * @param {string} command
   * @param {string[]} args
   */
  #start(command, args) {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.children.add(child);
    const abort = () => child.kill('SIGTERM');
    this.options.signal?.addEventListener('abort', abort, { once: true });
    const out = { stdout: '', stderr: '' };
    child.stdout.setEncoding('utf8').on('data', (chunk) => { out.stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk) => { out.stderr = (out.stderr + chunk).slice(-16_000); });
    child.stdin.on('error', () => {}); // a process that exits early: its exit code and output tell
    /** @type {Promise<{ code: number | null, error?: Error, stdout: string, stderr: string }>} */
    const exited = new Promise((resolve) => {
      const end = (/** @type {number | null} */ code, /** @type {Error | undefined} */ error) => {
        this.children.delete(child);
        this.options.signal?.removeEventListener('abort', abort);
        resolve({ code, error, ...out });
      };
      child.once('error', (error) => end(null, error));
      child.once('close', (code) => end(code, undefined));
    });
    return { child, exited };
  }

  /**
   * Spawn a process (no shell), collect its output.
   * @param {string[]} args ssh arguments
   * @param {{ input?: string, command?: string, quiet?: boolean }} [options]
   * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
   */
  async spawnCollect(args, options = {}) {
    if (this.options.signal?.aborted) throw new AbortError('interrupted');
    const { child, exited } = this.#start(options.command ?? this.options.ssh ?? 'ssh', args);
    child.stdin.end(options.input ?? '');
    const { code, error, stdout, stderr } = await exited;
    if (error) throw new DeployError(`${this.label}: cannot run ${options.command ?? 'ssh'}: ${error.message}`, { code: 'DEPLOY_SSH', cause: error });
    if (this.options.signal?.aborted) throw new AbortError('interrupted');
    return { code, stdout, stderr };
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
   * this host that is gone (killed) is taken over; any other is refused. The
   * same command reads the target's state for the next state(true).
   */
  async lock() {
    const text = JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString() });
    let stale = '';
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await this.remote('taking the lock', LOCK_STATE_SCRIPT, [this.spec.path, 'files', text, stale]);
      if (answer.startsWith('TAKEN\n')) {
        this.lockText = text;
        this.stateAnswer = answer.slice(6);
        return;
      }
      const held = /^HELD\n([\s\S]*?)\nEND$/m.exec(answer)?.[1].trim() ?? '';
      /** @type {import('../output/lock.js').LockOwner | null} */
      let owner = null;
      try {
        const parsed = JSON.parse(held);
        if (Number.isSafeInteger(parsed?.pid) && typeof parsed.host === 'string') owner = parsed;
      } catch {
        owner = null;
      }
      if (owner && !isAlive(owner)) {
        stale = held; // its process, on this host, is gone: take it over
        continue;
      }
      const lockDir = `${this.spec.path}/${LOCK_NAME}`;
      const who = owner ? `pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}` : 'a process that is starting';
      throw new LockedError(`another prerender publish, deploy or rollback (${who}) holds ${this.label}; wait for it to end. If it is gone (killed on another machine), remove the lock: ssh ${this.spec.port ? `-p ${this.spec.port} ` : ''}${this.destination} rm -r ${shQuote(lockDir)}`);
    }
    throw new LockedError(`${this.label}: could not take the lock ${this.spec.path}/${LOCK_NAME}: it keeps changing hands`);
  }

  /** Remove our lock (only if it still is ours); the switch removes it too. */
  async unlock() {
    if (!this.lockText) return;
    const text = this.lockText;
    this.lockText = undefined;
    await this.remote('removing the lock', UNLOCK_SCRIPT, [this.spec.path, text]);
  }

  /**
   * Run a remote sh script whose stdin is `head` then the shared stream of
   * the files to send. Always attaches to the stream or leaves it.
   * @param {string} what for messages
   * @param {string} script
   * @param {string[]} args
   * @param {Buffer} head
   * @param {import('./fanout.js').Fanout} fanout
   */
  async streamTo(what, script, args, head, fanout) {
    try {
      await this.connect();
      if (this.options.signal?.aborted) throw new AbortError('interrupted');
    } catch (error) {
      fanout.leave(); // the others must not wait for this one
      throw error;
    }
    const command = ['sh', '-c', script, 'prerender', ...args].map(shQuote).join(' ');
    const { child, exited } = this.#start(this.options.ssh ?? 'ssh', [...this.clientArgs(), '--', this.destination, command]);
    // A command that ends early (the release exists): its output says.
    child.stdin.write(head);
    const sent = fanout.attach(child.stdin).then(() => null, (/** @type {Error} */ error) => error);
    const [{ code, error, stdout, stderr }, readError] = await Promise.all([exited, sent]);
    if (this.options.signal?.aborted) throw new AbortError('interrupted');
    if (/^(EXISTS|UNSOUND)$/m.test(stdout) && code === 0) return stdout;
    if (readError) throw readError;
    if (error || code !== 0) throw new DeployError(`${this.label}: ${what} failed (${error ? error.message : `exit ${code}`}): ${stderr.trim() || 'no message'}`, { code: 'DEPLOY_TRANSFER', cause: error });
    return stdout;
  }

  /**
   * @param {boolean} [withFiles] also the current release's file list, in the same round trip
   * @returns {Promise<import('./targets.js').TargetState>}
   */
  async state(withFiles = false) {
    let answer = this.stateAnswer;
    this.stateAnswer = undefined; // read with the lock: no other run changed it since
    if (answer === undefined || !withFiles) answer = await this.remote('reading the releases', STATE_SCRIPT, [this.spec.path, withFiles ? 'files' : '']);
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
    const unsound = currentFiles && current ? remoteTreeProblem(out, currentFiles) : null;
    return { current, releases, currentFiles, unsound: unsound && `${RELEASES}/${current}: ${unsound}` };
  }

  /**
   * Build releases/ID on the server in one command: links of the previous
   * release, the changed files received from the shared stream, the check of
   * what came against the manifest's sha256, then its record. `current` is
   * not touched.
   * @param {StagePlan} plan
   * @returns {Promise<StageResult>}
   */
  async stage(plan) {
    const { id, source, diff, previous, fanout } = plan;
    let attached = false;
    try {
      if (!fanout) throw new DeployError(`${this.label}: no stream of files to receive`);
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
      if (/^UNSOUND$/m.test(answer)) throw new DeployError(`${this.label}: ${RELEASES}/${previous?.id} gained a symbolic link or special file during the deploy: nothing was built on it; run again (the next run builds from OUT)`, { code: 'DEPLOY_UNSAFE_TARGET' });
      const sentBytes = send.reduce((sum, file) => sum + (source.files.get(file)?.bytes ?? 0), 0);
      // Unchanged files are links to inodes of the previous release, checked
      // when they were received; --verify all hashes them again (and finds
      // files the release should not have).
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

  /**
   * @param {string} id
   * @param {string[]} [prune] releases to remove once switched (never the new current)
   */
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
      const timer = setTimeout(() => master.kill('SIGTERM'), 5000);
      await gone;
      clearTimeout(timer);
    }
    if (this.controlDir) await rm(this.controlDir, { recursive: true, force: true });
  }
}
