import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const driverImports = ['express', 'kafkajs', 'pg', '@clickhouse/client', 'chdb', '@electric-sql/pglite'];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '.plover/**', 'coverage/**', '.cache/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: 'Read the environment only in packages/config or a composition root (main.ts).',
        },
      ],
    },
  },
  {
    // Composition roots, tests, scripts and benchmarks may read the environment.
    files: ['services/*/src/main.ts', 'services/*/src/cli.ts', 'packages/config/src/**', '**/test/**', 'bench/**', 'scripts/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    // Domain packages never see a driver: adapters are chosen in composition roots.
    files: ['packages/core/src/**', 'packages/accounts/src/**', 'packages/config/src/**', 'packages/flag-store/src/**'],
    rules: { 'no-restricted-imports': ['error', { paths: driverImports }] },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['**/test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
);
