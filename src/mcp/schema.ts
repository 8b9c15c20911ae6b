import type { z } from 'zod';
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';

type Converter = StandardSchemaWithJSON['~standard']['jsonSchema'];

/** Memoizes a zod schema's JSON Schema per target: the server is built per request, the schemas never change. */
function memoized(std: StandardSchemaWithJSON['~standard']): Converter {
  const cache = new Map<string, Record<string, unknown>>();
  const get = (io: 'input' | 'output', options: Parameters<Converter['input']>[0]) => {
    const key = `${io}:${String(options.target)}`;
    let hit = cache.get(key);
    if (!hit) {
      hit = std.jsonSchema[io](options);
      cache.set(key, hit);
    }
    return hit;
  };
  return { input: (o) => get('input', o), output: (o) => get('output', o) };
}

/**
 * The input schema a tool is registered with: it publishes the zod schema's
 * JSON Schema in tools/list, but lets every argument through at the SDK, so
 * that the scope policy decides first and the tool wrapper then validates with
 * the very same zod object, answering a tool error that names the field.
 */
export function deferredInput(schema: z.ZodObject): StandardSchemaWithJSON<Record<string, unknown>> {
  const std = schema['~standard'] as unknown as StandardSchemaWithJSON['~standard'];
  return {
    '~standard': {
      version: 1,
      vendor: 'svc',
      validate: (value: unknown) => ({ value: (value ?? {}) as Record<string, unknown> }),
      jsonSchema: memoized(std),
    },
  };
}

/** A tool's output schema: validated by zod as it is, its JSON Schema converted once. */
export function cachedOutput(schema: z.ZodObject): StandardSchemaWithJSON {
  const std = schema['~standard'] as unknown as StandardSchemaWithJSON['~standard'];
  return { '~standard': { version: 1, vendor: std.vendor, validate: std.validate, jsonSchema: memoized(std) } };
}
