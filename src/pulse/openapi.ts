import { LICENSE, PACKAGE_NAME, VERSION } from '../version.js';
import { statusOf } from '../errors/codes.js';
import { errorSchema } from './schemas.js';
import { PULSE_ERRORS, ROUTES, type PulseErrorCode, type RouteSpec } from './routes.js';
import { RULE_DOC_SCHEMAS } from '../domain/segments/rules.js';
import { componentSchemas, idOf, queryParameters, ref, type JsonSchema } from './openapi-schemas.js';
import { WEBHOOK_HEADER_PARAMETERS, WEBHOOK_PAYLOAD_SCHEMAS, webhookOperations } from './openapi-webhooks.js';

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

const HEADERS: Record<string, JsonSchema> = {
  RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
  RateLimitLimit: { description: 'Requests the key may make in a burst on this route.', schema: { type: 'integer' } },
  RateLimitRemaining: { description: 'Requests left in the current burst.', schema: { type: 'integer' } },
  RateLimitReset: { description: 'Seconds until the bucket is full again.', schema: { type: 'integer' } },
  RateLimitPolicy: { description: 'The policy: burst, window, sustained rate and its name.', schema: { type: 'string' } },
  WwwAuthenticate: { description: 'Bearer challenge (RFC 6750).', schema: { type: 'string' } },
};

const rateHeaders = {
  'RateLimit-Limit': header('RateLimitLimit'),
  'RateLimit-Remaining': header('RateLimitRemaining'),
  'RateLimit-Reset': header('RateLimitReset'),
  'RateLimit-Policy': header('RateLimitPolicy'),
};

function errorResponse(code: PulseErrorCode): JsonSchema {
  const headers =
    code === 'rate_limited'
      ? { 'Retry-After': header('RetryAfter'), ...rateHeaders }
      : code === 'service_unavailable'
        ? { 'Retry-After': header('RetryAfter') }
        : code === 'unauthorized'
          ? { 'WWW-Authenticate': header('WwwAuthenticate') }
          : undefined;
  return {
    description: `${code}: ${PULSE_ERRORS[code]}`,
    ...(headers ? { headers } : {}),
    content: { 'application/json': { schema: ref('Error') } },
  };
}

function successResponse(r: RouteSpec): JsonSchema {
  if (!r.response) return { description: 'Done; no body.', headers: rateHeaders };
  const description = (r.response.meta() as { description?: string } | undefined)?.description ?? r.summary;
  return { description, headers: rateHeaders, content: { 'application/json': { schema: ref(idOf(r.response)) } } };
}

function operation(r: RouteSpec): JsonSchema {
  const parameters: unknown[] = [];
  for (const [name, description] of Object.entries(r.params ?? {})) {
    parameters.push({ name, in: 'path', required: true, description, schema: { type: 'string', minLength: 1, maxLength: 128 } });
  }
  if (r.query) parameters.push(...queryParameters(r.query));
  // Every route may also answer 503 (store unreachable); routes with a body 413 (over 64 KiB).
  const codes = [...new Set<PulseErrorCode>([...r.errors, ...(r.body ? ['payload_too_large' as const] : []), 'service_unavailable'])].sort((a, b) => statusOf(a) - statusOf(b));
  return {
    operationId: r.operationId,
    summary: r.beta ? `${r.summary} (beta)` : r.summary,
    description: `${r.description}\n\nScope: ${r.scope}. Rate limit per key: ${r.limit.rate} requests per ${r.limit.windowMs / 1000} s, burst ${r.limit.burst}.`,
    tags: [r.path.startsWith('/webhooks') ? 'webhooks' : r.path.startsWith('/profiles') ? 'query' : 'profiles'],
    ...(r.beta ? { 'x-beta': true } : {}),
    security: [{ apiKey: [r.scope] }],
    ...(parameters.length ? { parameters } : {}),
    ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: ref(idOf(r.body)) } } } } : {}),
    responses: {
      [String(r.status)]: successResponse(r),
      ...Object.fromEntries(codes.map((c) => [String(statusOf(c)), errorResponse(c)])),
    },
  };
}

/**
 * The OpenAPI 3.1 document of /api/pulse/v1, generated from ROUTES and the zod
 * schemas that validate the requests (JSON Schema 2020-12 is OpenAPI 3.1's own
 * dialect, so z.toJSONSchema output is used as is). Its top-level `webhooks`
 * describe what svc sends: every event type of the catalogue with its payload
 * schema and delivery headers, so receivers can generate their types too.
 */
export function buildOpenApi(): Record<string, unknown> {
  const schemas = componentSchemas([
    errorSchema,
    ...RULE_DOC_SCHEMAS,
    ...ROUTES.flatMap((r) => [r.body, r.response].filter((s) => s != null)),
    ...WEBHOOK_PAYLOAD_SCHEMAS,
  ]);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) (paths[`/api/pulse/v1${r.path}`] ??= {})[r.method] = operation(r);
  paths['/api/pulse/v1/openapi.json'] = {
    get: {
      operationId: 'getOpenApi',
      summary: 'This document',
      description: 'No key needed.',
      tags: ['profiles'],
      security: [],
      responses: {
        '200': {
          description: 'The OpenAPI 3.1 description.',
          content: {
            'application/json': {
              schema: { type: 'object', required: ['openapi', 'info'], properties: { openapi: { type: 'string' }, info: { type: 'object' } }, additionalProperties: true },
            },
          },
        },
        [String(statusOf('not_acceptable'))]: errorResponse('not_acceptable'),
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc profile REST API',
      version: `v1 (${PACKAGE_NAME} ${VERSION})`,
      description:
        'Read profiles and segments at decision time, query profiles by rule and manage key-scoped webhook subscriptions. Authenticate with Authorization: Bearer pls_live_... . The `webhooks` section describes the signed deliveries svc sends to your endpoints.',
      license: { name: LICENSE, identifier: LICENSE },
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    tags: [
      { name: 'profiles', description: 'Profile snapshots and segment members.' },
      { name: 'query', description: 'Rule queries (beta).' },
      { name: 'webhooks', description: 'Key-scoped webhook subscriptions (beta).' },
      { name: 'events', description: 'The webhook deliveries svc sends, one per event type.' },
    ],
    paths,
    webhooks: webhookOperations(),
    components: {
      schemas,
      parameters: WEBHOOK_HEADER_PARAMETERS,
      headers: HEADERS,
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'A pls_live_ key minted with `svc key mint`.' } },
    },
  };
}
