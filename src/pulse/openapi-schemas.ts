import { z } from 'zod';

/** A JSON Schema (2020-12, OpenAPI 3.1's own dialect) as plain data. */
export type JsonSchema = Record<string, unknown>;

const COMPONENTS = '#/components/schemas/';
/** Where zod puts schemas that carry an id but were not registered themselves (nested ones). */
const SHARED = '__shared';

/** A reference to a component schema. */
export const ref = (id: string): JsonSchema => ({ $ref: `${COMPONENTS}${id}` });

/** The `.meta({ id })` of a schema; every schema openapi.json names must have one. */
export function idOf(schema: z.ZodType): string {
  const id = (schema.meta() as { id?: string } | undefined)?.id;
  if (!id) throw new Error('every schema in openapi.json needs .meta({ id })');
  return id;
}

/** Replaces every `$ref` in a tree by `rewrite($ref)`, and every `x-schema-ref: Name` by a `$ref` to that component. */
function relink(node: unknown, rewrite: (r: string) => string): void {
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  if (typeof o.$ref === 'string') o.$ref = rewrite(o.$ref);
  // Fields validated by code rather than by a zod shape (the rule language) name the schema that documents them.
  const target = o['x-schema-ref'];
  if (typeof target === 'string') {
    delete o['x-schema-ref'];
    o.$ref = `${COMPONENTS}${target}`;
  }
  for (const v of Object.values(o)) relink(v, rewrite);
}

/**
 * `components.schemas` for a set of zod schemas, each under its `.meta({ id })`.
 * Schemas nested inside them that carry an id of their own (a line item, an
 * arm result) become components too, so every `$ref` points at
 * `#/components/schemas/<Id>` and generated clients get one named type each.
 */
export function componentSchemas(schemas: readonly z.ZodType[]): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const s of schemas) if (!registry.has(s)) registry.add(s, { id: idOf(s) });
  const out = z.toJSONSchema(registry, { uri: (id) => `${COMPONENTS}${id}`, io: 'input', unrepresentable: 'any' }) as {
    schemas: Record<string, JsonSchema>;
  };
  const all: Record<string, JsonSchema> = {};
  const shared = (out.schemas[SHARED]?.$defs ?? {}) as Record<string, JsonSchema>;
  for (const [id, s] of [...Object.entries(out.schemas), ...Object.entries(shared)]) {
    if (id === SHARED) continue;
    if (id in all) throw new Error(`two schemas in openapi.json have the id ${id}`);
    delete s.$schema;
    delete s.$id; // a bare fragment is not a valid $id, and the component's place already names it
    all[id] = s;
  }
  const sharedPrefix = `${COMPONENTS}${SHARED}#/$defs/`;
  relink(all, (r) => (r.startsWith(sharedPrefix) ? `${COMPONENTS}${r.slice(sharedPrefix.length)}` : r));
  return Object.fromEntries(Object.entries(all).sort(([a], [b]) => a.localeCompare(b)));
}

/** A query parameter of OpenAPI: one per field of a strict query object, its description lifted out of the schema. */
export interface QueryParameter {
  name: string;
  in: 'query';
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

/**
 * The query parameters of a route from its zod query object, field by field
 * (the object itself carries an id, so converting it whole answers a `$ref`
 * with no properties to read).
 */
export function queryParameters(query: z.ZodObject): QueryParameter[] {
  return Object.entries(query.shape).map(([name, field]) => {
    const schema = z.toJSONSchema(field as z.ZodType, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
    delete schema.$schema;
    const { description, ...rest } = schema;
    return {
      name,
      in: 'query',
      required: !(field as z.ZodType).safeParse(undefined).success,
      ...(typeof description === 'string' ? { description } : {}),
      schema: rest,
    };
  });
}
