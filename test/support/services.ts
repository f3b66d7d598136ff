import { spawnSync } from 'node:child_process';

/**
 * Integration suites run against real services named by environment variables (scripts/test.sh sets them).
 * Outside CI a missing variable skips the suite's real-service half; under CI=true it fails the run,
 * because a suite that silently skips proves nothing.
 */
export interface RealService {
  /** Connection string, or undefined when the service is not configured (local runs only). */
  url: string | undefined;
}

export function realService(variable: 'TEST_DATABASE_URL' | 'TEST_KAFKA_BROKERS' | 'TEST_CLICKHOUSE_URL'): RealService {
  const url = process.env[variable];
  if (!url && process.env.CI === 'true') {
    throw new Error(`${variable} is not set: under CI=true integration suites must run against the real service`);
  }
  return { url: url || undefined };
}

/** `describe` when the service is configured, `describe.skip` otherwise (never under CI, see realService). */
export function describeWith(service: RealService): jest.Describe {
  return service.url ? describe : describe.skip;
}

/**
 * Whether the command-line tool `name` is on the PATH. Outside CI a missing tool skips the suites that need it;
 * under CI=true it fails the run (.ci/run installs the tools), for the same reason as realService.
 */
export function availableTool(name: string): boolean {
  const found = spawnSync(name, ['-V'], { stdio: 'ignore' }).error === undefined;
  if (!found && process.env.CI === 'true') throw new Error(`${name} is not installed: under CI=true the suites that need it must run`);
  return found;
}
