import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { readBody } from '../../src/http/body.js';

function fakeRequest(chunks: Buffer[], headers: Record<string, string> = {}): IncomingMessage {
  const s = new PassThrough();
  (s as unknown as { headers: Record<string, string> }).headers = headers;
  setImmediate(() => {
    for (const c of chunks) s.write(c);
    s.end();
  });
  return s as unknown as IncomingMessage;
}

describe('readBody', () => {
  it('returns the exact bytes up to the cap', async () => {
    const r = await readBody(fakeRequest([Buffer.from('ab'), Buffer.from('cd')]), 4);
    expect(r).toEqual({ ok: true, body: Buffer.from('abcd') });
  });
  it('counts the raw bytes past the cap, whatever Content-Length says', async () => {
    const r = await readBody(fakeRequest([Buffer.alloc(3), Buffer.alloc(3)], { 'content-length': '2' }), 4);
    expect(r).toEqual({ ok: false, size: 6, complete: true });
  });
  it('refuses at once a declared length far beyond the cap', async () => {
    const r = await readBody(fakeRequest([Buffer.alloc(1)], { 'content-length': String(10 * 1024 * 1024) }), 4);
    expect(r).toEqual({ ok: false, size: 10 * 1024 * 1024, complete: false });
  });
  it('stops reading 1 MiB past the cap and says the size is a lower bound', async () => {
    const big = Array.from({ length: 40 }, () => Buffer.alloc(64 * 1024));
    const r = await readBody(fakeRequest(big), 1024);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.complete).toBe(false);
      expect(r.size).toBeGreaterThan(1024 + 1024 * 1024);
      expect(r.size).toBeLessThan(40 * 64 * 1024);
    }
  });
});
