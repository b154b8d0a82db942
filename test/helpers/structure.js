// @ts-check
/**
 * The engine's shape, measured: import cycles, imports that run against the
 * layer order, file and function lengths, files at lib/'s root, and the share
 * of comment lines. `node test/helpers/structure.js` prints the report;
 * test/unit/structure.test.js holds the limits (ARCHITECTURE.md, "Rules").
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as espree from 'espree';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIB = path.join(ROOT, 'lib');

/**
 * The layers, lowest first: a module imports only from its own layer or a
 * lower one. The key is a folder of lib/ (or a file at its root).
 */
export const LAYERS = [
  ['errors.js', 'warnings.js', 'url.js'],
  ['runtime'],
  ['document'],
  ['options'],
  ['fetch'],
  ['roots'],
  ['output'],
  ['store'],
  ['recrawl'],
  ['naming'],
  ['engine'],
  ['render'],
  ['distributed'],
  ['crawler'],
  ['preview'],
  ['prices'],
  ['serve', 'front'],
  ['deploy'],
  ['capacity'],
  ['demo'],
  ['cli'],
  ['index.js', 'start.js'],
];

/** @param {string} file a path under lib/ */
export function layerOf(file) {
  const first = file.split('/')[0];
  const index = LAYERS.findIndex((names) => names.includes(first));
  return index;
}

/** @param {string} dir @returns {string[]} */
function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : name.endsWith('.js') ? [full] : [];
  });
}

/**
 * @param {string} code
 */
function parse(code) {
  return espree.parse(code, { ecmaVersion: 'latest', sourceType: 'module', comment: true, tokens: true, loc: true, range: true });
}

/**
 * Runtime imports of a module: static imports, re-exports and import() of a
 * literal. JSDoc type imports are left out: they load nothing.
 * @param {any} ast
 * @returns {string[]}
 */
function importsOf(ast) {
  /** @type {string[]} */
  const found = [];
  /** @param {any} node */
  const visit = (node) => {
    if (!node || typeof node.type !== 'string') return;
    if ((node.type === 'ImportDeclaration' || node.type === 'ExportAllDeclaration' || node.type === 'ExportNamedDeclaration') && node.source) found.push(node.source.value);
    if (node.type === 'ImportExpression' && node.source.type === 'Literal') found.push(node.source.value);
    for (const key of Object.keys(node)) {
      if (key === 'parent') continue;
      const value = node[key];
      if (Array.isArray(value)) value.forEach(visit);
      else if (value && typeof value.type === 'string') visit(value);
    }
  };
  visit(ast);
  return found;
}

/**
 * Functions longer than `max` lines, with their names.
 * @param {any} ast
 * @param {number} max
 */
function longFunctions(ast, max) {
  /** @type {{ name: string, lines: number, line: number }[]} */
  const found = [];
  /** @param {any} node @param {string} name */
  const visit = (node, name) => {
    if (!node || typeof node.type !== 'string') return;
    let own = name;
    if (node.type === 'MethodDefinition' || node.type === 'Property' || node.type === 'PropertyDefinition') own = node.key?.name ?? name;
    if (node.type === 'VariableDeclarator') own = node.id?.name ?? name;
    if (/Function/.test(node.type)) {
      const lines = node.loc.end.line - node.loc.start.line + 1;
      if (lines > max) found.push({ name: node.id?.name ?? own ?? '(anonymous)', lines, line: node.loc.start.line });
    }
    for (const key of Object.keys(node)) {
      const value = node[key];
      if (Array.isArray(value)) value.forEach((child) => visit(child, own));
      else if (value && typeof value.type === 'string') visit(value, own);
    }
  };
  visit(ast, '');
  return found;
}

/** @param {Map<string, string[]>} graph @returns {string[][]} cycles (strongly connected parts of more than one module) */
function cyclesOf(graph) {
  let index = 0;
  /** @type {Map<string, number>} */ const indices = new Map();
  /** @type {Map<string, number>} */ const low = new Map();
  /** @type {string[]} */ const stack = [];
  const onStack = new Set();
  /** @type {string[][]} */ const parts = [];
  /** @param {string} v */
  const connect = (v) => {
    indices.set(v, index); low.set(v, index); index++;
    stack.push(v); onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) { connect(w); low.set(v, Math.min(/** @type {number} */ (low.get(v)), /** @type {number} */ (low.get(w)))); }
      else if (onStack.has(w)) low.set(v, Math.min(/** @type {number} */ (low.get(v)), /** @type {number} */ (indices.get(w))));
    }
    if (low.get(v) === indices.get(v)) {
      /** @type {string[]} */ const part = [];
      let w;
      do { w = /** @type {string} */ (stack.pop()); onStack.delete(w); part.push(w); } while (w !== v);
      if (part.length > 1 || (graph.get(v) ?? []).includes(v)) parts.push(part.sort());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) connect(v);
  return parts;
}

export function measure({ maxFunctionLines = 150 } = {}) {
  const files = walk(LIB).map((full) => path.relative(LIB, full).split(path.sep).join('/')).sort();
  /** @type {Map<string, string[]>} */
  const graph = new Map();
  /** @type {{ from: string, to: string }[]} */
  const upward = [];
  /** @type {{ file: string, lines: number }[]} */
  const longFiles = [];
  /** @type {{ file: string, name: string, lines: number, line: number }[]} */
  const longFns = [];
  /** @type {string[]} */
  const unlayered = [];
  let totalLines = 0;
  let commentLines = 0;
  for (const file of files) {
    const code = readFileSync(path.join(LIB, file), 'utf8');
    const ast = parse(code);
    const lines = code.split('\n');
    const count = code.endsWith('\n') ? lines.length - 1 : lines.length;
    totalLines += count;
    // A line counts as a comment line when a comment covers it and no code shares it.
    const codeLines = new Set();
    for (const token of /** @type {any} */ (ast).tokens) for (let l = token.loc.start.line; l <= token.loc.end.line; l++) codeLines.add(l);
    const commented = new Set();
    for (const comment of /** @type {any} */ (ast).comments) for (let l = comment.loc.start.line; l <= comment.loc.end.line; l++) if (!codeLines.has(l)) commented.add(l);
    commentLines += commented.size;
    if (count > 500) longFiles.push({ file, lines: count });
    for (const fn of longFunctions(ast, maxFunctionLines)) longFns.push({ file, ...fn });
    if (layerOf(file) < 0) unlayered.push(file);
    const targets = importsOf(ast).filter((spec) => spec.startsWith('.')).map((spec) => path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)));
    graph.set(file, targets.filter((target) => !target.startsWith('..')));
    for (const target of targets) {
      if (target.startsWith('..')) continue; // outside lib/ (package.json, templates)
      if (layerOf(target) > layerOf(file)) upward.push({ from: file, to: target });
    }
  }
  const names = new Map();
  for (const file of files) {
    const base = path.posix.basename(file);
    if (base === 'index.js') continue;
    names.set(base, [...(names.get(base) ?? []), file]);
  }
  return {
    files: files.length,
    rootFiles: files.filter((file) => !file.includes('/')),
    cycles: cyclesOf(graph),
    upward,
    unlayered,
    longFiles,
    longFunctions: longFns,
    repeatedNames: [...names].filter(([, list]) => list.length > 1).map(([base, list]) => ({ base, files: list })),
    totalLines,
    commentLines,
    commentShare: commentLines / totalLines,
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const report = measure();
  console.log(JSON.stringify({ ...report, commentShare: Number(report.commentShare.toFixed(3)) }, null, 2));
}
