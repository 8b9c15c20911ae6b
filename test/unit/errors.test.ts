import { describe, expect, it } from 'vitest';
import { AppError, toAppError } from '../../src/errors/app-error.js';
import { ERRORS, exitCodeOf, isErrorCode, jsonRpcCodeOf, RPC_INTERNAL_ERROR, statusOf, type ErrorCode } from '../../src/errors/codes.js';
import { rpcErrorMessage } from '../../src/mcp/rpc-error.js';

const codes = Object.keys(ERRORS) as ErrorCode[];

describe('the error table', () => {
  it('gives every code its HTTP status, CLI exit code and (at the protocol level) JSON-RPC code', () => {
    expect(statusOf('validation_failed')).toBe(400);
    expect(statusOf('forbidden_host')).toBe(403);
    expect(statusOf('destination_refused')).toBe(422);
    expect(statusOf('service_unavailable')).toBe(503);
    expect(jsonRpcCodeOf('unauthorized')).toBe(-32001);
    expect(jsonRpcCodeOf('rate_limited')).toBe(-32029);
    expect(jsonRpcCodeOf('bad_request')).toBe(-32600);
    expect(jsonRpcCodeOf('validation_failed')).toBe(-32602);
    expect(jsonRpcCodeOf('not_found')).toBe(RPC_INTERNAL_ERROR);
  });

  it('exits 2 for exactly the 400 codes (usage-like errors), 1 for every other code', () => {
    for (const code of codes) expect([code, exitCodeOf(code)]).toEqual([code, statusOf(code) === 400 ? 2 : 1]);
  });

  it('AppError takes its status from the table, and its body has the documented shape', () => {
    const e = new AppError('not_found', 'no such thing', { field: 'id' });
    expect(e.status).toBe(404);
    expect(JSON.stringify(e.toBody('req_1'))).toBe('{"error":{"code":"not_found","message":"no such thing","details":{"field":"id"},"request_id":"req_1"}}');
    expect(JSON.stringify(new AppError('conflict', 'x').toBody())).toBe('{"error":{"code":"conflict","message":"x","details":{}}}');
  });

  it('knows its codes and turns anything else into internal_error or service_unavailable', () => {
    expect(isErrorCode('forbidden_host')).toBe(true);
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode('teapot')).toBe(false);
    expect(toAppError(new Error('boom')).code).toBe('internal_error');
    const busy = toAppError(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }));
    expect([busy.code, busy.status, busy.headers]).toEqual(['service_unavailable', 503, { 'Retry-After': '1' }]);
  });

  it('a protocol-level MCP error carries the JSON-RPC code, svc code, details and request id', () => {
    const e = new AppError('rate_limited', 'slow down', { retry_after_seconds: 3 });
    expect(rpcErrorMessage(e, null, 'req_9')).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32029, message: 'slow down', data: { code: 'rate_limited', retry_after_seconds: 3, request_id: 'req_9' } },
    });
    expect(rpcErrorMessage(new AppError('unauthorized', 'unknown token', {}), 7)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32001, message: 'unknown token', data: { code: 'unauthorized' } },
    });
  });
});
