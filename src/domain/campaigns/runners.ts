import type { Repos } from '../../store/repos.js';
import type { CampaignAction, CampaignComponentKind } from '../../store/campaigns.js';
import { failed, skipped, succeeded, type StepResult } from './model.js';
import { updatePlacement } from '../web/placements.js';
import { transitionVariant } from '../web/variants.js';
import { servableByPlacement } from '../web/lifecycle.js';
import { endExperiment, pauseExperiment, resumeExperiment, startExperiment } from '../experiments/lifecycle.js';
import { resultsOf } from '../experiments/results.js';
import type { Results } from '../experiments/rules.js';

/** What a step runs with: the write transaction of the launch, pause or close, and who asked. */
export interface StepContext {
  tx: Repos;
  siteId: string;
  campaignId: string;
  /** Who runs the campaign action, e.g. `token:<id>`. */
  actor: string;
  now: number;
  /** What the runners' `prepare` read before the transaction, by `preparedKey`. */
  prepared: ReadonlyMap<string, unknown>;
}

/** The key of a component's prepared value. */
export const preparedKey = (kind: CampaignComponentKind, refId: string): string => `${kind}:${refId}`;

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
  /**
   * Optional heavy reads a step needs, done before the write transaction (reads only, through `r`) so the
   * transaction stays short; the step finds the value in `ctx.prepared` (and computes it itself if absent).
   */
  prepare?(r: Repos, siteId: string, refId: string, action: CampaignAction, now: number): Promise<unknown>;
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
  exists: async (tx, siteId, id) => (await tx.segments.get(siteId, id)) !== undefined,
  async launch(ctx, id) {
    return (await ctx.tx.segments.get(ctx.siteId, id)) ? succeeded('segment exists') : missing('segment', id);
  },
  async pause() {
    return skipped('segments are shared definitions; nothing to pause');
  },
  async close() {
    return skipped('segments are shared definitions; nothing to close');
  },
};

/**
 * Variants, through the web area's lifecycle (src/domain/web/lifecycle.ts). Launch publishes an approved
 * variant; approval stays a human decision, so a draft fails. A disabled variant fails too: it was stopped
 * by hand or by the render watchdog, and only a person re-publishes it (variants_publish) after a fix.
 * Pause keeps variants published: a variant reaches visitors through placements and tests, which the pause
 * stops. Close disables the published variants (reason `campaign_closed`).
 */
export const variantRunner: ComponentStepRunner = {
  kind: 'variant',
  steps: { launch: 'publish', pause: 'keep', close: 'disable' },
  exists: async (tx, siteId, id) => (await tx.variants.get(siteId, id)) !== undefined,
  async launch(ctx, id) {
    const v = await ctx.tx.variants.get(ctx.siteId, id);
    if (!v) return missing('variant', id);
    switch (v.status) {
      case 'published':
        return skipped('already published');
      case 'approved':
        await transitionVariant(ctx.tx, ctx.siteId, id, 'publish', ctx.actor, ctx.now);
        return succeeded('published');
      case 'draft':
        return failed('not_approved', 'the variant is a draft; it must be approved before it can be published');
      case 'disabled':
        return failed('variant_disabled', 'the variant was disabled (by hand or by the render watchdog); re-publish it with variants_publish after a fix');
      case 'archived':
        return failed('variant_archived', 'the variant is archived; it is never served again');
    }
  },
  async pause(ctx, id) {
    const v = await ctx.tx.variants.get(ctx.siteId, id);
    if (!v) return missing('variant', id);
    return skipped(`stays ${v.status}: the campaign's placements and tests stop serving it`);
  },
  async close(ctx, id) {
    const v = await ctx.tx.variants.get(ctx.siteId, id);
    if (!v) return missing('variant', id);
    if (v.status !== 'published') return skipped(`not published (${v.status})`);
    await transitionVariant(ctx.tx, ctx.siteId, id, 'disable', ctx.actor, ctx.now, 'campaign_closed');
    return succeeded('disabled');
  },
};

/** Placements, through the web area's updatePlacement: launch enables (its variant must be published by then); pause and close disable. */
export const placementRunner: ComponentStepRunner = {
  kind: 'placement',
  steps: { launch: 'enable', pause: 'disable', close: 'disable' },
  exists: async (tx, siteId, id) => (await tx.placements.get(siteId, id)) !== undefined,
  async launch(ctx, id) {
    const p = await ctx.tx.placements.get(ctx.siteId, id);
    if (!p) return missing('placement', id);
    const v = await ctx.tx.variants.get(ctx.siteId, p.variant_id);
    if (!v || !servableByPlacement(v.status)) {
      return failed('variant_not_published', `the placement's variant ${p.variant_id} is ${v?.status ?? 'missing'}, not published`);
    }
    if (Number(p.enabled) === 1) return skipped('already enabled');
    await updatePlacement(ctx.tx, ctx.siteId, id, { enabled: true }, ctx.now);
    return succeeded('enabled');
  },
  pause: disablePlacement,
  close: disablePlacement,
};

