import { z } from 'zod';
import type { DraftRow } from '../../store/drafts.js';

/**
 * What a propose-only token files instead of changing who sees what. Each kind
 * names the operation approval runs, on `target_id`, with the payload exactly
 * as proposed.
 */
export const DRAFT_KINDS = [
  'segment_create',
  'segment_update',
  'experiment_start',
  'experiment_resume',
  'experiment_update',
  'placement_create',
  'placement_update',
  'placement_delete',
  'zone_update',
  'override_lift',
  'override_force_arm',
] as const;
export type DraftKind = (typeof DRAFT_KINDS)[number];

const ref = z.string().min(1).max(128);
const priority = z.number().int().min(-1_000_000).max(1_000_000);

/** The payload of each kind (stored as JSON; parsed again when applied). */
export const DRAFT_PAYLOADS = {
  /** The draft segment row holds the proposal; the payload is a copy for the reviewer, kept in step with it. */
  segment_create: z.object({ name: z.string(), rule: z.unknown(), priority }),
  segment_update: z.object({ name: z.string().optional(), rule: z.unknown().optional(), priority: priority.optional() }),
  experiment_start: z.object({}),
  experiment_resume: z.object({}),
  experiment_update: z.object({
    weights: z.array(z.object({ arm_id: ref, weight: z.number() })).optional(),
    scheduled_end_at: z.number().nullable().optional(),
    stop_early: z.boolean().optional(),
  }),
  placement_create: z.object({ variant_id: ref, segment_id: ref.nullable(), priority, enabled: z.boolean() }),
  placement_update: z.object({ segment_id: ref.nullable().optional(), priority: priority.optional(), enabled: z.boolean().optional() }),
  placement_delete: z.object({}),
  zone_update: z.object({ selector: z.string().optional(), default_content_id: ref.nullable().optional() }),
  override_lift: z.object({}),
  override_force_arm: z.object({ experiment_id: ref, arm_id: ref, visitor_id: z.string(), note: z.string().optional() }),
} satisfies Record<DraftKind, z.ZodObject>;

export type DraftPayload<K extends DraftKind> = z.infer<(typeof DRAFT_PAYLOADS)[K]>;

const when = (what: string) => z.string().nullable().describe(`${what}, ISO 8601; null when not yet.`);

/** A draft as every surface shows it. */
export const draftView = z
  .object({
    id: z.string().describe('Draft id (drf_...).'),
    kind: z.enum(DRAFT_KINDS).describe('The change approval makes: segment_create, segment_update, experiment_start, experiment_resume, experiment_update, placement_create, placement_update, placement_delete, zone_update, override_lift, override_force_arm.'),
    target_id: z.string().describe('What it changes: the segment, layout test, placement (the id a new one will get), zone or override.'),
    summary: z.string().describe('The change in one line.'),
    proposed: z.record(z.string(), z.unknown()).describe('Exactly what was proposed; approval applies this and nothing else.'),
    status: z.enum(['pending', 'approved', 'rejected']).describe('pending until a person approves (inbox_approve) or rejects (inbox_dismiss) it.'),
    proposed_by: z.string().describe('Who proposed it (token:<id>).'),
    decided_by: z.string().nullable().describe('Who approved or rejected it (token:<id>).'),
    decided_at: when('When it was decided'),
    reason: z.string().nullable().describe('Why it was rejected.'),
    result: z.record(z.string(), z.unknown()).nullable().describe('What approval did (for example the members a segment got).'),
    inbox_item_id: z.string().nullable().describe('Its inbox item (inbox_...).'),
    created_at: z.string().describe('ISO 8601.'),
    updated_at: z.string().describe('ISO 8601.'),
  })
  .describe('A change filed as a draft: nothing of it applies until a person approves it.');
export type DraftView = z.input<typeof draftView>;

const iso = (t: number | null): string | null => (t === null ? null : new Date(Number(t)).toISOString());

export function draftOut(row: DraftRow, inboxItemId: string | null): DraftView {
  return {
    id: row.id,
    kind: row.kind as DraftKind,
    target_id: row.target_id,
    summary: row.summary,
    proposed: JSON.parse(row.payload) as Record<string, unknown>,
    status: row.status,
    proposed_by: row.proposed_by,
    decided_by: row.decided_by,
    decided_at: iso(row.decided_at),
    reason: row.reason,
    result: row.result === null ? null : (JSON.parse(row.result) as Record<string, unknown>),
    inbox_item_id: inboxItemId,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/** The `draft` field of a tool's result when the call was filed as a draft. */
export const filedDraft = draftView
  .optional()
  .describe('Present when this call was filed as a draft (propose-only tokens): nothing of it applies until a person approves it (inbox_approve); the rest of the result shows the object as it stands now (a proposed new placement or override: as it will be once approved).');
