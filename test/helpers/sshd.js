// @ts-check
import { freePort } from './ports.js';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * A real sshd on 127.0.0.1 for deploy tests: a throwaway host key and user
 * key, authorized_keys and known_hosts in the test's directory, running as
 * the current user. Known-hosts checking stays on for the client.
 */

const run = promisify(execFile);
export const SSHD = ['/usr/sbin/sshd', '/usr/bin/sshd'].find((file) => existsSync(file)) ?? null;
export const RSYNC = ['/usr/bin/rsync', '/usr/local/bin/rsync'].find((file) => existsSync(file)) ?? null;


/**
 * @param {string} dir a directory of the test's own
 */
export async function startSshd(dir) {
  if (!SSHD) throw new Error('sshd is not installed (apt-get install openssh-server)');
  await mkdir(dir, { recursive: true });
  const hostKey = path.join(dir, 'host_key');
  const userKey = path.join(dir, 'user_key');
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', userKey]);
  await writeFile(path.join(dir, 'authorized_keys'), await readFile(userKey + '.pub'));
  if (process.getuid?.() === 0) await mkdir('/run/sshd', { recursive: true }).catch(() => {});
  const port = await freePort();
  const config = path.join(dir, 'sshd_config');
  // SHLVL=1: bash, run by sshd at the top level, would read the user's ~/.bashrc for every command
  // (a version manager's init there forks dozens of processes); a deploy's commands need none of it.
  await writeFile(config, [
    `Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${hostKey}`, `PidFile ${path.join(dir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`, 'StrictModes no', 'PermitRootLogin prohibit-password',
    'PasswordAuthentication no', 'KbdInteractiveAuthentication no', 'UsePAM no', 'PubkeyAuthentication yes',
    'MaxSessions 64', 'MaxStartups 64', 'LogLevel INFO', 'SetEnv SHLVL=1', '',
  ].join('\n'));
  const knownHosts = path.join(dir, 'known_hosts');
  const hostPub = (await readFile(hostKey + '.pub', 'utf8')).split(' ').slice(0, 2).join(' ');
  await writeFile(knownHosts, `[127.0.0.1]:${port} ${hostPub}\n`);
  const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  // Ready when sshd says it listens (bounded: it says so or exits within 10 s).
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sshd did not start within 10 s: ${log}`)), 10_000);
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      log = (log + chunk).slice(-8000);
      if (/Server listening on 127\.0\.0\.1 port/.test(log)) {
        clearTimeout(timer);
        resolve(undefined);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`sshd exited (${code}): ${log}`));
    });
  });
  const user = os.userInfo().username;
  return {
    port, user, userKey, knownHosts, pid: /** @type {number} */ (child.pid),
    /** ssh -o options the client needs: our known_hosts, checking on. */
    sshOption: [`UserKnownHostsFile=${knownHosts}`, 'GlobalKnownHostsFile=/dev/null', 'StrictHostKeyChecking=yes'],
    /** @param {string} remoteDir */
    url: (remoteDir) => `ssh://${user}@127.0.0.1:${port}${remoteDir}`,
    log: () => log,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await gone;
    },
  };
}
