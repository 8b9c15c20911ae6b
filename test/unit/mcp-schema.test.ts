import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cachedOutput, deferredInput } from '../../src/mcp/schema.js';
import { mcpRatePolicy } from '../../src/mcp/config.js';

describe('tool schemas for the SDK', () => {
  const input = z.object({ days: z.number().int().min(1).describe('Window in days.') });

  it('publishes the zod JSON Schema but lets arguments through, so the policy runs before validation', async () => {
    const s = deferredInput(input);
    const json = s['~standard'].jsonSchema.input({ target: 'draft-2020-12' });
    expect(json).toMatchObject({ type: 'object', properties: { days: { type: 'integer', minimum: 1, description: 'Window in days.' } }, required: ['days'] });
    expect(s['~standard'].jsonSchema.input({ target: 'draft-2020-12' })).toBe(json);
    expect(await s['~standard'].validate({ days: 'not a number' })).toEqual({ value: { days: 'not a number' } });
    expect(await s['~standard'].validate(undefined)).toEqual({ value: {} });
  });

  it('validates outputs with zod and converts their JSON Schema once', async () => {
    const s = cachedOutput(z.object({ n: z.number() }));
    expect(s['~standard'].jsonSchema.output({ target: 'draft-2020-12' })).toBe(s['~standard'].jsonSchema.output({ target: 'draft-2020-12' }));
    expect(((await s['~standard'].validate({ n: 'x' })) as { issues?: unknown[] }).issues?.length).toBeGreaterThan(0);
  });
});

describe('MCP rate limit settings', () => {
  it('defaults to 600 per minute with a burst of 120 and reads SVC_MCP_RATE / SVC_MCP_BURST', () => {
    expect(mcpRatePolicy({})).toEqual({ name: 'mcp', rate: 600, windowMs: 60_000, burst: 120 });
    expect(mcpRatePolicy({ SVC_MCP_RATE: '30', SVC_MCP_BURST: '5' })).toMatchObject({ rate: 30, burst: 5 });
    expect(() => mcpRatePolicy({ SVC_MCP_RATE: 'lots' })).toThrow(/SVC_MCP_RATE/);
    expect(() => mcpRatePolicy({ SVC_MCP_BURST: '0' })).toThrow(/SVC_MCP_BURST/);
  });
});
