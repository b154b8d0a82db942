// @ts-check
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { UsageError } from '../errors.js';
import * as scripts from './scripts.js';
import * as finishScripts from './finish-scripts.js';

/** Who a shared-crawl process is (version, machine); small, as a worker reads it before loading the engine. */

/**
 * Bumped when what processes exchange outside the scripts changes: packed records (packed.js), feed
 * items (feed-format.js), staged scans (document/rewrite.js encodeScan).
 */
const WIRE = 3;

/**
 * The version plus a fingerprint of the Redis scripts and WIRE (`0.1.0+1a2b3c4d`): processes of one
 * release but another protocol (a checkout between releases) refuse each other.
 */
export const VERSION = `${JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version}+${protocolOf([...byName(scripts), ...byName(finishScripts)])}`;

/** A module's exports by name (a namespace's own order differs between loaders). @param {Record<string, unknown>} namespace */
function byName(namespace) {
  return Object.keys(namespace).sort().map((name) => namespace[name]);
}

/** @param {unknown[]} sources the scripts' texts */
export function protocolOf(sources) {
  const hash = createHash('sha256').update(`wire ${WIRE}`);
  for (const source of sources) if (typeof source === 'string') hash.update('\0').update(source);
  return hash.digest('hex').slice(0, 8);
}

/** A machine name starts the process's Redis id, and lease entries are `token|worker|origin`. */
const MACHINE_NAME = /^[A-Za-z0-9._-]{1,253}$/;

/**
 * The machine a process runs on (status, and whether it brings cores of its own): PRERENDER_HOST, else
 * the host name. Containers sharing one machine's cores may give the same PRERENDER_HOST.
 * @param {Record<string, string | undefined> | undefined} env
 */
export function machineOf(env) {
  const given = env?.PRERENDER_HOST;
  if (given !== undefined && given !== '') {
    if (!MACHINE_NAME.test(given)) throw new UsageError(`PRERENDER_HOST must be a machine name (letters, digits, ".", "-", "_"; at most 253): ${JSON.stringify(given)}`);
    return given;
  }
  return hostname().replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 253) || 'localhost';
}

