import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { logProcessWarnings } from '../../src/log.js';

describe('process warnings in the log', () => {
  let handler: ((w: Error) => void) | undefined;
  afterEach(() => {
    if (handler) process.off('warning', handler);
  });

  it('writes a deprecation notice as one JSON log line, and nothing else reaches stderr for it', async () => {
    const lines: string[] = [];
    handler = logProcessWarnings(pino({ level: 'info', base: { svc: true } }, { write: (l: string) => void lines.push(l) }));
    const stderr: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      process.emitWarning('Calling client.query() when the client is already executing a query is deprecated', { type: 'DeprecationWarning', code: 'PG_TEST' });
      // Warnings are emitted on the next tick.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.stderr.write = write;
    }
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 40,
      svc: true,
      msg: 'Node.js process warning',
      warning: { name: 'DeprecationWarning', code: 'PG_TEST', message: expect.stringContaining('already executing a query') },
    });
    expect(stderr.join('')).not.toContain('already executing');
    expect(process.listeners('warning')).toEqual([handler]);
  });
});
