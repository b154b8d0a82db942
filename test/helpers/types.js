// @ts-check
/**
 * The shipped type declarations, as users get them: generated from lib/'s
 * JSDoc into a temporary directory (as `prepack` does), then a TypeScript
 * program that uses them compiled under strict; and the package as npm
 * packs it with those declarations, or as a tarball to install.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** What `prepack` runs: the declarations of lib/ into types/. */
export const PREPACK = 'tsc -p tsconfig.types.json';

/**
 * Generate the declarations into `dir`/types, as `prepack` does into types/.
 * @param {string} dir a temporary directory
 */
export function generateTypes(dir) {
  // --noCheck: npm test's tsc has checked lib/ already; the declarations are the same, for 40 % less CPU.
  execFileSync(process.execPath, [TSC, '-p', 'tsconfig.types.json', '--outDir', path.join(dir, 'types'), '--noCheck'], { cwd: ROOT, stdio: 'pipe' });
}

/**
 * Compile the programs (each importing from './types/index.js') in `dir`,
 * whose types/ generateTypes() made, together: tsc's output, "" when they compile.
 * @param {string} dir
 * @param {Record<string, string>} programs file name (`.ts`, or `.mts` for an ES module that awaits at its top level) -> source
 */
export function compileAgainstTypes(dir, programs) {
  for (const [file, source] of Object.entries(programs)) fs.writeFileSync(path.join(dir, file), source);
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022',
      // The declarations import undici, lru-cache...: not resolvable from a temporary directory, and not what is tested.
      skipLibCheck: true, types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')],
    },
    files: Object.keys(programs),
  }));
  try {
    execFileSync(process.execPath, [TSC, '-p', dir], { stdio: 'pipe', encoding: 'utf8' });
    return '';
  } catch (error) {
    return String(/** @type {{ stdout?: string }} */ (error).stdout ?? error);
  }
}

/**
 * The files `npm pack` would put in the package: a copy of the checkout
 * (with its tests, fixtures and benchmarks, to show they stay out) whose
 * types/ is the one generateTypes() made in `dir`, packed without scripts
 * (the copy's prepack would generate the same types/ again).
 * @param {string} dir
 * @returns {string[]}
 */
export function packedFiles(dir) {
  const copy = copyCheckout(dir);
  fs.cpSync(path.join(dir, 'types'), path.join(copy, 'types'), { recursive: true });
  const output = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: copy, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return JSON.parse(output)[0].files.map((/** @type {{ path: string }} */ file) => file.path);
}

/**
 * The package's tarball, packed into `dir` from a copy of the checkout without scripts: no types/
 * (packedFiles() shows they ship), so no second generation. Returns the tarball's path.
 * @param {string} dir
 */
export function packTarball(dir) {
  const copy = copyCheckout(dir);
  const output = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: copy, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return path.join(dir, JSON.parse(output)[0].filename);
}

/** A copy of the checkout in `dir`/package, without what git ignores (and what is not ours): node_modules, a types/ made by an earlier pack, results. @param {string} dir */
function copyCheckout(dir) {
  const copy = path.join(dir, 'package');
  const skip = new Set(['.git', 'node_modules', 'types', 'coverage', 'prerendered', path.join('bench', 'results')].map((name) => path.join(ROOT, name)));
  fs.cpSync(ROOT, copy, { recursive: true, filter: (source) => !skip.has(source) });
  return copy;
}
