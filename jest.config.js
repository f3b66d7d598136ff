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
  // A fresh worker process for every test file. chDB's engine is one per process and bound to one data directory;
  // Plover opens it once per process, but a shared worker would stop and restart it on a new directory for each
  // file that uses it, dozens of times, which Plover never does. A file that leaves it open (a hung close) would
  // otherwise also fail every later chDB file in that worker.
  workerIdleMemoryLimit: 0,
};
