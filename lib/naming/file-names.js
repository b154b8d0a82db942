// @ts-check
import { createHash } from 'node:crypto';
import { UnsafeFileNameError } from '../errors.js';
import { extensionFits, extensionForType, isHtmlType } from './mime.js';
import { expandTemplate } from './rules.js';

/** File naming: pure functions, and `FileRegistry` for collisions. Names are relative to OUT, with "/". */

const MAX_SEGMENT_BYTES = 200;
/** A file's whole path (relative to OUT) stays under this, so no page fails with ENAMETOOLONG. */
export const MAX_PATH_BYTES = 1024;
const HTML_EXTENSION = /\.html?$/i;
const WINDOWS_UNSAFE = /[<>:"|?*\\\u0000-\u001f\u007f]/g;

export { mimeOf, isHtmlType } from './mime.js';

/** Names Windows keeps for devices, with or without an extension. */
const DEVICE_NAME = /^(con|prn|aux|nul|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3])(\.|$)/i;
/** Files a web server obeys instead of serving (.htaccess, .htpasswd, .htgroups...). */
const SERVER_FILE = /^\.ht/i;
/** A name ending in a dot or a space: Windows drops them, so two names become one. */
const TRAILING_DOT_OR_SPACE = /[. ]+$/;
/** A name header that is a bare file name of ASCII letters, digits, "-", "_" and dots, not hidden. */
const PLAIN_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** What makes a segment unusable on some file system or web server, or null. @param {string} segment */
function unportable(segment) {
  if (DEVICE_NAME.test(segment)) return 'a Windows device name';
  if (SERVER_FILE.test(segment)) return 'a file web servers obey (.htaccess, .htpasswd...)';
  if (TRAILING_DOT_OR_SPACE.test(segment)) return 'a name ending in a dot or a space';
  return null;
}

/** One decoded URL segment made safe on every file system and web server. @param {string} segment */
function safeSegment(segment) {
  let cleaned = segment.replace(WINDOWS_UNSAFE, '_');
  if (cleaned === '.' || cleaned === '..') return cleaned.replace(/\./g, '_');
  if (DEVICE_NAME.test(cleaned) || SERVER_FILE.test(cleaned)) cleaned = `_${cleaned}`;
  cleaned = cleaned.replace(TRAILING_DOT_OR_SPACE, (tail) => '_'.repeat(tail.length));
  return shorten(cleaned);
}

/** A name header's value as meant: header bytes arrive one per character, so valid UTF-8 is read as UTF-8. @param {string} value */
export function decodeNameHeader(value) {
  if (!/[\u0080-\u00ff]/.test(value) || /[^\u0000-\u00ff]/.test(value)) return value;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(value, 'latin1'));
  } catch {
    return value;
  }
}

/** Keep a segment under the byte limit of common file systems, deterministically. @param {string} segment */
function shorten(segment) {
  if (Buffer.byteLength(segment) <= MAX_SEGMENT_BYTES) return segment;
  const hash = createHash('sha1').update(segment).digest('hex').slice(0, 10);
  const ext = /\.[A-Za-z0-9]{1,5}$/.exec(segment)?.[0] ?? '';
  let head = segment.slice(0, MAX_SEGMENT_BYTES - 16);
  while (Buffer.byteLength(head) > MAX_SEGMENT_BYTES - 16) head = head.slice(0, -1);
  return `${head}-${hash}${ext}`;
}

/** Decode a path segment; keep it encoded when decoding fails or yields a separator. @param {string} segment */
function decodeSegment(segment) {
  try {
    const decoded = decodeURIComponent(segment);
    if (/[/\\\u0000]/.test(decoded)) return segment;
    return decoded.normalize('NFC');
  } catch {
    return segment;
  }
}

/** The directory segments of a URL path, decoded and made safe. @param {string} pathname @returns {string[]} */
export function directorySegments(pathname) {
  const parts = pathname.split('/').slice(1, -1);
  return parts.filter((part) => part !== '').map((part) => safeSegment(decodeSegment(part)));
}

/** `directoryPrefix` of the directories named last: a site's pages share a few. */
const directoryPrefixes = new Map();
const MAX_DIRECTORY_PREFIXES = 1024;

/** The directory segments joined, with a trailing "/" (or ""). @param {string} pathname */
function directoryPrefix(pathname) {
  const directory = pathname.slice(0, pathname.lastIndexOf('/') + 1);
  let prefix = directoryPrefixes.get(directory);
  if (prefix === undefined) {
    const segments = directorySegments(directory);
    prefix = segments.length > 0 ? `${segments.join('/')}/` : '';
    if (directoryPrefixes.size >= MAX_DIRECTORY_PREFIXES) directoryPrefixes.clear();
    directoryPrefixes.set(directory, prefix);
  }
  return prefix;
}

/** "a=1&b=2" -> "@a=1&b=2". @param {string} search including "?", or "" */
function foldQuery(search) {
  if (search === '' || search === '?') return '';
  return '@' + search.slice(1).replace(/[%/]/g, '_').replace(WINDOWS_UNSAFE, '_');
}

