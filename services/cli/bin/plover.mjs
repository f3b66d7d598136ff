#!/usr/bin/env node
// `plover` in a checkout (`npx plover …`): runs the TypeScript sources the way `npm start` runs the server (tsx,
// the `plover-source` export condition), in a child that shares the terminal. Built images run
// `node services/cli/dist/cli.js` instead.
import { fileURLToPath } from 'node:url';
import { runChild } from './run-child.mjs';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
runChild(['--conditions=plover-source', '--import', import.meta.resolve('tsx'), cli, ...process.argv.slice(2)]);
