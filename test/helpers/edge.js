// @ts-check
/**
 * nginx and Varnish for the tests of the shipped templates: the binaries
 * (Debian's packages, installed by .ci/run), a free port, the templates with
 * their placeholders replaced, and an nginx started on a site config.
 */
import { freePort } from './ports.js';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { request, waitFor } from '../../fixtures/serve/http.js';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** @param {string} name */
function findBinary(name) {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin']) {
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not in this directory: try the next
    }
  }
  return null;
}
export const NGINX = findBinary('nginx');
export const VARNISHD = findBinary('varnishd');

export { freePort } from './ports.js';

/**
 * A template of templates/ with each `from` replaced, each found exactly once:
 * a template change that breaks a test's set-up fails loudly instead of
 * testing something else.
 * @param {string} template e.g. "nginx/prerender.conf"
 * @param {[string, string][]} edits
 */
export function editTemplate(template, edits) {
  let text = fs.readFileSync(path.join(ROOT, 'templates', template), 'utf8');
  for (const [from, to] of edits) {
    const count = text.split(from).length - 1;
    if (count !== 1) throw new Error(`template: expected "${from}" once, found ${count} times`);
    text = text.replace(from, to);
  }
  return text;
}

/**
 * Stop a child process: SIGTERM, then SIGKILL after `timeoutMs`.
 * @param {import('node:child_process').ChildProcess} child
 * @param {number} [timeoutMs]
 */
export async function stopChild(child, timeoutMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/**
 * nginx on the template's site config: `root` (the tree, or DIR/current) and
 * `endpointPort` (the price endpoint, when the test has one) put in, on a free
 * port of 127.0.0.1, with every file of its own under `dir`. Resolves once
 * `probe` answers 200.
 * @param {{ dir: string, root: string, endpointPort?: number, probe: string, workerConnections?: number }} options
 * @returns {Promise<{ port: number, child: import('node:child_process').ChildProcess, log(): string, stop(): Promise<void> }>}
 */
export async function startNginx({ dir, root, endpointPort, probe, workerConnections = 64 }) {
  const port = await freePort();
  const site = editTemplate('nginx/prerender.conf', [
    ['listen 8080;', `listen 127.0.0.1:${port};`],
    ['root /srv/prerender/current;', `root ${root};`],
    ...(endpointPort === undefined ? [] : /** @type {[string, string][]} */ ([['server 127.0.0.1:9000;', `server 127.0.0.1:${endpointPort};`]])),
    ['/var/cache/nginx/prerender-prices', path.join(dir, 'price-cache')],
  ]);
  return startNginxWith({ dir, port, site, probe, workerConnections });
}

/**
 * nginx on a site configuration of its own (included inside `http {}`), which
 * listens on `port`, with every file of its own under `dir`. Resolves once
 * `probe` answers 200.
 * @param {{ dir: string, port: number, site: string, probe: string, workerConnections?: number }} options
 * @returns {Promise<{ port: number, child: import('node:child_process').ChildProcess, log(): string, stop(): Promise<void> }>}
 */
export async function startNginxWith({ dir, port, site, probe, workerConnections = 64 }) {
  if (!NGINX) throw new Error('nginx is not installed; .ci/run installs Debian\'s nginx package');
  const temp = (/** @type {string} */ name) => path.join(dir, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(temp('site.conf'), site);
  fs.writeFileSync(temp('nginx.conf'), `
${process.getuid?.() === 0 ? 'user root;' : ''}
daemon off;
worker_processes 1;
pid ${temp('nginx.pid')};
error_log ${temp('error.log')} warn;
events { worker_connections ${workerConnections}; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log off;
  client_body_temp_path ${temp('body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  include ${temp('site.conf')};
}
`);
  let output = '';
  const log = () => `${output}${fs.existsSync(temp('error.log')) ? fs.readFileSync(temp('error.log'), 'utf8') : ''}`;
  const child = spawn(NGINX, ['-p', dir, '-c', temp('nginx.conf'), '-e', temp('error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`nginx exited: ${log()}`);
        return request(port, probe, { timeoutMs: 500 }).then((answer) => answer.status === 200, () => false);
      },
      { timeoutMs: 60_000, what: 'nginx to answer' },
    );
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return { port, child, log, stop: () => stopChild(child) };
}

/**
 * varnishd on the template's VCL with the static origin and the price
 * endpoint put in, on a free port of 127.0.0.1, its files under `dir`.
 * Resolves once `probe` answers 200.
 * @param {{ dir: string, originPort: number, endpointPort: number, probe: string, storage?: string }} options
 * @returns {Promise<{ port: number, child: import('node:child_process').ChildProcess, stop(): Promise<void> }>}
 */
export async function startVarnish({ dir, originPort, endpointPort, probe, storage = 'malloc,32m' }) {
  const vcl = editTemplate('varnish/prerender.vcl', [
    ['.port = "8081";', `.port = "${originPort}";`],
    ['.port = "9000";', `.port = "${endpointPort}";`],
  ]);
  return startVarnishWith({ dir, vcl, probe, storage });
}

/**
 * varnishd on a VCL of its own, on a free port of 127.0.0.1, its files under
 * `dir`. Resolves once `probe` answers 200.
 * @param {{ dir: string, vcl: string, probe: string, storage?: string }} options
 * @returns {Promise<{ port: number, child: import('node:child_process').ChildProcess, stop(): Promise<void> }>}
 */
export async function startVarnishWith({ dir, vcl: text, probe, storage = 'malloc,32m' }) {
  if (!VARNISHD) throw new Error('varnishd is not installed; .ci/run installs Debian\'s varnish package');
  const port = await freePort();
  fs.mkdirSync(dir, { recursive: true });
  const vcl = path.join(dir, 'prerender.vcl');
  fs.writeFileSync(vcl, text);
  let log = '';
  const child = spawn(VARNISHD, ['-j', 'none', '-F', '-a', `127.0.0.1:${port}`, '-f', vcl, '-n', path.join(dir, 'varnish'), '-s', storage], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk) => (log += chunk));
  child.stderr?.on('data', (chunk) => (log += chunk));
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`varnishd exited: ${log}`);
        return request(port, probe, { timeoutMs: 500 }).then((answer) => answer.status === 200, () => false);
      },
      { timeoutMs: 60_000, what: 'varnish to answer' },
    );
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return { port, child, stop: () => stopChild(child) };
}