/** The extension a file needs to be served with the right type. @param {string} name @param {string | undefined} contentType */
function withExtension(name, contentType) {
  if (isHtmlType(contentType)) return HTML_EXTENSION.test(name) ? name : name + '.html';
  const wanted = extensionForType(contentType);
  if (!wanted || extensionFits(name, contentType)) return name;
  return name + wanted;
}

/** Its URL path, index.html for a directory, the query folded in, .html for HTML. @param {URL} url @param {string | undefined} contentType @returns {string} */
export function defaultFileName(url, contentType) {
  const pathname = url.pathname;
  const last = pathname.slice(pathname.lastIndexOf('/') + 1);
  const base = last === '' ? 'index' : decodeSegment(last);
  const folded = base + foldQuery(url.search);
  const name = safeSegment(withExtension(folded, contentType === undefined && last === '' ? 'text/html' : contentType));
  return directoryPrefix(pathname) + name;
}

/**
 * A name header as a file name, or UnsafeFileNameError: a bare name goes in the URL path's directory; "/..." is relative to OUT.
 * @param {string} value @param {URL} url the page's @param {string | undefined} contentType @returns {string}
 */
export function headerFileName(value, url, contentType) {
  // A plain name (product7.htm) can only fail the checks made here: the quick path.
  if (value.length <= 255 && PLAIN_NAME.test(value)) {
    const file = withExtension(value, contentType);
    if (file.length <= 255 && unportable(file) === null) return directoryPrefix(url.pathname) + file;
  }
  const name = value.trim().normalize('NFC');
  const refuse = (/** @type {string} */ why) => {
    throw new UnsafeFileNameError(`unsafe file name ${JSON.stringify(value)} (${why}); using the default name`);
  };
  if (name === '') refuse('empty');
  if (/[\u0000-\u001f\u007f]/.test(name)) refuse('control character');
  if (name.includes('\\')) refuse('backslash');
  if (/^[A-Za-z]:/.test(name)) refuse('drive letter');
  if (name.startsWith('//')) refuse('absolute path');
  if (/%(2f|5c|2e|00)/i.test(name)) refuse('encoded separator or dot');
  if (/[<>:"|?*]/.test(name)) refuse('character not allowed in file names');
  const rooted = name.startsWith('/');
  const segments = (rooted ? name.slice(1) : name).split('/');
  if (segments.some((segment) => segment === '..')) refuse('".." segment');
  if (segments.some((segment) => Buffer.byteLength(segment) > 255)) refuse('segment longer than 255 bytes');
  const kept = segments.filter((segment) => segment !== '' && segment !== '.');
  if (kept.length === 0) refuse('no file name');
  if (name.endsWith('/')) kept.push('index.html');
  const last = kept.length - 1;
  kept[last] = withExtension(kept[last], contentType);
  // A hidden file (".html" from an empty {query.id}) servers refuse; .well-known/ is meant to be served.
  if (kept.some((segment) => segment.startsWith('.') && segment.toLowerCase() !== '.well-known')) refuse('a name starting with a dot (a hidden file: web servers refuse or hide it)');
  for (const segment of kept) {
    const why = unportable(segment);
    if (why) refuse(why);
  }
  if (Buffer.byteLength(kept[last]) > 255) refuse('name longer than 255 bytes with its extension');
  const dirs = rooted ? [] : directorySegments(url.pathname);
  return [...dirs, ...kept].join('/');
}

/** The directory of an origin's files when roots span several origins. @param {URL} url */
export function hostDirectory(url) {
  return `${url.hostname}${url.port ? '_' + url.port : ''}`;
}

/**
 * A safe name header, else a safe --name template, else the default name; under the host's directory across origins.
 * An unsafe name comes back as `refused`, for a warning; other errors are thrown.
 * @param {URL} url @param {string} contentType @param {string | undefined} header the name header's value @param {boolean} multiOrigin
 * @param {{ template?: string | null, prefix?: string }} [options] the first matching --name rule's template, and its fixed path for {rest}
 * @returns {{ file: string, from: 'name header' | 'name rule' | 'default name', refused?: UnsafeFileNameError, refusedFrom?: 'name header' | 'name rule' }}
 */
export function wantedFileName(url, contentType, header, multiOrigin, options = {}) {
  /** @type {ReturnType<typeof wantedFileName>} */ let wanted;
  const template = options.template ?? null;
  const from = header !== undefined ? 'name header' : template !== null ? 'name rule' : 'default name';
  try {
    wanted = from === 'name header' ? { file: headerFileName(decodeNameHeader(/** @type {string} */ (header)), url, contentType), from }
      : from === 'name rule' ? { file: headerFileName(expandTemplate(/** @type {string} */ (template), url, options.prefix), url, contentType), from }
        : { file: defaultFileName(url, contentType), from };
  } catch (error) {
    if (!(error instanceof UnsafeFileNameError)) throw error;
    wanted = { file: defaultFileName(url, contentType), from: 'default name', refused: error, refusedFrom: /** @type {'name header' | 'name rule'} */ (from) };
  }
  if (multiOrigin) wanted.file = `${hostDirectory(url)}/${wanted.file}`;
  wanted.file = capPath(wanted.file);
  return wanted;
}

/** Directories that do not fit become one segment named by their hash. @param {string} file */
export function capPath(file) {
  if (Buffer.byteLength(file) <= MAX_PATH_BYTES) return file;
  const parts = file.split('/');
  const name = /** @type {string} */ (parts.pop());
  const budget = MAX_PATH_BYTES - Buffer.byteLength(name) - 24;
  const kept = [];
  let used = 0;
  for (const part of parts) {
    const size = Buffer.byteLength(part) + 1;
    if (used + size > budget) break;
    kept.push(part);
    used += size;
  }
  const rest = parts.slice(kept.length).join('/');
  return [...kept, `_${createHash('sha1').update(rest).digest('hex').slice(0, 20)}`, name].join('/');
}

/** Names nobody may take: the manifest and the tool's own directory (state, temp files). */
export const RESERVED_NAMES = ['prerender-manifest.json', '.prerender'];

/** @typedef {{ children: Map<string, TreeNode> | null, owner: string | undefined }} TreeNode a lower-cased segment; `owner`: the URL whose file ends here */

/** @returns {TreeNode} */
const treeNode = () => ({ children: null, owner: undefined });

/** A name taken case-insensitively, or clashing with a directory, gets a "-2", "-3"... suffix; a claim costs one walk of its path. */
export class FileRegistry {
  /** @param {{ reserved?: (name: string) => boolean, foreign?: (file: string, url: string) => boolean }} [options] foreign: a file no crawl wrote */
  constructor(options = {}) {
    this.reserved = options.reserved ?? (() => false);
    this.foreign = options.foreign ?? null;
    this.root = treeNode();
  }

  /** Case insensitively. @param {string} file @returns {string | undefined} */
  ownerOf(file) {
    /** @type {TreeNode | undefined} */ let node = this.root;
    for (const segment of file.split('/')) {
      node = node?.children?.get(segment.toLowerCase());
      if (!node) return undefined;
    }
    return node.owner;
  }

  /** @param {string} wanted @param {string} url @returns {{ file: string, collidedWith?: string }} */
  claim(wanted, url) {
    const parts = wanted.split('/');
    /** @type {string | undefined} */ let collidedWith;
    // A directory whose name is a file moves: "x.html/index.html" becomes "x.html-2/index.html".
    /** @type {TreeNode | undefined} the directory walked so far */
    let node = this.root;
    for (let i = 0; i < parts.length - 1; i++) {
      /** @type {TreeNode | undefined} */ const here = node;
      const blocked = (/** @type {string} */ segment) => {
        const lower = segment.toLowerCase();
        return here?.children?.get(lower)?.owner !== undefined || (i === 0 && RESERVED_NAMES.includes(lower));
      };
      if (blocked(parts[i])) {
        collidedWith ??= here?.children?.get(parts[i].toLowerCase())?.owner ?? 'a reserved name';
        let n = 2;
        while (blocked(`${parts[i]}-${n}`)) n++;
        parts[i] = `${parts[i]}-${n}`;
      }
      node = here?.children?.get(parts[i].toLowerCase());
    }
    const base = parts.join('/');
    const parent = node;
    const top = parts.length === 1;
    const clash = (/** @type {string} */ name, /** @type {string} */ path) => {
      const lower = name.toLowerCase();
      const existing = parent?.children?.get(lower);
      if (existing && (existing.owner !== undefined || existing.children !== null)) {
        return existing.owner ?? 'a directory of the tree';
      }
      if (top && (RESERVED_NAMES.includes(lower) || this.reserved(lower))) return 'a reserved name';
      if (this.foreign?.(path, url)) return 'a file no crawl wrote';
      return undefined;
    };
    let file = base;
    const last = parts[parts.length - 1];
    let name = last;
    for (let n = 2; ; n++) {
      const taken = clash(name, file);
      if (taken === undefined) break;
      collidedWith ??= taken;
      // Past 100 (or a reserved numbered family), a hash suffix, which cannot loop.
      file = n <= 100 ? suffixed(base, n) : suffixed(base, `h${createHash('sha1').update(url + n).digest('hex').slice(0, 10)}`);
      name = file.slice(file.lastIndexOf('/') + 1);
      if (n > 200) throw new Error(`cannot find a free file name for ${url}`);
    }
    let at = this.root;
    const segments = file.split('/');
    for (const segment of segments) {
      at.children ??= new Map();
      const lower = segment.toLowerCase();
      let next = at.children.get(lower);
      if (!next) {
        next = treeNode();
        at.children.set(lower, next);
      }
      at = next;
    }
    at.owner = url;
    return collidedWith === undefined ? { file } : { file, collidedWith };
  }
}

/** "dir/name.html" + 2 -> "dir/name-2.html" @param {string} file @param {number | string} n */
function suffixed(file, n) {
  const slash = file.lastIndexOf('/');
  const dir = file.slice(0, slash + 1);
  const name = file.slice(slash + 1);
  const dot = name.lastIndexOf('.');
  return dot > 0 ? `${dir}${name.slice(0, dot)}-${n}${name.slice(dot)}` : `${dir}${name}-${n}`;
}
