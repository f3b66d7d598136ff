/**
 * Preloaded (`--import`) into a service's process by fatal-errors.test.ts, never by a service itself. Each line
 * on stdin raises one fatal error: `throw` an uncaught exception, `reject` an unhandled rejection, `oom` a V8
 * heap overflow.
 */
import readline from 'node:readline';

const kept: string[][] = [];

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'throw') throw new Error('test: uncaught exception');
  if (line === 'reject') void Promise.reject(new Error('test: unhandled rejection'));
  if (line === 'oom') setInterval(() => kept.push(Array.from({ length: 100_000 }, (_, i) => `row ${i}`)), 1);
});
