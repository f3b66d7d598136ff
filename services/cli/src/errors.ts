/** Exit codes of every command (docs/cli.md). */
export const EXIT = {
  ok: 0,
  /** A wrong argument, an unreachable server, a refused key, a bad file with --strict: one line on stderr. */
  user: 1,
  /** An import that stored some events and rejected or could not read others. */
  partial: 2,
} as const;

/**
 * An error the user can act on: printed as one line (`plover: <message>`), never with a stack, and the process
 * exits with `exitCode`. Anything else that escapes a command is a bug and is printed with its stack.
 */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.user,
  ) {
    super(message);
    this.name = 'UserError';
  }
}
