import type { z } from 'zod';
import type { RatePolicy } from '../http/rate-limit.js';
import type { KeyScope } from '../domain/access/key-scopes.js';
import type { ErrorCode } from '../errors/codes.js';
import {
  deliveriesQuerySchema,
  deliveryLogSchema,
  memberPageSchema,
  membersQuerySchema,
  profileQuerySchema,
  profileSnapshotSchema,
  secretRotationSchema,
  webhookCreateSchema,
  webhookListSchema,
  webhookRotateSchema,
  webhookSchema,
  webhookUpdateSchema,
} from './schemas.js';
import { profilesQueryPageSchema, profilesQuerySchema } from './query-schemas.js';

/** Rate limits of the profile REST API, per key. */
export const PULSE_LIMITS = {
  profile: { name: 'profile-read', rate: 60, windowMs: 60_000, burst: 120 },
  members: { name: 'segment-members', rate: 300, windowMs: 60_000, burst: 300 },
  query: { name: 'profiles-query', rate: 30, windowMs: 60_000, burst: 30 },
  webhooks: { name: 'webhooks-manage', rate: 60, windowMs: 60_000, burst: 60 },
} as const satisfies Record<string, RatePolicy>;

/** What each error code the profile REST API answers means there; its status comes from the error table. */
export const PULSE_ERRORS = {
  bad_request: 'missing, conflicting or invalid input; details.field names it',
  unauthorized: 'missing, malformed, unknown or revoked key',
  insufficient_scope: 'the key lacks the scope this needs',
  not_found: 'no profile, segment or subscription matches (or it belongs to another site or key)',
  not_acceptable: 'the Accept header excludes application/json',
  conflict: 'the request clashes with the current state (e.g. a rotation still in its grace period)',
  payload_too_large: 'the JSON body is over 64 KiB; nothing was stored',
  destination_refused: 'the URL is not publicly routable',
  rate_limited: 'over the per-key rate limit; see Retry-After',
  service_unavailable: 'the store is unreachable; nothing was stored, retry after Retry-After',
} as const satisfies Partial<Record<ErrorCode, string>>;

export type PulseErrorCode = keyof typeof PULSE_ERRORS;

/**
 * The routes of /api/pulse/v1 as data: the express router validates with these
 * schemas and openapi.json is generated from the very same objects.
 */
export interface RouteSpec {
  operationId: string;
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI path below /api/pulse/v1, with {params}. */
  path: string;
  summary: string;
  description: string;
  scope: KeyScope;
  limit: RatePolicy;
  params?: Record<string, string>;
  query?: z.ZodObject;
  body?: z.ZodType;
  status: number;
  response: z.ZodType | null;
  /** The error codes this route may answer besides 413 (routes with a body) and 503 (every route). */
  errors: PulseErrorCode[];
  beta?: boolean;
}

const common: PulseErrorCode[] = ['bad_request', 'unauthorized', 'insufficient_scope', 'rate_limited'];

