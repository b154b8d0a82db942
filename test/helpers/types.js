// @ts-check
/**
 * The shipped type declarations, as users get them: generated from lib/'s
 * JSDoc into a temporary directory (as `prepack` does), then a TypeScript
 * program that uses them compiled under strict.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/**
 * Generate the declarations into `dir`/types and compile the programs (each
 * importing from './types/index.js') in `dir`, together: tsc's output, ""
 * when they compile.
 * @param {string} dir a temporary directory
 * @param {Record<string, string>} programs file name (`.ts`, or `.mts` for an ES module that awaits at its top level) -> source
 */
export function compileAgainstTypes(dir, programs) {
  execFileSync(process.execPath, [TSC, '-p', 'tsconfig.types.json', '--outDir', path.join(dir, 'types')], { cwd: ROOT, stdio: 'pipe' });
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
