/**
 * A process for chdb-fatal.test.ts: opens chDB through ChdbClickHouse the way embedded mode does, then dies of
 * the fatal error named by its argument, `oom` (fills the V8 heap) or `abort` (a native abort).
 *
 * Run from the repository root: node --conditions=plover-source --import tsx packages/chdb/test/support/fatal-child.ts <dataDir> <oom|abort>
 */
import { ChdbClickHouse } from '@plover/chdb';

async function main(): Promise<void> {
  const [dataDir = '', fault] = process.argv.slice(2);
  // Closing the engine and opening it again restarts it, and a restarting engine installs its handlers again.
  await (await ChdbClickHouse.open({ dataDir })).close();
  const clickhouse = await ChdbClickHouse.open({ dataDir });
  await clickhouse.query('probe', 'SELECT 1');
  process.stdout.write('open\n');
  if (fault === 'abort') process.abort();
  const kept: string[][] = [];
  setInterval(() => kept.push(Array.from({ length: 100_000 }, (_, i) => `row ${i}`)), 1);
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(2);
});
