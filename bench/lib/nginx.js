// @ts-check
/**
 * nginx for the serve benchmark, started from a temp config as
 * test/nginx.test.js does: one worker, `sendfile on`, `access_log off`,
 * serving a directory on 127.0.0.1 and a free port.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** @returns {string | null} */
export function findNginx() {
  for (const dir of ['/usr/sbin', '/usr/local/sbin', '/usr/bin', ...(process.env.PATH ?? '').split(':')]) {
    const file = path.join(dir, 'nginx');
    if (fs.existsSync(file)) return file;
  }
  return null;
}

/** A free port on 127.0.0.1 (listen on 0, read it, close). */
export async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {net.AddressInfo} */ (server.address());
  await new Promise((resolve) => server.close(() => resolve(undefined)));
  return port;
}

/**
 * @param {string} root the directory to serve
 * @returns {Promise<{ url: string, pid: number, stop: () => Promise<void> }>}
 */
export async function startNginx(root) {
  const bin = findNginx();
  if (!bin) throw new Error('nginx is not installed (apt-get install nginx)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prerender-bench-nginx-'));
  const port = await freePort();
  const conf = `
daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${root};
  }
}
`;
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const child = spawn(bin, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (c) => (log += c));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${log}`);
    const up = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline) throw new Error(`nginx not listening within 10 s: ${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    pid: /** @type {number} */ (child.pid),
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGQUIT');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
