import { z } from 'zod';
import type { GenerationJobRow, RevisionRow } from '../../store/generation.js';
import { sectionsOf } from './service.js';

/** The views of generation: a job, a revision with its sections, and the diff of two revisions. */

/** ISO 8601 of a millisecond timestamp; null stays null. */
const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

export const jobSchema = z.object({
  generation_id: z.string().describe('The generation job (gen_...).'),
  kind: z.enum(['generate', 'restore']).describe('generate: written by a generator; restore: a copy of an old revision.'),
  state: z.enum(['queued', 'running', 'finished', 'failed']).describe('Job state.'),
  error: z.string().nullable().describe('Why the job failed; null otherwise.'),
  page_id: z.string().describe('The page.'),
  segment_id: z.string().nullable().describe('The segment the revision is for; null: everyone.'),
  generator: z.string().describe('The generator (builtin-v1), or restore.'),
  revision_id: z.string().nullable().describe('The revision the job landed, once finished.'),
  sections_generated: z.number().int().describe('Sections written as new content blocks and draft variants.'),
  sections_unchanged: z.number().int().describe('Sections equal to the previous revision (their blocks and variants kept).'),
  attempts: z.number().int().describe('Times a runner took the job.'),
  requested_by: z.string().describe('Who started it (token:<id>).'),
  created_at: z.string().describe('ISO 8601.'),
  started_at: z.string().nullable().describe('ISO 8601.'),
  finished_at: z.string().nullable().describe('ISO 8601.'),
});

export function jobView(j: GenerationJobRow): JobView {
  return {
    generation_id: j.id,
    kind: j.kind,
    state: j.state,
    error: j.error,
    page_id: j.page_id,
    segment_id: j.segment_id,
    generator: j.generator,
    revision_id: j.revision_id,
    sections_generated: j.sections_generated,
    sections_unchanged: j.sections_unchanged,
    attempts: j.attempts,
    requested_by: j.requested_by,
    created_at: iso(j.created_at)!,
    started_at: iso(j.started_at),
    finished_at: iso(j.finished_at),
  };
}

export const sectionSchema = z.object({
  zone_id: z.string().describe('The zone.'),
  zone_name: z.string().describe('Zone name when the revision was written.'),
  content_id: z.string().describe('Content block holding the section.'),
  variant_id: z.string().describe('Draft variant created for the section (approve and publish it with the variants tools).'),
  body: z.string().optional().describe('The section HTML (when asked for).'),
});

export const revisionSchema = z.object({
  revision_id: z.string().describe('The revision (rev_...).'),
  number: z.number().int().describe('1, 2, ... per page and audience.'),
  page_id: z.string().describe('The page.'),
  segment_id: z.string().nullable().describe('The segment; null: everyone.'),
  generation_id: z.string().describe('The job that landed it.'),
  restored_from: z.string().nullable().describe('The revision this one copies (restore); null for generated ones.'),
  created_at: z.string().describe('ISO 8601.'),
  sections: z.array(sectionSchema).describe('One per zone.'),
});

export function revisionView(r: RevisionRow, bodies: boolean): RevisionView {
  return {
    revision_id: r.id,
    number: r.number,
    page_id: r.page_id,
    segment_id: r.segment_id,
    generation_id: r.generation_id,
    restored_from: r.restored_from,
    created_at: iso(r.created_at)!,
    sections: sectionsOf(r).map((s) => ({ zone_id: s.zone_id, zone_name: s.zone_name, content_id: s.content_id, variant_id: s.variant_id, ...(bodies ? { body: s.body } : {}) })),
  };
}

export const lineSchema = z.object({ op: z.enum(['keep', 'add', 'remove']).describe('Line kept, added in `to`, or removed from `from`.'), text: z.string().describe('The line.') });

/** Two revisions compared zone by zone (generation_diff). */
export const revisionDiffSchema = z.object({
  from_revision_id: z.string().describe('Compared from.'),
  to_revision_id: z.string().describe('Compared to.'),
  summary: z.object({ added: z.number().int(), removed: z.number().int(), changed: z.number().int(), unchanged: z.number().int() }).describe('Zones per kind of change.'),
  zones: z.array(
    z.object({
      zone_id: z.string().describe('The zone.'),
      zone_name: z.string().describe('Its name.'),
      change: z.enum(['added', 'removed', 'changed', 'unchanged']).describe('What happened to the section.'),
      lines: z.array(lineSchema).describe('Line diff of the section HTML (empty when unchanged).'),
    }),
  ),
});

export type JobView = z.input<typeof jobSchema>;
export type RevisionView = z.input<typeof revisionSchema>;
export type RevisionDiffView = z.input<typeof revisionDiffSchema>;
