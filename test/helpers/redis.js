// @ts-check
/**
 * A real redis-server for the tests: on a free port of 127.0.0.1, nothing
 * saved (--save "" --appendonly no), ready when it answers PING (a bounded
 * poll). Outside CI the tests that need it are skipped when redis-server is
 * missing; in CI (CI=true) they must run, so a missing binary fails.
 */
import { freePort } from './ports.js';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import path from 'node:path';

export const IN_CI = process.env.CI === 'true';

function findRedis() {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/bin', '/usr/sbin', '/usr/local/bin']) {
    const file = path.join(dir, 'redis-server');
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here: try the next directory
    }
  }
  return null;
}
export const REDIS_SERVER = findRedis();
/** Whether the Redis tests run: always in CI (and fail there without the binary). */
export const HAVE_REDIS = REDIS_SERVER !== null || IN_CI;

export { freePort } from './ports.js';

/**
 * @param {number} port
 * @returns {Promise<boolean>}
 */
function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(500, () => { socket.destroy(); resolve(false); });
    socket.on('error', () => resolve(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      reply += data.toString();
      if (reply.includes('\r\n')) {
        socket.destroy();
        resolve(reply.startsWith('+PONG'));
      }
    });
  });
}

/**
 * PING over TLS, trusting `ca`.
 * @param {number} port
 * @param {Buffer} ca
 * @returns {Promise<boolean>}
 */
function tlsPing(port, ca) {
  return new Promise((resolve) => {
    const socket = tls.connect({ port, host: '127.0.0.1', ca, servername: 'localhost' });
    let reply = '';
    socket.setTimeout(500, () => { socket.destroy(); resolve(false); });
    socket.on('error', () => resolve(false));
    socket.on('secureConnect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      reply += data.toString();
      if (reply.includes('\r\n')) {
        socket.destroy();
        resolve(reply.startsWith('+PONG'));
      }
    });
  });
}

/**
 * Start redis-server; `stop()` kills it, `restart()` kills it and starts a
 * new, empty one on the same port. With `tls` it listens with TLS only
 * (`rediss://`), with that certificate and key, clients not asked for one.
 * @param {{ port?: number, password?: string, tls?: { cert: string, key: string, ca: string } }} [options]
 */
export async function startRedis(options = {}) {
  if (!REDIS_SERVER) throw new Error('redis-server is not installed (apt-get install redis-server); the Redis tests must run in CI');
  const port = options.port ?? await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];
  if (options.password) args.push('--requirepass', options.password);
  const secure = options.tls;
  if (secure) {
    args.splice(0, 2, '--port', '0', '--tls-port', String(port));
    args.push('--tls-cert-file', secure.cert, '--tls-key-file', secure.key, '--tls-ca-cert-file', secure.ca, '--tls-auth-clients', 'no');
  }
  const ca = secure ? fs.readFileSync(secure.ca) : null;
  /** @type {import('node:child_process').ChildProcess} */
  let child;
  const launch = async () => {
    child = spawn(/** @type {string} */ (REDIS_SERVER), args, { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      if (await (ca ? tlsPing(port, ca) : ping(port))) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    child.kill('SIGKILL');
    throw new Error('redis-server did not answer PING within 10 s');
  };
  const stop = async () => {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  await launch();
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : '';
  return {
    port,
    url: `${secure ? 'rediss' : 'redis'}://${auth}127.0.0.1:${port}/0`,
    stop,
    async restart() {
      await stop();
      await launch();
    },
  };
}
