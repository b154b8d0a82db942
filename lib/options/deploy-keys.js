// @ts-check
import { ConfigError } from '../errors.js';
import { checkTargetsConfig } from '../deploy/targets.js';

/**
 * The config file's deploy keys. They belong to publish/deploy/rollback/
 * releases only; crawl and preview leave them aside.
 *
 *   targets:   { name: "ssh://deploy@web1/var/www/site" | { url, sshKey?, sshOption? } }
 *   keep:      releases kept per target (default 5)
 *   switch:    "all" (default) or "each"
 *   sshKey:    identity file for every ssh target
 *   sshOption: ["Key=value", ...] for every ssh target
 */
export const DEPLOY_KEYS = ['targets', 'keep', 'switch', 'sshKey', 'sshOption'];

/**
 * @param {string} key one of DEPLOY_KEYS
 * @param {unknown} value
 * @param {string} source file name, for messages
 */
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
