#!/usr/bin/env node
// `npm start`: embedded Plover from the TypeScript sources (tsx, the `plover-source` export condition) with the
// Node flags of services/standalone/node-flags.json — the one list of them, read as well by `plover start`, the
// embedded test harness and the benches — in a child that shares the terminal.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runChild } from '../services/cli/bin/run-child.mjs';

const flags = JSON.parse(readFileSync(new URL('../services/standalone/node-flags.json', import.meta.url), 'utf8'));
const main = fileURLToPath(new URL('../services/standalone/src/main.ts', import.meta.url));
runChild([...flags, '--conditions=plover-source', '--import', import.meta.resolve('tsx'), main, ...process.argv.slice(2)]);
