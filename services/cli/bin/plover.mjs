#!/usr/bin/env node
// `plover` in a checkout (`npx plover …`): runs the TypeScript sources the way `npm start` runs the server (tsx,
// the `plover-source` export condition), in a child that shares the terminal. Its exit code, or the signal that
// ended it, is this process's. Built images run `node services/cli/dist/cli.js` instead.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const child = spawn(process.execPath, ['--conditions=plover-source', '--import', import.meta.resolve('tsx'), cli, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
// A terminal's Ctrl-C reaches the child itself (same process group); a SIGTERM or SIGHUP sent to this process is passed on.
process.on('SIGINT', () => undefined);
for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
