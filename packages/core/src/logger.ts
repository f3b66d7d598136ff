import pino from 'pino';

export type Logger = pino.Logger;

/** Keys and tokens never reach the logs, whatever object carries them. */
const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.api_token',
  '*.api_key',
  '*.token',
  '*.password',
  '*.secret',
  '*.personal_api_key',
];

export function createLogger(options: { service: string; level: string }): Logger {
  return pino({ name: options.service, level: options.level, redact: { paths: REDACT, censor: '[redacted]' } });
}

/** A logger that writes nothing, for tests and tools that only need the interface. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
