import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { action, dataDirOption } from './command';
import { UserError } from './errors';

/**
 * The commands that run embedded Plover or act on its data dir directly (the server must be stopped for all but
 * `start`: PGlite, chDB and the local log are single-process, and the data dir's lock says so). They run
 * services/standalone's own entry points — `main` and the admin `cli` behind `npm run migrate|backup|…` — as a
 * child process with the terminal: the CLI imports no service, so that it installs without chDB where only the
 * HTTP commands are wanted (the distributed images), and `start` gets the Node flags `npm start` uses.
 */
/** The Node flags embedded Plover runs with: services/standalone/node-flags.json, the one list of them. */
function standaloneNodeFlags(): string[] {
  return JSON.parse(fs.readFileSync(path.join(standaloneDir(), 'node-flags.json'), 'utf8')) as string[];
}

function standaloneDir(): string {
  let dir: string;
  try {
    dir = path.dirname(require.resolve('@plover/standalone/package.json'));
    require.resolve('chdb', { paths: [dir] });
  } catch {
    throw new UserError(
      'embedded Plover (services/standalone with chDB) is not installed here; in distributed mode run ' +
        '`node services/management/dist/cli.js migrate|bootstrap|delete-events` and start each service',
    );
  }
  return dir;
}

function standaloneEntry(name: 'main' | 'cli'): string {
  const dir = standaloneDir();
  // Run from the TypeScript sources (a checkout, through tsx), this CLI starts the sources; built, the build.
  const source = __filename.endsWith('.ts');
  const entry = path.join(dir, source ? `src/${name}.ts` : `dist/${name}.js`);
  if (!fs.existsSync(entry)) throw new UserError(`${entry} is missing: run npm run build first`);
  return entry;
}

/**
 * Runs `entry` in a child Node with this process's flags (tsx and the source condition in a checkout) plus
 * `nodeFlags`, sharing the terminal; resolves with its exit code. SIGTERM and SIGHUP sent to this process are
 * passed on; SIGINT from a terminal reaches the child itself (same process group), so it is not sent twice.
 */
function runChild(entry: string, args: string[], env: NodeJS.ProcessEnv, nodeFlags: string[] = []): Promise<number> {
  const child = spawn(process.execPath, [...process.execArgv, ...nodeFlags, entry, ...args], { stdio: 'inherit', env });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  const handlers = { SIGTERM: forward('SIGTERM'), SIGHUP: forward('SIGHUP'), SIGINT: () => undefined };
  for (const [signal, handler] of Object.entries(handlers)) process.on(signal, handler);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      for (const [name, handler] of Object.entries(handlers)) process.off(name, handler);
      resolve(code ?? (signal === 'SIGINT' || signal === 'SIGTERM' ? 0 : 1));
    });
  });
}

interface DataDirOptions {
  dataDir: string;
}

/** `env` is the CLI's environment: the children get it with the data dir (and port) the options name. */
export function embeddedCommands(program: Command, env: NodeJS.ProcessEnv): void {
  /** The admin commands of services/standalone/src/cli.ts, on the data dir given by --data-dir / PLOVER_DATA_DIR. */
  const admin = (args: string[], options: DataDirOptions): Promise<number> =>
    runChild(standaloneEntry('cli'), args, { ...env, PLOVER_DATA_DIR: options.dataDir });

  program
    .command('start')
    .summary('run embedded Plover on --data-dir')
    .description(
      'Runs embedded Plover as `npm start` does: capture, decide, management, the web console and ingestion on one port, over PGlite, ' +
        'chDB and a local log in the data dir. Configuration is the environment (README, Configuration); on a terminal the log is ' +
        'readable text and a banner says where to send events once it is ready. Ctrl-C or SIGTERM stops it cleanly.',
    )
    .addOption(dataDirOption())
    .option('--port <port>', 'HTTP port (PORT; default 8000)')
    .addHelpText('after', '\nExamples:\n  $ plover start\n  $ plover start --data-dir /srv/plover --port 8080\n  $ LOG_FORMAT=json plover start > plover.log')
    .action(
      action((options: DataDirOptions & { port?: string }) =>
        runChild(
          standaloneEntry('main'),
          [],
          { ...env, PLOVER_DATA_DIR: options.dataDir, ...(options.port ? { PORT: options.port } : {}) },
          standaloneNodeFlags(),
        ),
      ),
    );

  program
    .command('migrate')
    .summary('migrate the data dir (server stopped)')
    .description('bring the data dir to the current schema without starting (the server must be stopped); prints the migrations as JSON')
    .addOption(dataDirOption())
    .addHelpText('after', '\nExamples:\n  $ plover migrate --data-dir /srv/plover')
    .action(action((options: DataDirOptions) => admin(['migrate'], options)));

  program
    .command('delete-events')
    .summary('run queued person event deletions now (server stopped)')
    .description('run the queued event deletions of deleted persons now, instead of at the weekly schedule (the server must be stopped)')
    .addOption(dataDirOption())
    .addHelpText('after', '\nExamples:\n  $ plover delete-events')
    .action(action((options: DataDirOptions) => admin(['delete-events'], options)));

  program
    .command('repair-log')
    .summary('check or repair the local log (server stopped)')
    .description('show, and with --cut repair, damage that keeps the local log from opening (the server must be stopped)')
    .addOption(dataDirOption())
    .option('--cut', 'truncate each damaged partition at its first damaged record and move back consumer groups past it')
    .option('--json', 'print what was found (or cut) as JSON')
    .addHelpText('after', '\nExamples:\n  $ plover repair-log\n  $ plover repair-log --cut')
    .action(
      action((options: DataDirOptions & { cut?: boolean; json?: boolean }) =>
        admin(['repair-log', ...(options.cut ? ['--cut'] : []), ...(options.json ? ['--json'] : [])], options),
      ),
    );

  program
    .command('backup')
    .summary('back the data dir up (server stopped)')
    .description('copy the data dir into an empty directory, with the server stopped (README, Durability and backups); prints its manifest as JSON')
    .argument('<dir>', 'an empty (or new) directory')
    .addOption(dataDirOption())
    .addHelpText('after', '\nExamples:\n  $ plover backup /backups/plover-$(date +%F)')
    .action(action((dir: string, options: DataDirOptions) => admin(['backup', dir], options)));

  program
    .command('restore')
    .summary('restore a backup into an empty data dir')
    .description('restore a backup into an empty data dir, then start on it; prints the manifest as JSON')
    .argument('<dir>', 'a directory written by plover backup')
    .addOption(dataDirOption())
    .addHelpText('after', '\nExamples:\n  $ plover restore /backups/plover-2026-11-26 --data-dir /srv/plover')
    .action(action((dir: string, options: DataDirOptions) => admin(['restore', dir], options)));
}
