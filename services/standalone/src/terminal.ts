/**
 * What embedded Plover shows a person at a terminal: readable log lines instead of JSON, and once it is ready a
 * banner saying where to send events, where the console is, the keys (the personal key on the first start only,
 * when it is printed once) and posthog-js's snippet. A log that goes to a file or a pipe stays JSON lines.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Credentials } from '@plover/accounts';
import type { LogFormat } from '@plover/config';
import pinoPretty from 'pino-pretty';

/** pino-pretty on stdout when `format` asks for it or, with `auto`, when stdout is a terminal; undefined: JSON lines. */
export function prettyLogStream(format: LogFormat, stdout: NodeJS.WriteStream = process.stdout): NodeJS.WritableStream | undefined {
  if (format === 'json' || (format === 'auto' && stdout.isTTY !== true)) return undefined;
  return pinoPretty({ destination: 1, sync: true, colorize: stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true });
}

/** What the first start prints when the log is JSON: the keys, once (the personal key is stored hashed). */
export function firstStartText(credentials: Credentials, file: string): string {
  return [
    '',
    `Plover is set up. Keep these; they are also in ${file} (readable by you only):`,
    `  project API key (SDKs):        ${credentials.project.api_token}`,
    `  personal API key (management): ${credentials.personal_api_key.value}`,
    `  admin user:                    ${credentials.user.email}`,
    '',
  ].join('\n');
}

/** The project token of the data dir's credentials.json, when the file is there and readable. */
function storedToken(dataDir: string): string | undefined {
  try {
    const stored = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')) as Partial<Credentials>;
    return stored.project?.api_token;
  } catch {
    return undefined;
  }
}

/** The banner printed once the server listens; `created` only on the first start. */
export function readyBanner(options: { host: string; port: number; dataDir: string; created?: Credentials; lowDisk?: string | undefined }): string {
  const shown = options.host === '0.0.0.0' || options.host === '::' ? 'localhost' : options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${shown}:${options.port}`;
  const token = options.created?.project.api_token ?? storedToken(options.dataDir);
  const lines = [
    '',
    `  Plover is ready — data in ${path.resolve(options.dataDir)}`,
    '',
    `  Send events to    ${url}   (posthog-js, posthog-node, posthog-python: api_host)`,
    `  Web console       ${url}/`,
  ];
  if (token) lines.push(`  Project API key   ${token}   (for SDKs)`);
  if (options.created) {
    lines.push(
      `  Personal API key  ${options.created.personal_api_key.value}   (console sign-in, management API, plover CLI)`,
      `                    shown this once; also in ${path.join(path.resolve(options.dataDir), 'credentials.json')} (readable by you only)`,
    );
  }
  if (token) lines.push('', '  posthog-js:', `    posthog.init('${token}', { api_host: '${url}' })`);
  // A start below the watermark serves reads only until space is freed; say so where the operator looks.
  if (options.lowDisk) lines.push('', `  Read-only for now: ${options.lowDisk}`);
  lines.push('', '  Import events: npx plover import FILE      Status: npx plover status', '');
  return `${lines.join('\n')}\n`;
}
