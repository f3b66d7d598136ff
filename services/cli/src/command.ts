import { InvalidArgumentError, Option, type Command } from 'commander';
import { Api, resolveApiKey } from './api';
import { EXIT, UserError } from './errors';
import { Progress, type ProgressFactory } from './progress';

/** The options every command that talks to a running Plover takes. */
export interface ConnectionOptions {
  host: string;
  dataDir: string;
  apiKey?: string;
  project: string;
  json?: boolean;
  progress: boolean;
}

/** Adds --host, --api-key, --project and --json (each with its environment variable) to `command`. */
export function withConnection(command: Command): Command {
  return command
    .addOption(
      new Option('--host <url>', 'the running Plover (embedded, or the distributed capture/management front)')
        .env('PLOVER_HOST')
        .default('http://localhost:8000'),
    )
    .addOption(
      new Option('--api-key <key>', "personal API key (phx_…); for a Plover on this machine, embedded Plover's credentials.json when not given").env(
        'PLOVER_API_KEY',
      ),
    )
    .addOption(new Option('--project <id>', 'project id, or @current (the key owner’s current project)').env('PLOVER_PROJECT').default('@current'))
    .addOption(dataDirOption().hideHelp())
    .option('--json', 'print the result as one JSON document on stdout, for scripts');
}

/** Embedded Plover's data dir (PLOVER_DATA_DIR, as the server reads it). */
export function dataDirOption(): Option {
  return new Option('--data-dir <dir>', 'embedded Plover’s data dir').env('PLOVER_DATA_DIR').default('./.plover');
}

export function apiOf(options: ConnectionOptions): Api {
  return new Api({ host: options.host, apiKey: resolveApiKey(options.apiKey, options.host, options.dataDir), project: options.project });
}

/** A progress display on stderr: a bar on a terminal, plain lines every 5 s otherwise (`--no-progress`: none beyond the last line). */
export function progressFactory(options: { progress: boolean }): ProgressFactory {
  return (display) =>
    new Progress({
      ...display,
      tty: options.progress && process.stderr.isTTY === true,
      stream: process.stderr,
      intervalMs: options.progress ? 5000 : 2 ** 31 - 1,
    });
}

/** Writes a command's result: `json` as one JSON document when --json, else the human lines. */
export function output(options: { json?: boolean }, json: unknown, human: () => string): void {
  process.stdout.write(options.json ? `${JSON.stringify(json, null, 2)}\n` : human());
}

/**
 * A command's action: its resolved exit code becomes the process's; a UserError is one line on stderr and its
 * exit code; anything else is a bug, printed with its stack, exit 1.
 */
export function action<A extends unknown[]>(run: (...args: A) => Promise<number | void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      process.exitCode = (await run(...args)) ?? EXIT.ok;
    } catch (error) {
      if (error instanceof UserError) {
        process.stderr.write(`plover: ${error.message}\n`);
        process.exitCode = error.exitCode;
        return;
      }
      process.stderr.write(`plover: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = EXIT.user;
    }
  };
}

/** A positive integer option. */
export function positiveInteger(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be a positive integer.`);
    return n;
  };
}
