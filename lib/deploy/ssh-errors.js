// @ts-check
import { DeployError } from '../errors.js';

/**
 * An ssh failure in one line (connection lost, disk full, no connection, a remote step failed); the raw output goes to `detail`,
 * shown with --verbose. Messages do not name the target: the caller puts its label in front, once.
 * @typedef {{ what: string, code: number | null, signal?: string | null, error?: Error, stderr: string, masterStderr?: string,
 *   connected: boolean, failCode?: string }} SshFailure
 *   what: the step, for "while …"; code: 255 is ssh's own failure, else the remote command's; failCode: DEPLOY_REMOTE by default
 */

const DETAIL_LINES = 5;

/** The last few distinct lines. @param {string[]} texts */
export function detailOf(...texts) {
  const lines = texts.join('\n').split('\n').map((line) => line.trim()).filter(Boolean);
  const unique = [...new Set(lines)];
  const kept = unique.slice(-DETAIL_LINES).map((line) => (line.length > 200 ? `${line.slice(0, 200)}…` : line));
  if (unique.length > DETAIL_LINES) kept.unshift(`… ${unique.length - DETAIL_LINES} earlier line(s)`);
  return kept.join('\n');
}

const DISK_FULL = /No space left on device|Disk quota exceeded/i;

/** @param {SshFailure} failure @returns {DeployError} */
export function sshFailure(failure) {
  const { what, code, signal, error, stderr, masterStderr = '', connected } = failure;
  const detail = detailOf(masterStderr, stderr) || undefined;
  if (error) return new DeployError(`cannot run ssh: ${error.message}`, { code: 'DEPLOY_SSH', cause: error, detail });
  if (DISK_FULL.test(stderr)) return new DeployError(`the target's disk is full while ${what}: free space on it, then run again`, { code: 'DEPLOY_DISK_FULL', detail });
  if (code === 255 || signal) {
    if (connected) return new DeployError(`the connection was lost while ${what}`, { code: 'DEPLOY_CONNECTION_LOST', detail });
    const said = stderr.split('\n').map((line) => line.trim()).filter(Boolean).pop();
    return new DeployError(`cannot connect with ssh: ${said ?? `ssh ended (${signal ?? `exit ${code}`}) without a word`}`, { code: 'DEPLOY_SSH', detail });
  }
  const first = stderr.split('\n').map((line) => line.trim()).find(Boolean);
  return new DeployError(`${what} failed on the target (exit ${code})${first ? `: ${first}` : ''}`, { code: failure.failCode ?? 'DEPLOY_REMOTE', detail });
}
