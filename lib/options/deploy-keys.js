// @ts-check
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, UsageError } from '../errors.js';

/**
 * @typedef {{ kind: 'local', dir: string } | { kind: 'ssh', user?: string, host: string, port?: number, path: string }} TargetSpec
 * @typedef {{ url: string, sshKey?: string, sshOption?: string[] }} TargetConfig
 */

/** The config file's keys for publish, deploy, rollback and releases only. */
export const DEPLOY_KEYS = ['targets', 'keep', 'switch', 'sshKey', 'sshOption'];

/** @param {string} key one of DEPLOY_KEYS @param {unknown} value @param {string} source file name, for messages */
export function checkDeployKey(key, value, source) {
  const fail = (/** @type {string} */ what) => new ConfigError(`${source}: "${key}" must be ${what}, got ${JSON.stringify(value)}`);
  switch (key) {
    case 'targets':
      return checkTargetsConfig(value, source);
    case 'keep':
      if (!Number.isInteger(value) || /** @type {number} */ (value) < 1) throw fail('a whole number of at least 1');
      return value;
    case 'switch':
      if (value !== 'all' && value !== 'each') throw fail('"all" or "each"');
      return value;
    case 'sshKey':
      if (typeof value !== 'string' || value === '') throw fail('a path');
      return value;
    case 'sshOption':
      if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && /^\w+[= ]/.test(item))) throw fail('a list of "Key=value" strings');
      return value;
    default:
      throw new ConfigError(`${source}: unknown key "${key}"`);
  }
}

/** `ssh://user@host[:port]/path`, scp-style `user@host:path` (home-relative), `file:///path`, or a path. @param {string} text @param {string} [cwd] for plain paths @returns {TargetSpec} */
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
      // file://host/path or %2F in the path: a usage error, not a crash.
      throw new UsageError(`not a usable file:// target (file:///absolute/path): ${JSON.stringify(text)}: ${/** @type {Error} */ (error).message}`);
    }
  }
  const scp = /^(?:([^@/:\s]+)@)?(\[[^\]]+\]|[A-Za-z0-9.-]+):(.+)$/.exec(text);
  if (scp && !/^[A-Za-z]:[\\/]/.test(text) && !text.startsWith('.') && !text.startsWith('/')) {
    return checkSsh({ kind: 'ssh', user: scp[1], host: scp[2].replace(/^\[|\]$/g, ''), path: scp[3] });
  }
  return { kind: 'local', dir: path.resolve(cwd, text) };
}

/** Security: nothing in a host or user may be read by ssh as an option. @param {TargetSpec & { kind: 'ssh' }} spec */
function checkSsh(spec) {
  if (spec.host.startsWith('-') || (spec.user ?? '').startsWith('-') || !/^[A-Za-z0-9.:_-]+$/.test(spec.host)) throw new UsageError(`not a usable ssh host: ${JSON.stringify(spec.host)}`);
  if (spec.user !== undefined && !/^[A-Za-z0-9._-]+$/.test(spec.user)) throw new UsageError(`not a usable ssh user: ${JSON.stringify(spec.user)}`);
  if (spec.path.includes('\0') || spec.path.includes('\n')) throw new UsageError('a target path may not hold NUL or newline');
  return spec;
}

/** ssh://user@host:port/path, or the directory. @param {TargetSpec} spec */
export function targetLabel(spec) {
  if (spec.kind === 'local') return spec.dir;
  return `ssh://${spec.user ? spec.user + '@' : ''}${spec.host.includes(':') ? `[${spec.host}]` : spec.host}${spec.port ? ':' + spec.port : ''}${spec.path.startsWith('/') ? '' : '/~/'}${spec.path}`;
}

/** Names to a target string or { url, sshKey?, sshOption? }. @param {unknown} value @param {string} source @returns {Record<string, TargetConfig>} */
export function checkTargetsConfig(value, source) {
  const fail = (/** @type {string} */ message) => new ConfigError(`${source}: ${message}`);
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw fail('"targets" must be an object of names to targets, like { "production": "ssh://deploy@web1/var/www/site" }');
  /** @type {Record<string, TargetConfig>} */ const targets = {};
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
