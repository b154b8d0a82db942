// @ts-check
import js from '@eslint/js';
import globals from 'globals';

export default [
  { ignores: ['node_modules/', 'coverage/', 'types/', 'bench/results/', 'prerendered/'] },
  js.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      'no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      'no-empty': ['error', { allowEmptyCatch: false }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-var': 'error',
      'prefer-const': 'error',
      'no-throw-literal': 'error',
      'no-return-await': 'off',
      'no-process-exit': 'off',
      'no-control-regex': 'off',
    },
  },
  {
    // The library never ends the process: only bin/ may.
    files: ['lib/**/*.js'],
    rules: { 'no-restricted-syntax': ['error', { selector: "CallExpression[callee.object.name='process'][callee.property.name='exit']", message: 'lib/ never calls process.exit(); return an exit code' }] },
  },
  {
    files: ['fixtures/**/*.js', 'test/**/*.js', 'bench/**/*.js'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
];
