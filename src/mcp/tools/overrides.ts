import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { OverridesService } from '../../domain/web/overrides.js';
import { overrideOut, overrideView } from '../../domain/web/views.js';
import { filedDraft } from '../../domain/drafts/schema.js';
import { proposeForceArm, proposeOverrideLift } from '../../domain/drafts/propose.js';
import { defineTool } from '../tool.js';
import { actor, idInput } from './web-shared.js';

const area = 'overrides';

const note = z.string().trim().min(1).max(500).optional().describe('Why (shown with the override).');
const overrideChange = overrideView.extend({ draft: filedDraft });

export const overridesList = defineTool({
  name: 'overrides_list',
  title: 'List overrides',
  description: 'Site overrides with who set them and when; lifted ones too unless active_only. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ active_only: z.boolean().default(true).describe('Only overrides that still apply (default true).') }),
  output: z.object({ overrides: z.array(overrideView).describe('The overrides, newest first (active only: oldest first).') }),
  handler: async (ctx, input) => ({ overrides: await new OverridesService(ctx.store).list(ctx.grant.siteId, input.active_only) }),
});

export const overridesPublish = defineTool({
  name: 'overrides_publish',
  title: 'Publish a site override',
  description:
    'Publishes a site-wide switch that beats every experiment and placement: personalization_off (a page shows zone defaults to everyone) or pin_zone (a zone shows one published variant to everyone). One active override per page or zone. Scope: admin.',
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true, approvesOrPublishes: true },
  input: z.object({
    kind: z.enum(['personalization_off', 'pin_zone']).describe('personalization_off needs page_id; pin_zone needs zone_id and variant_id.'),
    page_id: idInput('The page (personalization_off).').optional(),
    zone_id: idInput('The zone (pin_zone).').optional(),
    variant_id: idInput('A published variant of the zone (pin_zone).').optional(),
    note,
  }),
  output: overrideView,
  handler: async (ctx, input) => {
    const o =
      input.kind === 'personalization_off'
        ? { kind: input.kind, page_id: required(input.page_id, 'page_id'), note: input.note }
        : { kind: input.kind, zone_id: required(input.zone_id, 'zone_id'), variant_id: required(input.variant_id, 'variant_id'), note: input.note };
    return new OverridesService(ctx.store).publish(ctx.grant.siteId, o, actor(ctx));
  },
});

export const overridesForceArm = defineTool({
  name: 'overrides_force_arm',
  title: 'Force a visitor into an arm',
  description:
    `For QA: the visitor sees the given arm of an experiment (even in the holdout, even before it runs), replacing an earlier force of that visitor in that experiment. Scope: admin.`,
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true, changesExposure: true },
  input: z.object({
    experiment_id: idInput('The experiment.'),
    arm_id: idInput('One of its arms.'),
    visitor_id: z.string().min(1).max(128).describe('The visitor id to force.'),
    note,
  }),
  output: overrideChange,
  handler: async (ctx, input) => {
    if (ctx.drafts) {
      const r = await proposeForceArm(ctx.store, ctx.grant.siteId, actor(ctx), input);
      return { ...overrideOut(r.override), draft: r.draft };
    }
    return new OverridesService(ctx.store).forceArm(ctx.grant.siteId, input, actor(ctx));
  },
});

export const overridesLift = defineTool({
  name: 'overrides_lift',
  title: 'Lift an override',
  description: `Lifts one active override; it stays in the list with who lifted it and when. Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true, changesExposure: true },
  input: z.object({ id: idInput('Override id (ovr_...).') }),
  output: overrideChange,
  handler: async (ctx, input) => {
    if (ctx.drafts) {
      const r = await proposeOverrideLift(ctx.store, ctx.grant.siteId, actor(ctx), input.id);
      return { ...overrideOut(r.override), draft: r.draft };
    }
    return new OverridesService(ctx.store).lift(ctx.grant.siteId, input.id, actor(ctx));
  },
});

function required(v: string | undefined, field: string): string {
  if (v === undefined) throw new AppError('validation_failed', `${field}: required for this kind`, { field });
  return v;
}
