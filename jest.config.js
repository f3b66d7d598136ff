/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  // Workspace packages resolve to their TypeScript sources (see the "plover-source" export condition).
  testEnvironmentOptions: { customExportConditions: ['plover-source', 'node', 'require', 'default'] },
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  testMatch: [
    '<rootDir>/packages/*/test/**/*.test.ts',
    '<rootDir>/services/*/test/**/*.test.ts',
    '<rootDir>/apps/*/test/**/*.test.ts',
    '<rootDir>/test/**/*.test.ts',
  ],
  testTimeout: 60000,
  maxWorkers: 2,
};