export const ROUTES: readonly RouteSpec[] = [
  {
    operationId: 'getProfile',
    method: 'get',
    path: '/profile',
    summary: 'Read a profile snapshot',
    description:
      'Exactly one identifier. Without profile:read:pii the snapshot holds no plaintext email, phone, name or trait value; with it, it also holds them. include_pii=true without that scope is 403.',
    scope: 'profile:read',
    limit: PULSE_LIMITS.profile,
    query: profileQuerySchema,
    status: 200,
    response: profileSnapshotSchema,
    errors: [...common, 'not_found'],
  },
  {
    operationId: 'listSegmentMembers',
    method: 'get',
    path: '/segment/{segmentId}/members',
    summary: 'List the profile ids of a segment',
    description: 'Keyset-paginated in ascending profile id order: paging while profiles are added never repeats or skips a profile that existed when paging began.',
    scope: 'segment:read',
    limit: PULSE_LIMITS.members,
    params: { segmentId: 'Segment id (seg_...).' },
    query: membersQuerySchema,
    status: 200,
    response: memberPageSchema,
    errors: [...common, 'not_found'],
  },
  {
    operationId: 'queryProfiles',
    method: 'post',
    path: '/profiles/query',
    summary: 'Profile ids matching a segment rule',
    description:
      'Evaluates a rule of the segment rule language over every profile of the site, paginated like segment members. A rule that tests email, phone or name needs profile:read:pii.',
    scope: 'segment:read',
    limit: PULSE_LIMITS.query,
    body: profilesQuerySchema,
    status: 200,
    response: profilesQueryPageSchema,
    errors: common,
    beta: true,
  },
  {
    operationId: 'listWebhooks',
    method: 'get',
    path: '/webhooks',
    summary: 'List the webhook subscriptions of this key',
    description: 'Subscriptions are owned by the key that created them.',
    scope: 'webhooks:manage',
    limit: PULSE_LIMITS.webhooks,
    status: 200,
    response: webhookListSchema,
    errors: common,
    beta: true,
  },
  {
    operationId: 'createWebhook',
    method: 'post',
    path: '/webhooks',
    summary: 'Create a webhook subscription',
    description: 'The URL must be publicly routable; deliveries use the same signing, guard and dispatcher as every webhook.',
    scope: 'webhooks:manage',
    limit: PULSE_LIMITS.webhooks,
    body: webhookCreateSchema,
    status: 201,
    response: webhookSchema,
    errors: [...common, 'destination_refused'],
    beta: true,
  },
  {
    operationId: 'getWebhook',
    method: 'get',
    path: '/webhooks/{webhookId}',
    summary: 'Read a webhook subscription',
    description: 'Never returns the secret.',
    scope: 'webhooks:manage',
    limit: PULSE_LIMITS.webhooks,
    params: { webhookId: 'Subscription id (dst_...).' },
    status: 200,
    response: webhookSchema,
    errors: [...common, 'not_found'],
    beta: true,
  },
  {
    operationId: 'updateWebhook',
    method: 'patch',
    path: '/webhooks/{webhookId}',
    summary: 'Change a webhook subscription',
    description: 'enabled=true also clears the failure streak of a destination that was disabled automatically.',
    scope: 'webhooks:manage',
    limit: PULSE_LIMITS.webhooks,
    params: { webhookId: 'Subscription id (dst_...).' },
    body: webhookUpdateSchema,
    status: 200,
    response: webhookSchema,
    errors: [...common, 'not_found', 'destination_refused'],
    beta: true,
  },
  {
    operationId: 'rotateWebhookSecret',
    method: 'post',
    path: '/webhooks/{webhookId}/rotate-secret',
    summary: 'Rotate the secret of a webhook subscription',
    description:
      'Sets a new secret (generated unless given) and returns it this once. For grace_period_seconds (default 24 h) the old secret keeps signing every delivery beside the new one: X-SVC-Signature stays keyed by the old secret and X-SVC-Signature-Next carries the new; in standard mode webhook-signature holds both v1 values. The old secret is never shown. 409 while the previous rotation is still in its grace period (unless grace_period_seconds is 0).',
    scope: 'webhooks:manage',
    limit: PULSE_LIMITS.webhooks,
    params: { webhookId: 'Subscription id (dst_...).' },
    body: webhookRotateSchema,
    status: 200,
    response: secretRotationSchema,
    errors: [...common, 'not_found', 'conflict'],
    beta: true,
  },
  {
    operationId: 'deleteWebhook',
    method: 'delete',
    path: '/webhooks/{webhookId}',
    summary: 'Delete a webhook subscription',
    description: 'Pending deliveries are failed for good; the deliveries log stays.',
    scope: 'webhooks:manage',
    limit: PULSE_LIMITS.webhooks,
    params: { webhookId: 'Subscription id (dst_...).' },
    status: 204,
    response: null,
    errors: [...common, 'not_found'],
    beta: true,
  },
  {
    operationId: 'listWebhookDeliveries',
    method: 'get',
    path: '/webhooks/{webhookId}/deliveries',
    summary: 'The deliveries log of a webhook subscription',
    description: 'Every attempt with status, latency and error class.',
    scope: 'webhooks:manage',
    limit: PULSE_LIMITS.webhooks,
    params: { webhookId: 'Subscription id (dst_...).' },
    query: deliveriesQuerySchema,
    status: 200,
    response: deliveryLogSchema,
    errors: [...common, 'not_found'],
    beta: true,
  },
];
