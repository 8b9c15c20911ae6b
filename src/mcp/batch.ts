import { Transform, type TransformCallback } from 'node:stream';
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/server';
import { AppError } from '../errors/app-error.js';

/**
 * Why a batch is refused. The protocol versions svc negotiates (2025-06-18 and
 * later) removed JSON-RPC batching; serving batches would also let one HTTP
 * request (one rate-limit token) run any number of calls.
 */
export const BATCH_REFUSED = 'JSON-RPC batches are not supported (MCP 2025-06-18 and later removed them): send one message per request';

/** The refusal of a batch, over HTTP and stdio alike (bad_request, JSON-RPC -32600 "Invalid Request"). */
export function batchRefusal(): AppError {
  return new AppError('bad_request', BATCH_REFUSED, { reason: 'batch' });
}

/** Whether a byte is JSON insignificant whitespace (RFC 8259). */
function isJsonSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/**
 * Reads a body until its first significant byte, without consuming it: the
 * returned stream replays what was read, then the rest. `first` is that byte
 * (null for a body of whitespace only, or whitespace past `limit` bytes, left
 * for the MCP handler to refuse as it does today).
 */
export async function peekFirstByte(body: ReadableStream<Uint8Array>, limit: number): Promise<{ first: number | null; body: ReadableStream<Uint8Array> }> {
  const reader = body.getReader();
  const head: Uint8Array[] = [];
  let seen = 0;
  let first: number | null = null;
  let ended = false;
  while (first === null && seen <= limit) {
    const { done, value } = await reader.read();
    if (done) {
      ended = true;
      break;
    }
    head.push(value);
    seen += value.length;
    const i = value.findIndex((b) => !isJsonSpace(b));
    if (i !== -1) first = value[i]!;
  }
  const replay = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = head.shift();
      if (next) return controller.enqueue(next);
      if (ended) return controller.close();
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return { first, body: replay };
}

/**
 * Sits between stdin and the SDK's stdio transport (newline-delimited
 * JSON-RPC): a line that is a JSON array is held back and reported through
 * `onBatch` (the caller answers -32600), every other line passes unchanged. A
 * partial line longer than the transport's own buffer limit passes through
 * for the transport to refuse.
 */
export class BatchGate extends Transform {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onBatch: () => void) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let buf = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    for (let nl = buf.indexOf(0x0a); nl !== -1; nl = buf.indexOf(0x0a)) {
      this.line(buf.subarray(0, nl + 1));
      buf = buf.subarray(nl + 1);
    }
    if (buf.length > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
      this.push(buf);
      buf = Buffer.alloc(0);
    }
    this.pending = buf;
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.pending.length > 0) this.line(this.pending);
    done();
  }

  private line(line: Buffer): void {
    const i = line.findIndex((b) => !isJsonSpace(b));
    if (i !== -1 && line[i] === 0x5b) this.onBatch();
    else this.push(line);
  }
}
