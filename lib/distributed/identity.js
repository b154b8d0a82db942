// @ts-check
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { UsageError } from '../errors.js';
import * as scripts from './scripts.js';
import * as finishScripts from './finish-scripts.js';

/** Who a shared-crawl process is (version, machine); small, as a worker reads it before loading the engine. */

/** Bumped when packed records, feed items or staged scans change. */
const WIRE = 3;

/** Plus a fingerprint of the scripts and WIRE: processes of one release but another protocol refuse each other. */
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
 * PRERENDER_HOST, else the host name: containers sharing one machine's cores may give the same PRERENDER_HOST.
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

