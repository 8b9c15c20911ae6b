import { z } from 'zod';
import { VERSION } from '../version.js';
import { errorSchema } from './schemas.js';
import { ROUTES } from './routes.js';
import { RULE_DOC_SCHEMAS } from '../domain/segments/rules.js';

const ERROR_TEXT: Record<number, string> = {
  400: 'bad_request: missing, conflicting or invalid input',
  401: 'unauthorized: missing, malformed, unknown or revoked key',
  403: 'insufficient_scope: the key lacks the scope this needs',
  404: 'not_found: no profile, segment or subscription matches',
  409: 'conflict: the request clashes with the current state (e.g. a rotation still in its grace period)',
  422: 'destination_refused: the URL is not publicly routable',
  429: 'rate_limited: over the per-key rate limit; see Retry-After',
};

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

function idOf(schema: z.ZodType): string {
  const id = (schema.meta() as { id?: string } | undefined)?.id;
  if (!id) throw new Error('every schema in openapi.json needs .meta({ id })');
  return id;
}

/**
 * The OpenAPI 3.1 document of /api/pulse/v1, generated from ROUTES and the
 * zod schemas that validate the requests (JSON Schema 2020-12 is OpenAPI
 * 3.1's own dialect, so z.toJSONSchema output is used as is).
 */
export function buildOpenApi(): Record<string, unknown> {
  const registry = z.registry<{ id: string }>();
  const add = (s: z.ZodType) => {
    if (!registry.has(s)) registry.add(s, { id: idOf(s) });
  };
  add(errorSchema);
  for (const s of RULE_DOC_SCHEMAS) add(s);
  for (const r of ROUTES) {
    if (r.body) add(r.body);
    if (r.response) add(r.response);
  }
  const components = z.toJSONSchema(registry, { uri: (id) => `#/components/schemas/${id}`, io: 'input', unrepresentable: 'any' }) as {
    schemas: Record<string, Record<string, unknown>>;
  };
  for (const s of Object.values(components.schemas)) delete s.$schema;
  // Fields validated by code rather than by a zod shape (the rule language) name
  // the schema that documents them; point them at it.
  const link = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    const target = o['x-schema-ref'];
    if (typeof target === 'string') {
      delete o['x-schema-ref'];
      o.$ref = `#/components/schemas/${target}`;
    }
    for (const v of Object.values(o)) link(v);
  };
  link(components.schemas);

  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    const parameters: unknown[] = [];
    for (const [name, description] of Object.entries(r.params ?? {})) {
      parameters.push({ name, in: 'path', required: true, description, schema: { type: 'string' } });
    }
    if (r.query) {
      const q = z.toJSONSchema(r.query, { io: 'input' }) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) {
        const { description, ...rest } = schema;
        parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, description, schema: rest });
      }
    }
    const responses: Record<string, unknown> = {};
    responses[String(r.status)] = r.response
      ? { description: 'OK', content: { 'application/json': { schema: ref(idOf(r.response)) } } }
      : { description: 'Done; no body.' };
    for (const code of r.errors) {
      responses[String(code)] = {
        description: ERROR_TEXT[code] ?? 'error',
        content: { 'application/json': { schema: ref('Error') } },
        ...(code === 429
          ? { headers: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } } } }
          : {}),
      };
    }
    const path = `/api/pulse/v1${r.path}`;
    paths[path] ??= {};
    paths[path][r.method] = {
      operationId: r.operationId,
      summary: r.beta ? `${r.summary} (beta)` : r.summary,
      description: `${r.description}\n\nScope: ${r.scope}. Rate limit per key: ${r.limit.rate} requests per ${r.limit.windowMs / 1000} s, burst ${r.limit.burst}.`,
      tags: [r.path.startsWith('/webhooks') ? 'webhooks' : r.path.startsWith('/profiles') ? 'query' : 'profiles'],
      ...(r.beta ? { 'x-beta': true } : {}),
      security: [{ apiKey: [r.scope] }],
      parameters,
      ...(r.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: ref(idOf(r.body)) } } } }
        : {}),
      responses,
    };
  }
  paths['/api/pulse/v1/openapi.json'] = {
    get: {
      operationId: 'getOpenApi',
      summary: 'This document',
      description: 'No key needed.',
      security: [],
      responses: { '200': { description: 'The OpenAPI 3.1 description.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc profile REST API',
      version: `v1 (svc ${VERSION})`,
      description: 'Read profiles and segments at decision time. Authenticate with Authorization: Bearer pls_live_...',
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    tags: [
      { name: 'profiles', description: 'Profile snapshots and segment members.' },
      { name: 'query', description: 'Rule queries (beta).' },
      { name: 'webhooks', description: 'Key-scoped webhook subscriptions (beta).' },
    ],
    paths,
    components: {
      schemas: components.schemas,
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'A pls_live_ key minted with `svc key mint`.' } },
    },
  };
}
