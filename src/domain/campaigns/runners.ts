import type { Repos } from '../../store/repos.js';
import type { CampaignAction, CampaignComponentKind } from '../../store/campaigns.js';
import { failed, skipped, succeeded, type StepResult } from './model.js';

/** What a step runs with: the write transaction of the launch, pause or close, and who asked. */
export interface StepContext {
  tx: Repos;
  siteId: string;
  campaignId: string;
  /** Who runs the campaign action, e.g. `token:<id>`. */
  actor: string;
  now: number;
}

/**
 * The steps of one component kind. Each step runs inside the campaign action's transaction through `ctx.tx`,
 * checks the component's state before it writes, and returns its outcome instead of throwing for a state
 * it cannot move from (a thrown AppError is recorded as a failed step with its code). A step that fails
 * writes nothing, so an optional component's failure leaves no half-applied change behind.
 */
export interface ComponentStepRunner {
  readonly kind: CampaignComponentKind;
  /** The step name each action runs, e.g. publish / keep / disable for a variant. */
  readonly steps: Readonly<Record<CampaignAction, string>>;
  /** Whether the component exists in the site (checked when it is added to a campaign). */
  exists(tx: Repos, siteId: string, refId: string): Promise<boolean>;
  launch(ctx: StepContext, refId: string): Promise<StepResult>;
  pause(ctx: StepContext, refId: string): Promise<StepResult>;
  close(ctx: StepContext, refId: string): Promise<StepResult>;
}

export type RunnerRegistry = ReadonlyMap<CampaignComponentKind, ComponentStepRunner>;

const missing = (kind: string, id: string) => failed('not_found', `${kind} ${id} does not exist in this site`);

/** Segments are shared targeting definitions: launch checks the segment is there; pause and close leave it alone. */
export const segmentRunner: ComponentStepRunner = {
  kind: 'segment',
  steps: { launch: 'verify', pause: 'none', close: 'none' },
  exists: (tx, siteId, id) => tx.campaigns.segmentExists(siteId, id),
  async launch(ctx, id) {
    return (await ctx.tx.campaigns.segmentExists(ctx.siteId, id)) ? succeeded('segment exists') : missing('segment', id);
  },
  async pause() {
    return skipped('segments are shared definitions; nothing to pause');
  },
  async close() {
    return skipped('segments are shared definitions; nothing to close');
  },
};

/**
 * Variants: launch publishes an approved variant (approval stays a human decision: a draft fails, and so
 * does a disabled or archived one, which needs a new approval). Pause keeps variants published: a variant
 * reaches visitors through placements and tests, which the pause stops, and republishing on the next launch
 * would bypass the watchdog's disablement. Close disables the published variants.
 */
export const variantRunner: ComponentStepRunner = {
  kind: 'variant',
  steps: { launch: 'publish', pause: 'keep', close: 'disable' },
  exists: async (tx, siteId, id) => (await tx.campaigns.variant(siteId, id)) !== undefined,
  async launch(ctx, id) {
    const v = await ctx.tx.campaigns.variant(ctx.siteId, id);
    if (!v) return missing('variant', id);
    switch (v.status) {
      case 'published':
        return skipped('already published');
      case 'approved':
        await ctx.tx.campaigns.publishVariant(ctx.siteId, id, ctx.actor, ctx.now);
        return succeeded('published');
      case 'draft':
        return failed('not_approved', 'the variant is a draft; it must be approved before it can be published');
      case 'disabled':
      case 'archived':
        return failed(`variant_${v.status}`, `the variant is ${v.status}; it must be approved again before it can be published`);
    }
  },
  async pause(ctx, id) {
    const v = await ctx.tx.campaigns.variant(ctx.siteId, id);
    if (!v) return missing('variant', id);
    return skipped(`stays ${v.status}: the campaign's placements and tests stop serving it`);
  },
  async close(ctx, id) {
    const v = await ctx.tx.campaigns.variant(ctx.siteId, id);
    if (!v) return missing('variant', id);
    if (v.status !== 'published') return skipped(`not published (${v.status})`);
    await ctx.tx.campaigns.disableVariant(ctx.siteId, id, 'campaign_closed', ctx.now);
    return succeeded('disabled');
  },
};

/** Placements: launch enables (its variant must be published by then); pause and close disable. */
export const placementRunner: ComponentStepRunner = {
  kind: 'placement',
  steps: { launch: 'enable', pause: 'disable', close: 'disable' },
  exists: async (tx, siteId, id) => (await tx.campaigns.placement(siteId, id)) !== undefined,
  async launch(ctx, id) {
    const p = await ctx.tx.campaigns.placement(ctx.siteId, id);
    if (!p) return missing('placement', id);
    if (p.variant_status !== 'published') {
      return failed('variant_not_published', `the placement's variant ${p.variant_id} is ${p.variant_status ?? 'missing'}, not published`);
    }
    if (Number(p.enabled) === 1) return skipped('already enabled');
    await ctx.tx.campaigns.setPlacementEnabled(ctx.siteId, id, true, ctx.now);
    return succeeded('enabled');
  },
  pause: disablePlacement,
  close: disablePlacement,
};

async function disablePlacement(ctx: StepContext, id: string): Promise<StepResult> {
  const p = await ctx.tx.campaigns.placement(ctx.siteId, id);
  if (!p) return missing('placement', id);
  if (Number(p.enabled) === 0) return skipped('already disabled');
  await ctx.tx.campaigns.setPlacementEnabled(ctx.siteId, id, false, ctx.now);
  return succeeded('disabled');
}

/**
 * Layout tests: launch starts a draft or paused test (a control and at least one variant arm needed);
 * pause pauses a running one. Close pauses it too: ending a test is an analysis decision (end or ship it
 * with the experiments tools), not a side effect of closing the campaign.
 */
export const experimentRunner: ComponentStepRunner = {
  kind: 'experiment',
  steps: { launch: 'start', pause: 'pause', close: 'pause' },
  exists: async (tx, siteId, id) => (await tx.campaigns.experiment(siteId, id)) !== undefined,
  async launch(ctx, id) {
    const e = await ctx.tx.campaigns.experiment(ctx.siteId, id);
    if (!e) return missing('experiment', id);
    if (e.status === 'running') return skipped('already running');
    if (e.status === 'ended' || e.status === 'shipped') return failed('experiment_ended', `the test is ${e.status}; it cannot run again`);
    if (e.arms < 2) return failed('experiment_incomplete', 'the test needs a control and at least one variant arm');
    await ctx.tx.campaigns.startExperiment(ctx.siteId, id, ctx.now);
    return succeeded(e.status === 'paused' ? 'resumed' : 'started');
  },
  pause: pauseExperiment,
  close: pauseExperiment,
};

async function pauseExperiment(ctx: StepContext, id: string): Promise<StepResult> {
  const e = await ctx.tx.campaigns.experiment(ctx.siteId, id);
  if (!e) return missing('experiment', id);
  if (e.status !== 'running') return skipped(`not running (${e.status})`);
  await ctx.tx.campaigns.pauseExperiment(ctx.siteId, id, ctx.now);
  return succeeded('paused');
}

/** The runners over the core schema. */
export function coreRunners(): Map<CampaignComponentKind, ComponentStepRunner> {
  return new Map<CampaignComponentKind, ComponentStepRunner>([
    ['segment', segmentRunner],
    ['variant', variantRunner],
    ['placement', placementRunner],
    ['experiment', experimentRunner],
  ]);
}
