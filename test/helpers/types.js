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
 * Generate the declarations into `dir`/types and compile `source` (importing
 * from './types/index.js') as `dir`/`file`: tsc's output, "" when it compiles.
 * @param {string} dir a temporary directory
 * @param {string} file the program's name: `.ts`, or `.mts` for an ES module that awaits at its top level
 * @param {string} source
 */
export function compileAgainstTypes(dir, file, source) {
  execFileSync(process.execPath, [TSC, '-p', 'tsconfig.types.json', '--outDir', path.join(dir, 'types')], { cwd: ROOT, stdio: 'pipe' });
  fs.writeFileSync(path.join(dir, file), source);
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022',
      // The declarations import undici, lru-cache...: not resolvable from a temporary directory, and not what is tested.
      skipLibCheck: true, types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')],
    },
    files: [file],
  }));
  try {
    execFileSync(process.execPath, [TSC, '-p', dir], { stdio: 'pipe', encoding: 'utf8' });
    return '';
  } catch (error) {
    return String(/** @type {{ stdout?: string }} */ (error).stdout ?? error);
  }
}
