import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { AppError } from '../errors/app-error.js';

/** The most bytes of request line and headers together (Node's default); a longer URL or header is refused. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** What a request Node's parser refused was wrong with, in words a client can act on. */
const PARSE_ERRORS: Record<string, string> = {
  HPE_INVALID_CONTENT_LENGTH: 'Content-Length must be one non-negative decimal number',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'Content-Length must appear once',
  HPE_INVALID_TRANSFER_ENCODING: 'Transfer-Encoding must not be combined with Content-Length, and chunked must come last',
  HPE_INVALID_CHUNK_SIZE: 'a chunk size is not a hexadecimal number',
  HPE_HEADER_OVERFLOW: `the request line and headers exceed ${MAX_HEADER_BYTES} bytes`,
  HPE_INVALID_METHOD: 'the request line does not start with an HTTP method',
  HPE_INVALID_URL: 'the request target is not a valid URL path',
  HPE_INVALID_VERSION: 'the request line does not end with a supported HTTP version',
  HPE_INVALID_CONSTANT: 'the request line is malformed',
  HPE_INVALID_HEADER_TOKEN: 'a header name holds a character headers cannot have',
  HPE_INVALID_EOF_STATE: 'the connection ended in the middle of a request',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'chunk extensions are too long',
};

/** The error a request Node refused before our handlers saw it gets: 408 when too slow, else 400. */
export function clientErrorOf(err: Error & { code?: string }): AppError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new AppError('request_timeout', 'the request headers or body did not arrive in time');
  }
  const why = (err.code && PARSE_ERRORS[err.code]) ?? 'the request is not valid HTTP/1.1';
  return new AppError('bad_request', `malformed HTTP request: ${why}`);
}

/**
 * The server's `clientError` hook: a request with broken framing, or one
 * whose headers or body are too slow, gets our JSON error shape and the
 * connection is closed. A connection that already had an answer, or is gone,
 * is just closed.
 */
export function answerClientError(logger: Logger): (err: Error & { code?: string }, socket: Duplex) => void {
  return (err, socket) => {
    const s = socket as Duplex & { bytesWritten?: number };
    if (err.code === 'ECONNRESET' || !s.writable || (s.bytesWritten ?? 0) > 0) {
      s.destroy();
      return;
    }
    const appErr = clientErrorOf(err);
    const body = JSON.stringify(appErr.toBody());
    s.end(
      `HTTP/1.1 ${appErr.status} ${appErr.status === 408 ? 'Request Timeout' : 'Bad Request'}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
    logger.debug({ err: err.message, code: err.code }, 'client error');
  };
}
