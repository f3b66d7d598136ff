import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors';

/**
 * What `--resume` reads: how far one input file was imported into one project of one host. Records up to
 * `through` (lines, or rows) were all acknowledged by capture or written to the rejected file. It lags the truth
 * (written after each acknowledged batch, never before), so a kill leaves it at or behind what was sent; what a
 * resumed run sends twice carries the same uuids and is stored once.
 */
export interface ImportState {
  version: 1;
  file: string;
  size: number;
  mtimeMs: number;
  host: string;
  project: number;
  through: number;
  accepted: number;
  rejected: number;
  complete: boolean;
}

/** `<file>.plover-import.json` beside the input, or in `dir` (named after the input's absolute path) when given. */
export function statePath(file: string, dir: string | undefined): string {
  const absolute = path.resolve(file);
  if (!dir) return `${absolute}.plover-import.json`;
  return path.join(dir, `${absolute.replace(/[^A-Za-z0-9._-]+/g, '_')}.plover-import.json`);
}

/** The file's state to resume from: none when it has none; a UserError when it was written for another file, host or project. */
export function readState(stateFile: string, expected: Pick<ImportState, 'file' | 'size' | 'mtimeMs' | 'host' | 'project'>): ImportState | undefined {
  let state: ImportState;
  try {
    state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as ImportState;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UserError(`${stateFile}: not a readable import state (${(error as Error).message}); remove it to import from the start`);
  }
  const changed =
    state.file !== expected.file
      ? 'it is for another file'
      : state.size !== expected.size || state.mtimeMs !== expected.mtimeMs
        ? 'the file changed since'
        : state.host !== expected.host || state.project !== expected.project
          ? `it is for project ${state.project} on ${state.host}`
          : undefined;
  if (changed) throw new UserError(`${expected.file}: cannot resume from ${stateFile}: ${changed}; remove it to import from the start`);
  return state;
}

/** Replaces the state file atomically (a kill leaves the old state or the new, never half of one). */
export function writeState(stateFile: string, state: ImportState): void {
  const temp = `${stateFile}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temp, `${JSON.stringify(state)}\n`);
    fs.renameSync(temp, stateFile);
  } catch (error) {
    throw new UserError(
      `cannot write the import state ${stateFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); pass --state-dir DIR`,
    );
  }
}
