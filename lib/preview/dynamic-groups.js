// @ts-check
import { queryParams } from '../naming/rules.js';
import { WORD } from '../engine/sample.js';

/**
 * The plan's "dynamic targets, by path": a query-routed app (gitweb's ?a=commit) puts most links on one path, split here by its routing parameter.
 * @typedef {{ links: number, pages: number, lastPage: string | null }} Group @typedef {{ path: string, links: number, pages: number }} GroupRow
 */

/** Values kept per parameter: a parameter with more (an id, a hash) routes nothing. */
const MAX_VALUES = 64;

/** @param {Group} group @param {string | null} from */
function count(group, from) {
  group.links++;
  if (group.lastPage !== from) {
    group.pages++;
    group.lastPage = from;
  }
}

const newGroup = () => ({ links: 0, pages: 0, lastPage: null });

/** @typedef {{ values: Map<string, Group> | null, missing: Group }} Param values: null past MAX_VALUES; missing: the links without it */

export class DynamicGroups {
  constructor() {
    /** @type {Map<string, Group & { params: Map<string, Param> }>} */ this.paths = new Map();
    this.links = 0;
  }

  /** @param {string} path the label of the link's path @param {URL} url @param {string | null} from the page the link is on */
  add(path, url, from) {
    let group = this.paths.get(path);
    if (!group) this.paths.set(path, group = { ...newGroup(), params: new Map() });
    const query = url.search.length < 2 ? null : queryParams(url);
    for (const [name, param] of group.params) if (!query?.has(name)) count(param.missing, from);
    if (query) {
      for (const name of new Set(query.keys())) {
        let param = group.params.get(name);
        // Seen first here: every link before lacked it.
        if (!param) group.params.set(name, param = { values: new Map(), missing: { links: group.links, pages: group.pages, lastPage: group.lastPage } });
        const value = /** @type {string} */ (query.get(name));
        if (param.values && !param.values.has(value) && param.values.size >= MAX_VALUES) param.values = null;
        if (!param.values) continue;
        const byValue = param.values.get(value) ?? newGroup();
        param.values.set(value, byValue);
        count(byValue, from);
      }
    }
    count(group, from);
    this.links++;
  }

  /** The groups, most links first; a path holding most links split by its routing parameter. @returns {GroupRow[]} */
  list() {
    /** @type {GroupRow[]} */ const rows = [];
    for (const [path, group] of this.paths) {
      const split = group.links * 2 > this.links ? routing(group) : null;
      if (!split) {
        rows.push({ path, links: group.links, pages: group.pages });
        continue;
      }
      for (const [value, byValue] of /** @type {Map<string, Group>} */ (split.param.values)) {
        rows.push({ path: `${path}?${split.name}=${value}`, links: byValue.links, pages: byValue.pages });
      }
      const { missing } = split.param;
      if (missing.links > 0) rows.push({ path: `${path} (no ${split.name}=)`, links: missing.links, pages: missing.pages });
    }
    return rows.sort((a, b) => b.links - a.links || (a.path < b.path ? -1 : 1));
  }
}

/**
 * In at least a quarter of the path's links (MediaWiki's action= is in less than half) with more than one value; of those,
 * one whose values are all words (a=commit, not h=1a2b3c), then the fewest values. @param {Group & { params: Map<string, Param> }} group
 */
function routing(group) {
  /** @type {{ name: string, param: Param, size: number, words: boolean } | null} */ let best = null;
  for (const [name, param] of group.params) {
    const size = param.values?.size ?? 0;
    if (size < 2 || (group.links - param.missing.links) * 4 < group.links) continue;
    const words = [.../** @type {Map<string, Group>} */ (param.values).keys()].every((value) => WORD.test(value));
    if (!best || (words && !best.words) || (words === best.words && size < best.size)) best = { name, param, size, words };
  }
  return best;
}
