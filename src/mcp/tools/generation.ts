import { z } from 'zod';
import { templateSchema } from '../../domain/generation/template.js';
import { GenerationService } from '../../domain/generation/revisions.js';
import { jobSchema, revisionDiffSchema, revisionSchema } from '../../domain/generation/views.js';
import { wakeContentJobs } from '../../workers/content-jobs.js';
import { defineTool, type ToolContext } from '../tool.js';
import { limitInput } from './shared.js';

const area = 'generation';

const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;
const id = (what: string) => z.string().min(1).max(128).describe(what);

const svc = (ctx: ToolContext) => new GenerationService(ctx.store);

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
    const job = await svc(ctx).start({
      siteId: ctx.grant.siteId,
      pageId: input.page_id,
      segmentId: input.segment_id ?? null,
      template: input.template,
      seed: input.seed,
      actor: actor(ctx),
    });
    wakeContentJobs(ctx.store, ctx.allowPrivateDestinations);
    return job;
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
  handler: (ctx, input) => svc(ctx).status(ctx.grant.siteId, input.generation_id),
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
  handler: (ctx, input) => svc(ctx).revisions(ctx.grant.siteId, input.page_id, input.segment_id ?? null, { bodies: input.include_bodies, limit: input.limit }),
});

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
  output: revisionDiffSchema,
  handler: (ctx, input) => svc(ctx).diff(ctx.grant.siteId, input.from_revision_id, input.to_revision_id),
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
  handler: (ctx, input) => svc(ctx).restore(ctx.grant.siteId, input.revision_id, actor(ctx)),
});
