import type { IncomingMessage } from 'node:http';

export type BodyResult =
  | { ok: true; body: Buffer }
  | { ok: false; size: number; complete: boolean };

/** How far past the cap an oversize body is still read (and discarded) to report its real size. */
const DRAIN_LIMIT = 1024 * 1024;

/**
 * Reads a request body, counting the raw bytes as they arrive whatever
 * Content-Length says or when the body is chunked. A body over `limit` is not
 * kept: the rest is read and thrown away (up to 1 MiB past the cap) so the
 * observed size can be reported and the connection stays usable; past that the
 * read stops and `complete` is false.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit + DRAIN_LIMIT) {
      resolve({ ok: false, size: declared, complete: false });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    let done = false;
    const finish = (r: BodyResult) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (over) {
        if (size > limit + DRAIN_LIMIT) {
          req.pause();
          finish({ ok: false, size, complete: false });
        }
        return;
      }
      if (size > limit) {
        over = true;
        chunks.length = 0;
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () =>
      finish(over ? { ok: false, size, complete: true } : { ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    const onError = (err: Error) => {
      if (done) return;
      done = true;
      reject(err);
    };
    const onAborted = () => onError(new Error('request aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