async function disablePlacement(ctx: StepContext, id: string): Promise<StepResult> {
  const p = await ctx.tx.placements.get(ctx.siteId, id);
  if (!p) return missing('placement', id);
  if (Number(p.enabled) === 0) return skipped('already disabled');
  await updatePlacement(ctx.tx, ctx.siteId, id, { enabled: false }, ctx.now);
  return succeeded('disabled');
}

/**
 * Layout tests, through the experiments area's lifecycle (its start checks apply: arm variants servable,
 * scheduled end ahead, no other live test on the same zones). Launch starts a draft or resumes a paused
 * test, except one the Core Web Vitals guardrail paused: that one fails (`guardrail_paused`) until a person
 * resumes it with experiments_resume. Pause pauses a running test. Close ends a running or paused test by
 * hand (it emits experiment.ended with the per-arm results; ship it afterwards with experiments_ship).
 */
export const experimentRunner: ComponentStepRunner = {
  kind: 'experiment',
  steps: { launch: 'start', pause: 'pause', close: 'end' },
  exists: async (tx, siteId, id) => (await tx.experiments.get(siteId, id)) !== undefined,
  /** Close ends the test: its per-arm results are aggregated before the transaction, as the experiments tools do. */
  async prepare(r, siteId, id, action, now) {
    if (action !== 'close') return undefined;
    const e = await r.experiments.get(siteId, id);
    return e && (e.status === 'running' || e.status === 'paused') ? resultsOf(r, e, now) : undefined;
  },
  async launch(ctx, id) {
    const e = await ctx.tx.experiments.get(ctx.siteId, id);
    if (!e) return missing('experiment', id);
    switch (e.status) {
      case 'running':
        return skipped('already running');
      case 'draft':
        await startExperiment(ctx.tx, ctx.siteId, id, ctx.now);
        return succeeded('started');
      case 'paused':
        if (e.pause_reason?.startsWith('guardrail:') === true) {
          return failed('guardrail_paused', 'the Core Web Vitals guardrail paused the test; check it and resume it with experiments_resume');
        }
        await resumeExperiment(ctx.tx, ctx.siteId, id, ctx.now);
        return succeeded('resumed');
      case 'ended':
      case 'shipped':
        return failed('experiment_ended', `the test is ${e.status}; it cannot run again`);
    }
  },
  async pause(ctx, id) {
    const e = await ctx.tx.experiments.get(ctx.siteId, id);
    if (!e) return missing('experiment', id);
    if (e.status !== 'running') return skipped(`not running (${e.status})`);
    await pauseExperiment(ctx.tx, ctx.siteId, id, ctx.actor, ctx.now);
    return succeeded('paused');
  },
  async close(ctx, id) {
    const e = await ctx.tx.experiments.get(ctx.siteId, id);
    if (!e) return missing('experiment', id);
    if (e.status !== 'running' && e.status !== 'paused') return skipped(`already ${e.status}`);
    const results = ctx.prepared.get(preparedKey('experiment', id)) as Results | undefined;
    await endExperiment(ctx.tx, ctx.siteId, id, 'manual', ctx.actor, ctx.now, undefined, results);
    return succeeded('ended');
  },
};

/**
 * Triggered messages, with the pipeline area's rules (as triggers_enable / triggers_disable apply them):
 * enabling needs the site's live endpoint; disabling cancels the trigger's pending automatic fires.
 */
export const triggerRunner: ComponentStepRunner = {
  kind: 'trigger',
  steps: { launch: 'enable', pause: 'disable', close: 'disable' },
  exists: async (tx, siteId, id) => (await tx.triggers.get(siteId, id)) !== undefined,
  async launch(ctx, id) {
    const t = await ctx.tx.triggers.get(ctx.siteId, id);
    if (!t) return missing('trigger', id);
    if (Number(t.enabled) === 1) return skipped('already enabled');
    const endpoint = await ctx.tx.triggers.endpoint(ctx.siteId);
    if (!endpoint?.url) return failed('endpoint_not_set', "the site's live endpoint for triggered messages is not set (triggers_endpoint_set)");
    await ctx.tx.triggers.setEnabled(ctx.siteId, id, true, ctx.now);
    return succeeded('enabled');
  },
  pause: disableTrigger,
  close: disableTrigger,
};

async function disableTrigger(ctx: StepContext, id: string): Promise<StepResult> {
  const t = await ctx.tx.triggers.get(ctx.siteId, id);
  if (!t) return missing('trigger', id);
  if (Number(t.enabled) === 0) return skipped('already disabled');
  await ctx.tx.triggers.setEnabled(ctx.siteId, id, false, ctx.now);
  const cancelled = await ctx.tx.triggers.cancelPending(ctx.siteId, id);
  return succeeded(cancelled > 0 ? `disabled; ${cancelled} pending fires cancelled` : 'disabled');
}

/** The step runner of every component kind. */
export function campaignRunners(): Map<CampaignComponentKind, ComponentStepRunner> {
  return new Map<CampaignComponentKind, ComponentStepRunner>([
    ['segment', segmentRunner],
    ['variant', variantRunner],
    ['placement', placementRunner],
    ['experiment', experimentRunner],
    ['trigger', triggerRunner],
  ]);
}
