import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { readdirSync } from 'node:fs';

const driverImports = ['express', 'kafkajs', 'pg', '@clickhouse/client', 'chdb', '@electric-sql/pglite'];

// The layering of the workspaces, shown in editors; test/import-graph.test.ts checks the whole graph
// (relative paths, dynamic imports, cycles and package.json dependencies too).
const compositionRoot = 'standalone';
const services = readdirSync(new URL('./services', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const importOf = (names, message) => ({ regex: `^@plover/(${names.join('|')})(/|$)`, message });
const noServices = importOf(services, 'Packages never import services.');

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
    files: ['packages/*/src/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [noServices] }] },
  },
  {
    // Domain packages never see a driver, nor the PGlite adapter: they get an `Sql`, chosen in composition roots.
    files: [
      'packages/core/src/**',
      'packages/accounts/src/**',
      'packages/config/src/**',
      'packages/contracts/src/**',
      'packages/flag-store/src/**',
      'packages/flags/src/**',
      'packages/insights/src/**',
      'packages/persons/src/**',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...driverImports, '@plover/postgres/pglite'],
          patterns: [noServices, { group: driverImports.map((name) => `${name}/*`), message: 'Domain packages talk to the Sql port, not a driver.' }],
        },
      ],
    },
  },
  ...services
    .filter((service) => service !== compositionRoot)
    .map((service) => ({
      files: [`services/${service}/src/**`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              importOf(
                services.filter((other) => other !== service),
                `Services never import each other; services/${compositionRoot} wires them.`,
              ),
            ],
          },
        ],
      },
    })),
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
