import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { GenerationJobRow, RevisionRow } from '../../store/generation.js';
import { templateSchema } from '../../domain/generation/template.js';
import { queueGeneration, restoreRevision, sectionsOf } from '../../domain/generation/service.js';
import { diffSections } from '../../domain/generation/diff.js';
import { wakeContentJobs } from '../../workers/content-jobs.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, limitInput } from './shared.js';

const area = 'generation';

const jobSchema = z.object({
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

function jobView(j: GenerationJobRow): z.input<typeof jobSchema> {
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

const sectionSchema = z.object({
  zone_id: z.string().describe('The zone.'),
  zone_name: z.string().describe('Zone name when the revision was written.'),
  content_id: z.string().describe('Content block holding the section.'),
  variant_id: z.string().describe('Draft variant created for the section (approve and publish it with the variants tools).'),
  body: z.string().optional().describe('The section HTML (when asked for).'),
});

const revisionSchema = z.object({
  revision_id: z.string().describe('The revision (rev_...).'),
  number: z.number().int().describe('1, 2, ... per page and audience.'),
  page_id: z.string().describe('The page.'),
  segment_id: z.string().nullable().describe('The segment; null: everyone.'),
  generation_id: z.string().describe('The job that landed it.'),
  restored_from: z.string().nullable().describe('The revision this one copies (restore); null for generated ones.'),
  created_at: z.string().describe('ISO 8601.'),
  sections: z.array(sectionSchema).describe('One per zone.'),
});

function revisionView(r: RevisionRow, bodies: boolean): z.input<typeof revisionSchema> {
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

const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;
const id = (what: string) => z.string().min(1).max(128).describe(what);

async function ownRevision(ctx: ToolContext, revisionId: string, field: string): Promise<RevisionRow> {
  const r = await ctx.store.generation.revision(ctx.grant.siteId, revisionId);
  if (!r) throw new AppError('not_found', `no revision ${revisionId}`, { field });
  return r;
}

export const generationStart = defineTool({
  name: 'generation_start',
  title: 'Generate a page revision',
  description:
    "Starts a generation job: a new revision of a page's zone contents for a segment (or everyone), from a template, the segment's trait conditions and the site's content blocks, by the deterministic built-in generator (same input and seed, same output). Runs in the background: poll generation_status. A finished job writes each changed section as a content block and a DRAFT variant (never approved or published) and emits generation.finished. Scope: write.",
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({
    page_id: id('The page to generate (its zones are the sections).'),
    segment_id: id('The segment to write for; omit or null for everyone.').nullable().optional(),
    template: templateSchema.default({ sections: {} }).describe('Section templates with {{placeholders}}: page.name, page.pattern, zone.name, segment.name, trait.NAME, content.NAME, headline, traits, best_content.'),
    seed: z.string().max(100).default('').describe('Varies the built-in generator\'s choices; the same seed gives the same output.'),
  }),
  output: jobSchema,
  handler: async (ctx, input) => {
    const job = await queueGeneration(ctx.store, {
      siteId: ctx.grant.siteId,
      pageId: input.page_id,
      segmentId: input.segment_id ?? null,
      template: input.template,
      seed: input.seed,
      actor: actor(ctx),
    });
    wakeContentJobs(ctx.store, ctx.allowPrivateDestinations);
    return jobView(job);
  },
});

export const generationStatus = defineTool({
  name: 'generation_status',
  title: 'Generation job status',
  description: 'State of a generation job (queued, running, finished, failed with its error), the revision it landed and its section counts. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ generation_id: id('The generation job (gen_...).') }),
  output: jobSchema,
  handler: async (ctx, input) => {
    const job = await ctx.store.generation.jobOfSite(ctx.grant.siteId, input.generation_id);
    if (!job) throw new AppError('not_found', `no generation ${input.generation_id}`, { field: 'generation_id' });
    return jobView(job);
  },
});

export const generationRevisions = defineTool({
  name: 'generation_revisions',
  title: 'Revisions of a page',
  description: 'The revisions of a page for one audience (a segment, or everyone), newest first, with the content block and draft variant of each section. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    page_id: id('The page.'),
    segment_id: id('The segment; omit or null for the everyone revisions.').nullable().optional(),
    include_bodies: z.boolean().default(false).describe('Include each section\'s HTML.'),
    limit: limitInput(100, 20),
  }),
  output: z.object({ revisions: z.array(revisionSchema).describe('Newest first.') }),
  handler: async (ctx, input) => {
    if (!(await ctx.store.generation.page(ctx.grant.siteId, input.page_id))) throw new AppError('not_found', `no page ${input.page_id}`, { field: 'page_id' });
    const rows = await ctx.store.generation.revisions(ctx.grant.siteId, input.page_id, input.segment_id ?? null, input.limit);
    return { revisions: rows.map((r) => revisionView(r, input.include_bodies)) };
  },
});

const lineSchema = z.object({ op: z.enum(['keep', 'add', 'remove']).describe('Line kept, added in `to`, or removed from `from`.'), text: z.string().describe('The line.') });

export const generationDiff = defineTool({
  name: 'generation_diff',
  title: 'Compare two revisions',
  description:
    'Compares two revisions of a page zone by zone: added, removed, changed (with a line diff of the section HTML) or unchanged. `to` defaults to the newest revision of the same page and audience. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    from_revision_id: id('The older revision.'),
    to_revision_id: id('The newer revision; default: the newest of the same page and audience.').optional(),
  }),
  output: z.object({
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
  }),
  handler: async (ctx, input) => {
    const from = await ownRevision(ctx, input.from_revision_id, 'from_revision_id');
    const to =
      input.to_revision_id !== undefined
        ? await ownRevision(ctx, input.to_revision_id, 'to_revision_id')
        : (await ctx.store.generation.latestRevision(from.page_id, from.segment_id))!;
    if (to.page_id !== from.page_id) throw new AppError('validation_failed', 'the two revisions are of different pages', { field: 'to_revision_id' });
    const zones = diffSections(sectionsOf(from), sectionsOf(to));
    const count = (c: string) => zones.filter((z) => z.change === c).length;
    return {
      from_revision_id: from.id,
      to_revision_id: to.id,
      summary: { added: count('added'), removed: count('removed'), changed: count('changed'), unchanged: count('unchanged') },
      zones,
    };
  },
});

export const generationRestore = defineTool({
  name: 'generation_restore',
  title: 'Restore a revision',
  description:
    'Lands a copy of an old revision as the newest revision of its page and audience (sections that differ from the current newest become new content blocks and DRAFT variants; nothing is published) and emits generation.finished. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ revision_id: id('The revision to restore.') }),
  output: z.object({ generation: jobSchema.describe('The finished restore job.'), revision: revisionSchema.describe('The new newest revision.') }),
  handler: async (ctx, input) => {
    const r = await restoreRevision(ctx.store, { siteId: ctx.grant.siteId, revisionId: input.revision_id, actor: actor(ctx) });
    return { generation: jobView(r.job), revision: revisionView(r.revision, false) };
  },
});
