#!/usr/bin/env node
import { Command } from 'commander';
import { embeddedCommands } from './embedded';
import { exportCommand } from './export';
import { importCommand } from './import/command';
import { keysCommand } from './keys';
import { statusCommand } from './status';

/**
 * `plover`: one program for everything an operator does from a shell (docs/cli.md). The commands that work on
 * data talk to a running Plover over HTTP, the same way for embedded and distributed mode.
 */
const program = new Command('plover')
  .description('Plover from the command line: import and export events, manage keys, check status, run embedded Plover')
  .showSuggestionAfterError()
  .configureOutput({ outputError: (text, write) => write(`plover: ${text.replace(/^error: /, '')}`) });

importCommand(program);
exportCommand(program);
keysCommand(program);
statusCommand(program);
embeddedCommands(program, process.env);

void program.parseAsync(process.argv);
