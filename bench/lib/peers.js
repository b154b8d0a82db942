// @ts-check
/**
 * The other crawlers that crawl-bench compares prerender with, and the exact
 * command each one runs. All get the same job: from ORIGIN/st/dir.asp, follow
 * links to /st/dir.asp and /st/product.asp on that host only, ignore
 * robots.txt, rewrite links for browsing offline, and keep their own defaults
 * otherwise. Those with a concurrency get prerender's.
 *
 *   wget     Debian's wget: one connection, it has no concurrency.
 *   httrack  Debian's httrack, -c (sockets) = prerender's concurrency.
 *   scraper  website-scraper 6 (npm), run by bench/peers/scrape.js in a child
 *            process, requestConcurrency = prerender's concurrency. It is
 *            installed into bench/peers/node_modules, never into the
 *            project's dependencies.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PEERS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'peers');
const SCRAPER_PACKAGE = path.join(PEERS_DIR, 'node_modules', 'website-scraper', 'package.json');

/** The peers, in the order they run after prerender in each round. */
export const PEERS = /** @type {const} */ (['wget', 'httrack', 'scraper']);

/** @typedef {typeof PEERS[number]} Peer */

/**
 * @param {string} text comma-separated, e.g. "wget,httrack,scraper"
 * @returns {{ peers: Peer[] } | { error: string }}
 */
export function parsePeers(text) {
  const names = text.split(',').map((name) => name.trim()).filter((name) => name !== '');
  const unknown = names.filter((name) => !(/** @type {readonly string[]} */ (PEERS)).includes(name));
  if (unknown.length > 0 || names.length === 0) return { error: `--peers takes a comma-separated list of ${PEERS.join(', ')}, got ${JSON.stringify(text)}` };
  return { peers: PEERS.filter((peer) => names.includes(peer)) };
}

/**
 * Checks that each peer can run; installs website-scraper into bench/peers
 * when it is missing (npm ci, from the committed lockfile).
 * @param {Peer[]} peers
 * @param {(message: string) => void} log
 * @returns {string | null} why a peer cannot run (with how to install it), or null
 */
export function preparePeers(peers, log) {
  if (peers.includes('wget') && !onPath('wget')) return 'wget is not installed: apt-get install wget';
  if (peers.includes('httrack') && !onPath('httrack')) {
    return 'HTTrack is not installed: apt-get update && apt-get install -y httrack (as root, else with sudo)';
  }
  if (peers.includes('scraper') && !existsSync(SCRAPER_PACKAGE)) {
    log('installing website-scraper: npm ci --prefix bench/peers...');
    const npm = spawnSync('npm', ['ci', '--prefix', PEERS_DIR, '--no-audit', '--no-fund'], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (npm.status !== 0 || !existsSync(SCRAPER_PACKAGE)) return 'website-scraper could not be installed: run npm ci --prefix bench/peers';
  }
  return null;
}

/** @param {string} command */
function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/**
 * The peers' versions, for the report.
 * @param {Peer[]} peers
 */
export function peerVersions(peers) {
  /** @type {Record<string, string | null>} */
  const versions = {};
  const first = (/** @type {string} */ file, /** @type {string[]} */ args) => {
    try {
      return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n').find((line) => line.trim() !== '')?.trim() ?? null;
    } catch {
      return null;
    }
  };
  for (const peer of peers) {
    if (peer === 'wget') versions.wget = first('wget', ['--version']);
    if (peer === 'httrack') versions.httrack = first('httrack', ['--version']);
    if (peer === 'scraper') versions.scraper = existsSync(SCRAPER_PACKAGE) ? `website-scraper ${JSON.parse(readFileSync(SCRAPER_PACKAGE, 'utf8')).version}` : null;
  }
  return versions;
}

/**
 * The command a peer runs, and how the report shows it (ORIGIN and OUT for
 * the origin's URL and the output folder).
 * @param {Peer} peer
 * @param {{ origin: string, out: string, concurrency: number }} options
 * @returns {{ file: string, args: string[], shown: string }}
 */
export function peerCommand(peer, { origin, out, concurrency }) {
  const host = new URL(origin).host;
  const escaped = escapeRegExp(origin);
  /** @param {string[]} args */
  const show = (args) => args.map((arg) => arg.replaceAll(escaped, 'ORIGIN').replaceAll(origin, 'ORIGIN').replaceAll(host, 'HOST').replaceAll(out, 'OUT')).map(quote).join(' ');
  if (peer === 'wget') {
    const args = ['--mirror', '--convert-links', '--adjust-extension', '--no-parent', '-e', 'robots=off', '-q', '-P', out, '--accept-regex', '/st/(dir|product)\\.asp', `${origin}/st/dir.asp`];
    return { file: 'wget', args, shown: `wget ${show(args)}` };
  }
  if (peer === 'httrack') {
    // HTTrack checks the type of every .asp link before it fetches the next
    // one (-%N2, its default): told that .asp is HTML, it fetches them as
    // pages, in parallel. Its limits (5 connections a second, 10 MB/s, 8
    // sockets) are lifted, as an owner mirroring their own site would.
    const limits = ['--disable-security-limits', '-%c0', '-A1000000000'];
    const args = [`${origin}/st/dir.asp`, '-O', out, `-c${concurrency}`, ...limits, '-s0', '-q', '--assume', 'asp=text/html', '-%N1', '-*', `+${host}/st/dir.asp*`, `+${host}/st/product.asp*`];
    return { file: 'httrack', args, shown: `httrack ${show(args)}` };
  }
  const accept = `^${escaped}/st/(dir|product)\\.asp`;
  // website-scraper makes its directory itself and refuses one that exists.
  const args = [path.join(PEERS_DIR, 'scrape.js'), '--url', `${origin}/st/dir.asp`, '--directory', path.join(out, 'site'), '--concurrency', String(concurrency), '--accept', accept];
  return {
    file: process.execPath,
    args,
    shown: `node bench/peers/scrape.js ${show(args.slice(1))} (website-scraper: recursive, requestConcurrency ${concurrency}, filenameGenerator bySiteStructure, urlFilter = --accept, the rest default)`,
  };
}

/** @param {string} text */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** @param {string} arg */
function quote(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}
