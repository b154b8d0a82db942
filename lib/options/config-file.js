// @ts-check
import { access, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../errors.js';
import { OPTION_BY_NAME, coerceOption } from './crawl-options.js';
import { normalizeUrl } from '../url.js';
import { DEPLOY_KEYS, checkDeployKey } from './deploy-keys.js';

/** Config files: prerender.config.{js,mjs,json} in cwd, or --config. Keys are the CLI's names in camelCase plus "roots"; command-line flags win. */

export const CONFIG_FILES = ['prerender.config.js', 'prerender.config.mjs', 'prerender.config.json'];

/** @param {string} file */ const exists = (file) => access(file).then(() => true, () => false);

/** JSON, else imported as a module whose default export is taken. */
const JSON_EXTENSION = /\.json$/i;

/** The explicit config file, else the one in `cwd`. @param {{ cwd: string, file?: string }} where @returns {Promise<string | null>} */
export async function findConfig({ cwd, file }) {
  if (file !== undefined) {
    const absolute = path.resolve(cwd, file);
    const found = await stat(absolute).catch(() => null);
    if (!found) throw new ConfigError(`config file not found: ${file}`);
    // A directory would reach import(), whose message names prerender's own source.
    if (!found.isFile()) throw new ConfigError(`--config ${JSON.stringify(file)} is ${found.isDirectory() ? 'a directory' : 'not a regular file'}, not a config file`);
    return absolute;
  }
  const found = [];
  for (const name of CONFIG_FILES) {
    if (await exists(path.join(cwd, name))) found.push(name);
  }
  if (found.length > 1) throw new ConfigError(`several config files in ${cwd} (${found.join(', ')}): keep one, or choose with --config`);
  return found.length === 1 ? path.join(cwd, found[0]) : null;
}

/**
 * JSON parsed, or a module's default export, called when it is a function.
 * @param {string} file absolute path @param {string} label how messages name the file @returns {Promise<unknown>}
 */
export async function readConfigValue(file, label) {
  if (JSON_EXTENSION.test(file)) {
    let text;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`${label}: cannot read: ${/** @type {Error} */ (error).message}`, { cause: error });
    }
    try {
      // A UTF-8 byte order mark (Notepad) that JSON.parse refuses.
      return JSON.parse(text.startsWith('\uFEFF') ? text.slice(1) : text);
    } catch (error) {
      // On one line: the parser's message may quote text with newlines.
      throw new ConfigError(`${path.basename(file)}: not valid JSON: ${/** @type {Error} */ (error).message.replace(/\s*\n\s*/g, ' ')}`, { cause: error });
    }
  }
  try {
    const module = await import(pathToFileURL(file).href);
    return typeof module.default === 'function' ? await module.default() : module.default;
  } catch (error) {
    // Any kind Node imports is taken, such as .ts with a loader.
    if (/** @type {NodeJS.ErrnoException} */ (error)?.code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      throw new ConfigError(`${label}: a config file is JSON (.json) or a module (.js, .mjs, .cjs)`, { cause: error });
    }
    throw new ConfigError(`${label}: cannot load: ${/** @type {Error} */ (error).message}`, { cause: error });
  }
}

/** Errors name the file, key and expected type. @param {string} file absolute path @returns {Promise<Record<string, unknown>>} */
export async function loadConfigFile(file) {
  const name = path.basename(file);
  const isJson = JSON_EXTENSION.test(file);
  const value = await readConfigValue(file, name);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(`${name}: must ${isJson ? 'hold' : 'export default'} an object of options`);
  }
  return checkConfig(/** @type {Record<string, unknown>} */ (value), name);
}

/** @param {Record<string, unknown>} values @param {string} source file name, for messages */
export function checkConfig(values, source) {
  /** @type {Record<string, unknown>} */ const checked = {};
  for (const [key, value] of Object.entries(values)) {
    if (key === 'roots') {
      if (!Array.isArray(value) || !value.every((root) => typeof root === 'string')) {
        throw new ConfigError(`${source}: "roots" must be a list of absolute http(s) URLs, got ${JSON.stringify(value)}`);
      }
      const bad = value.find((root) => !normalizeUrl(root));
      if (bad !== undefined) throw new ConfigError(`${source}: "roots" must be a list of absolute http(s) URLs, got ${JSON.stringify(bad)}`);
      checked.roots = value;
      continue;
    }
    if (DEPLOY_KEYS.includes(key)) {
      checked[key] = checkDeployKey(key, value, source);
      continue;
    }
    // The capacity profile, checked by that command.
    if (key === 'capacity') {
      checked.capacity = value;
      continue;
    }
    const spec = OPTION_BY_NAME.get(key);
    if (!spec) {
      const hint = closest(key, ['roots', 'capacity', ...DEPLOY_KEYS, ...OPTION_BY_NAME.keys()]);
      throw new ConfigError(`${source}: unknown key "${key}"${hint ? ` (did you mean "${hint}"?)` : ''}`);
    }
    if (value === undefined) continue;
    checked[key] = coerceOption(spec, value, source);
  }
  return checked;
}

/** @param {string} word @param {Iterable<string>} candidates */
function closest(word, candidates) {
  let best = null;
  let bestDistance = 3;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** @param {string} a @param {string} b */
function editDistance(a, b) {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}
