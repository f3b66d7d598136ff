// Runs `node <args>` in a child that shares the terminal, as a checkout's launchers do (`plover`, `npm start`):
// a terminal's Ctrl-C reaches the child itself (same process group); a SIGTERM or SIGHUP sent to this process is
// passed on. The child's exit code, or the signal that ended it, is this process's.
import { spawn } from 'node:child_process';

export function runChild(args) {
  const child = spawn(process.execPath, args, { stdio: 'inherit' });
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
}
