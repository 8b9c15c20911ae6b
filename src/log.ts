import { pino, type Logger } from 'pino';

/** Paths pino removes from every log line: credentials never reach a log. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  'key',
  'secret',
  'api_key',
  '*.api_key',
  '*.secret',
  '*.token',
];

/** Strips credential query parameters (api_key, a report `link`) from a URL before it is logged. */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:api_key|link)=)[^&#]*/gi, '$1[REDACTED]');
}

/** The process logger: JSON lines on stderr, so stdout stays free for command output and protocols. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { svc: true }, redact: { paths: REDACT_PATHS, censor: '[REDACTED]' } }, pino.destination(2));
}
