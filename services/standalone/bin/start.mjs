#!/usr/bin/env node
// `npm start`: embedded Plover from the TypeScript sources (tsx, the `plover-source` export condition) with the
// Node flags of ../node-flags.json — the one list of them, read as well by `plover start`, the embedded test
// harness and the benches — in a child that shares the terminal. Its exit code, or the signal that ended it, is
// this process's.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const flags = JSON.parse(readFileSync(new URL('../node-flags.json', import.meta.url), 'utf8'));
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const child = spawn(process.execPath, [...flags, '--conditions=plover-source', '--import', import.meta.resolve('tsx'), main, ...process.argv.slice(2)], {
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
