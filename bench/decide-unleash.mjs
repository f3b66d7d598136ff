/**
 * unleash-server for bench/decide.ts, configured as the Unleash baseline of BENCHMARKS.md: one process, defaults
 * except logging, version check and telemetry off, and the SDK rate limits raised (they would answer 429 to half the
 * load). Needs Node ≥ 22 and unleash-server installed under UNLEASH_DIR (bench/decide.ts does both). Tokens and
 * rate limits come from the environment bench/decide.ts sets (INIT_*_API_TOKENS, *_RATE_LIMIT_PER_MINUTE).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const { start } = await import(pathToFileURL(path.join(process.env.UNLEASH_DIR, 'node_modules/unleash-server/dist/lib/server-impl.js')).href);
const database = new URL(process.env.UNLEASH_DATABASE_URL);
await start({
  db: {
    host: database.hostname,
    port: Number(database.port || 5432),
    user: database.username,
    password: database.password,
    database: database.pathname.slice(1),
    ssl: false,
  },
  server: { host: '127.0.0.1', port: Number(process.env.UNLEASH_PORT) },
  logLevel: 'warn',
  versionCheck: { enable: false },
  telemetry: false,
});
