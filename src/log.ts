import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type PinoPrettyModule from 'pino-pretty';

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

/** How log lines are written: `auto` is pretty when stderr is a terminal (a person reads it), JSON lines otherwise. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** Whether a format setting means pretty lines on a stream that is (or is not) a terminal. */
export function isPretty(format: LogFormat, isTTY: boolean | undefined): boolean {
  return format === 'pretty' || (format === 'auto' && isTTY === true);
}

/**
 * The process logger on stderr, so stdout stays free for command output and
 * protocols: JSON lines for log collectors, or pino-pretty's coloured lines
 * when a person reads a terminal. Credentials are redacted either way.
 */
export function createLogger(level: string, format: LogFormat = 'auto'): Logger {
  const options = { level, base: { svc: true }, redact: { paths: REDACT_PATHS, censor: '[REDACTED]' } };
  let destination: DestinationStream = pino.destination(2);
  if (isPretty(format, process.stderr.isTTY)) {
    // Loaded only when used: a server writing JSON lines does not pay for the pretty printer.
    const { PinoPretty } = createRequire(import.meta.url)('pino-pretty') as typeof PinoPrettyModule;
    destination = PinoPretty({ destination: 2, sync: true, colorize: process.stderr.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,svc' });
  }
  return pino(options, destination);
}

/**
 * Node's process warnings (a dependency's deprecation notice, say) as log lines of their own: by default
 * Node prints them as free text on stderr, in the middle of the JSON lines a collector parses.
 * Returns the handler, so that a test can remove it.
 */
export function logProcessWarnings(logger: Logger): (w: Error) => void {
  const handler = (w: Error) => {
    logger.warn({ warning: { name: w.name, code: (w as NodeJS.ErrnoException).code, message: w.message } }, 'Node.js process warning');
  };
  process.removeAllListeners('warning');
  process.on('warning', handler);
  return handler;
}
