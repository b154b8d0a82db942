// @ts-check
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, UsageError } from '../errors.js';

/**
 * Deploy targets: what a target string means, and the interface every
 * target kind (local.js, ssh.js) implements.
 *
 * @typedef {import('./source.js').SourceTree} SourceTree
 * @typedef {import('./source.js').FileInfo} FileInfo
 * @typedef {import('./release.js').ReleaseInfo} ReleaseInfo
 * @typedef {{ ok: boolean, checked: number, failures: { file: string, reason: string }[] }} VerifyResult
 * @typedef {{
 *   id: string, source: SourceTree, diff: import('./diff.js').Diff, record: string, header: import('./release.js').ReleaseHeader,
 *   previous: { id: string, files: Map<string, FileInfo> } | null, signal?: AbortSignal,
 *   fanout?: import('./fanout.js').Fanout,
 * }} StagePlan
 *   fanout: the shared stream of the files to send (diff.send), for targets that receive one (ssh)
 * @typedef {{ sentFiles: number, sentBytes: number, verify: VerifyResult, reused: boolean }} StageResult
 *   sentFiles/sentBytes: file data that actually travelled (copied, not linked)
 * @typedef {{
 *   label: string, kind: 'local' | 'ssh',
 *   connect?(): Promise<void>, lock(options?: { create?: boolean }): Promise<void>, unlock(): Promise<void>,
 *   state(withFiles?: boolean): Promise<TargetState>,
 *   stage(plan: StagePlan): Promise<StageResult>,
 *   switchTo(id: string, prune?: string[]): Promise<void>,
 *   close(): Promise<void>,
 * }} DeployTarget
 *   lock: one publish, deploy or rollback at a time per target (LockedError
 *   when another holds it; create false: a target that does not exist is not made); state: the releases, and (withFiles) the current release's file list;
 *   switchTo: atomic switch of current, then removal of the `prune` releases
 * @typedef {{ current: string | null, releases: ReleaseInfo[], currentFiles: Map<string, FileInfo> | null, unsound?: string | null }} TargetState
 *   unsound (with currentFiles): why the current release may not be linked
 *   from (it holds a link, a special file, or not its record's files: sound.js)
 * @typedef {{ kind: 'local', dir: string } | { kind: 'ssh', user?: string, host: string, port?: number, path: string }} TargetSpec
 * @typedef {{ url: string, sshKey?: string, sshOption?: string[] }} TargetConfig
 */

/**
 * Parse a target: `ssh://user@host[:port]/path`, `user@host:path` (scp
 * style; a relative path is in the user's home), `file:///path`, or a path.
 * @param {string} text
 * @param {string} [cwd] plain paths are relative to it
 * @returns {TargetSpec}
 */
export function parseTarget(text, cwd = process.cwd()) {
  if (text.startsWith('ssh://')) {
    let url;
    try {
      url = new URL(text);
    } catch {
      throw new UsageError(`not a valid ssh:// target: ${JSON.stringify(text)}`);
    }
    const remotePath = decodeURIComponent(url.pathname);
    if (!url.hostname || remotePath === '' || remotePath === '/') throw new UsageError(`an ssh:// target needs a host and a directory, like ssh://deploy@web1/var/www/site; got ${JSON.stringify(text)}`);
    if (url.password) throw new UsageError('no password in an ssh:// target: use a key (--ssh-key)');
    return checkSsh({ kind: 'ssh', user: url.username ? decodeURIComponent(url.username) : undefined, host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : undefined, path: remotePath });
  }
  if (text.startsWith('file://')) {
    try {
      return { kind: 'local', dir: fileURLToPath(text) };
    } catch (error) {
      // file://host/path, %2F in the path...: a usage error, not a crash.
      throw new UsageError(`not a usable file:// target (file:///absolute/path): ${JSON.stringify(text)}: ${/** @type {Error} */ (error).message}`);
    }
  }
  const scp = /^(?:([^@/:\s]+)@)?(\[[^\]]+\]|[A-Za-z0-9.-]+):(.+)$/.exec(text);
  if (scp && !/^[A-Za-z]:[\\/]/.test(text) && !text.startsWith('.') && !text.startsWith('/')) {
    return checkSsh({ kind: 'ssh', user: scp[1], host: scp[2].replace(/^\[|\]$/g, ''), path: scp[3] });
  }
  return { kind: 'local', dir: path.resolve(cwd, text) };
}

/**
 * Nothing in a host or user may be read by ssh as an option.
 * @param {TargetSpec & { kind: 'ssh' }} spec
 */
function checkSsh(spec) {
  if (spec.host.startsWith('-') || (spec.user ?? '').startsWith('-') || !/^[A-Za-z0-9.:_-]+$/.test(spec.host)) throw new UsageError(`not a usable ssh host: ${JSON.stringify(spec.host)}`);
  if (spec.user !== undefined && !/^[A-Za-z0-9._-]+$/.test(spec.user)) throw new UsageError(`not a usable ssh user: ${JSON.stringify(spec.user)}`);
  if (spec.path.includes('\0') || spec.path.includes('\n')) throw new UsageError('a target path may not hold NUL or newline');
  return spec;
}

/**
 * How a target prints: ssh://user@host:port/path or the directory.
 * @param {TargetSpec} spec
 */
export function targetLabel(spec) {
  if (spec.kind === 'local') return spec.dir;
  return `ssh://${spec.user ? spec.user + '@' : ''}${spec.host.includes(':') ? `[${spec.host}]` : spec.host}${spec.port ? ':' + spec.port : ''}${spec.path.startsWith('/') ? '' : '/~/'}${spec.path}`;
}

/**
 * Check the "targets" key of a config file: names -> a target string, or
 * { url, sshKey?, sshOption? }.
 * @param {unknown} value
 * @param {string} source
 * @returns {Record<string, TargetConfig>}
 */
export function checkTargetsConfig(value, source) {
  const fail = (/** @type {string} */ message) => new ConfigError(`${source}: ${message}`);
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw fail('"targets" must be an object of names to targets, like { "production": "ssh://deploy@web1/var/www/site" }');
  /** @type {Record<string, TargetConfig>} */
  const targets = {};
  for (const [name, entry] of Object.entries(value)) {
    if (!/^[A-Za-z][\w-]*$/.test(name)) throw fail(`target name ${JSON.stringify(name)}: use letters, digits, "-" and "_", starting with a letter`);
    const config = typeof entry === 'string' ? { url: entry } : entry;
    if (!config || typeof config !== 'object' || typeof config.url !== 'string' || config.url === '') throw fail(`target "${name}" must be a target string or { "url": "...", "sshKey"?: "...", "sshOption"?: [...] }`);
    const unknown = Object.keys(config).find((key) => !['url', 'sshKey', 'sshOption'].includes(key));
    if (unknown) throw fail(`target "${name}": unknown key "${unknown}" (known: url, sshKey, sshOption)`);
    if (config.sshKey !== undefined && typeof config.sshKey !== 'string') throw fail(`target "${name}": "sshKey" must be a path`);
    if (config.sshOption !== undefined && (!Array.isArray(config.sshOption) || !config.sshOption.every((/** @type {unknown} */ item) => typeof item === 'string'))) throw fail(`target "${name}": "sshOption" must be a list of "Key=value" strings`);
    try {
      parseTarget(config.url);
    } catch (error) {
      throw fail(`target "${name}": ${/** @type {Error} */ (error).message}`);
    }
    targets[name] = config;
  }
  return targets;
}

