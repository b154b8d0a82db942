// @ts-check
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { UsageError } from '../errors.js';
import * as scripts from './scripts.js';
import * as finishScripts from './finish-scripts.js';

/**
 * Who a process of a shared crawl is: its prerender version and its
 * machine. Small on purpose: a worker reads them before it loads the crawl
 * engine (which it loads only once its crawl exists).
 */

/**
 * Bumped when what processes exchange through Redis outside the scripts
 * changes: the packed records (packed.js), the feed's items (frontier.js),
 * and the staged scans they leave each other in the shared blob directory
 * (page.js encodeScan; 3: the links as lines ahead of the JSON).
 */
const WIRE = 3;

/**
 * The prerender version, with a fingerprint of what processes of one crawl
 * must share (`0.1.0+1a2b3c4d`): the Redis scripts they run (any change to
 * one changes it) and WIRE. Processes of one release but another protocol
 * (a checkout between releases) refuse each other as other versions do.
 */
export const VERSION = `${JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version}+${protocolOf([...byName(scripts), ...byName(finishScripts)])}`;

/**
 * A module's exports in the order of their names (a namespace's own order is
 * not the same under every loader: a test runner's may differ from Node's).
 * @param {Record<string, unknown>} namespace
 */
function byName(namespace) {
  return Object.keys(namespace).sort().map((name) => namespace[name]);
}

/**
 * @param {unknown[]} sources the scripts' texts
 */
export function protocolOf(sources) {
  const hash = createHash('sha256').update(`wire ${WIRE}`);
  for (const source of sources) if (typeof source === 'string') hash.update('\0').update(source);
  return hash.digest('hex').slice(0, 8);
}

/** What a machine's name may hold: it starts the process's id in Redis, whose lease entries are `token|worker|origin`. */
const MACHINE_NAME = /^[A-Za-z0-9._-]{1,253}$/;

/**
 * The machine a process says it runs on (status, and whether it brings
 * cores of its own to the finishing phase): PRERENDER_HOST, else the host name.
 * Containers that share one machine's cores may say so with the same PRERENDER_HOST.
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

