import pino from 'pino';

export type Logger = pino.Logger;

/** Keys and tokens never reach the logs, whatever object carries them. */
const REDACT = ['req.headers.authorization', 'req.headers.cookie', '*.api_token', '*.api_key', '*.token', '*.password', '*.secret', '*.personal_api_key'];

/**
 * Services log JSON lines to stdout; command-line tools to stderr so their stdout stays a clean result. `stream`
 * replaces the destination (embedded mode's readable text on a terminal).
 */
export function createLogger(options: { service: string; level: string; toStderr?: boolean; stream?: pino.DestinationStream }): Logger {
  const destination = options.stream ?? pino.destination({ fd: options.toStderr ? 2 : 1, sync: true });
  return pino({ name: options.service, level: options.level, redact: { paths: REDACT, censor: '[redacted]' } }, destination);
}

/** A logger that writes nothing, for tests and tools that only need the interface. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * After an uncaught exception the process is in an unknown state, so it logs the error and exits 1 for its
 * supervisor to restart it. Unhandled rejections arrive here too (Node raises them as uncaught exceptions,
 * `origin` says which). Node alone would also exit, but with a bare stack on stderr instead of a log record.
 */
export function exitOnUncaughtErrors(logger: Logger): void {
  process.on('uncaughtException', (error, origin) => {
    logger.fatal({ err: error, origin }, 'uncaught error, exiting');
    process.exit(1);
  });
}
