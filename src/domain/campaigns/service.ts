import type { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { CampaignAction, CampaignComponentKind, CampaignComponentRow, CampaignRow, CampaignRunRow } from '../../store/campaigns.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import {
  afterClose,
  afterLaunch,
  afterPause,
  buildOutcome,
  launchApplies,
  liveMs,
  MAX_COMPONENTS,
  refusal,
  stepOrder,
  type CampaignOutcome,
  type StepRecord,
  type StepResult,
} from './model.js';
import { campaignRunners, preparedKey, type RunnerRegistry, type StepContext } from './runners.js';
import { type actionView, type campaignListView, campaignOut, campaignSummaryOut, componentOut, type componentView, runOut, type runView, type CampaignView } from './views.js';
import { decisionService } from '../web/decisions.js';

/** The step runners of every component kind. */
const DEFAULT_RUNNERS = campaignRunners();

/** The result of a launch, pause or close that stayed applied. */
export interface ActionResult {
  campaign: CampaignRow;
  run: CampaignRunRow;
  steps: StepRecord[];
  outcome: CampaignOutcome | null;
}

/** Thrown inside the launch transaction to undo it; carries the outcomes so the attempt can be recorded after. */
class LaunchRolledBack extends Error {
  constructor(readonly steps: StepRecord[]) {
    super('launch rolled back');
  }
}

const iso = (t: number) => new Date(t).toISOString();

/** The runners' reads before a transaction (see ComponentStepRunner.prepare). */
async function prepareSteps(
  r: Repos,
  runners: RunnerRegistry,
  action: CampaignAction,
  siteId: string,
  components: readonly CampaignComponentRow[],
  now: number,
): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const c of components) {
    const prepare = runners.get(c.kind)?.prepare;
    if (prepare) out.set(preparedKey(c.kind, c.ref_id), await prepare(r, siteId, c.ref_id, action, now));
  }
  return out;
}

async function own(tx: Repos, siteId: string, id: string): Promise<CampaignRow> {
  const c = await tx.campaigns.get(siteId, id);
  if (!c) throw new AppError('not_found', `no campaign ${id} in this site`, { field: 'id' });
  return c;
}

function allowed(action: CampaignAction | 'edit', c: CampaignRow): void {
  const why = refusal(action, c.status);
  if (why !== null) throw new AppError('conflict', why, { status: c.status });
}

/** Moves the campaign to its next lifecycle state, refusing when another operation moved it first. */
async function transition(tx: Repos, siteId: string, c: CampaignRow, next: Parameters<Repos['campaigns']['setLifecycle']>[3], now: number): Promise<void> {
  if (!(await tx.campaigns.setLifecycle(siteId, c.id, c.status, next, now))) {
    throw new AppError('conflict', 'the campaign changed meanwhile; read it again', { status: c.status });
  }
}

export async function createCampaign(store: Store, siteId: string, actor: string, input: { name: string; description?: string | undefined }): Promise<CampaignRow> {
  return store.write((tx) => tx.campaigns.create({ siteId, name: input.name, description: input.description ?? null, createdBy: actor, now: Date.now() }));
}

export async function updateCampaign(
  store: Store,
  siteId: string,
  id: string,
  patch: { name?: string | undefined; description?: string | null | undefined },
): Promise<CampaignRow> {
  return store.write(async (tx) => {
    const c = await own(tx, siteId, id);
    if (c.status === 'closed') throw new AppError('conflict', 'a closed campaign cannot change', { status: c.status });
    await tx.campaigns.update(siteId, id, {
      name: patch.name ?? c.name,
      description: patch.description === undefined ? c.description : patch.description,
      now: Date.now(),
    });
    return own(tx, siteId, id);
  });
}

/**
 * Adds a component (or changes its required flag when the campaign already has it). The component must
 * exist in the site, and its kind must have a runner.
 */
export async function addComponent(
  store: Store,
  runners: RunnerRegistry,
  siteId: string,
  id: string,
  input: { kind: CampaignComponentKind; ref_id: string; required: boolean },
): Promise<{ campaign: CampaignRow; component: CampaignComponentRow; added: boolean }> {
  const runner = runners.get(input.kind);
  if (!runner) throw new AppError('validation_failed', `components of kind ${input.kind} are not available on this server`, { field: 'kind' });
  return store.write(async (tx) => {
    const c = await own(tx, siteId, id);
    allowed('edit', c);
    if (!(await runner.exists(tx, siteId, input.ref_id))) {
      throw new AppError('not_found', `no ${input.kind} ${input.ref_id} in this site`, { field: 'ref_id' });
    }
    const existing = await tx.campaigns.component(siteId, id, input.kind, input.ref_id);
    if (existing) {
      if ((existing.required === 1) !== input.required) await tx.campaigns.setComponentRequired(siteId, existing.id, input.required);
      return { campaign: c, component: { ...existing, required: input.required ? 1 : 0 }, added: false };
    }
    if ((await tx.campaigns.components(siteId, id)).length >= MAX_COMPONENTS) {
      throw new AppError('validation_failed', `a campaign holds at most ${MAX_COMPONENTS} components`, { field: 'ref_id' });
    }
    const component = await tx.campaigns.addComponent({ siteId, campaignId: id, kind: input.kind, refId: input.ref_id, required: input.required, now: Date.now() });
    return { campaign: c, component, added: true };
  });
}

export async function removeComponent(store: Store, siteId: string, id: string, input: { kind: CampaignComponentKind; ref_id: string }): Promise<CampaignComponentRow> {
  return store.write(async (tx) => {
    const c = await own(tx, siteId, id);
    allowed('edit', c);
    const existing = await tx.campaigns.component(siteId, id, input.kind, input.ref_id);
    if (!existing) throw new AppError('not_found', `the campaign has no ${input.kind} ${input.ref_id}`, { field: 'ref_id' });
    await tx.campaigns.removeComponent(siteId, existing.id);
    return existing;
  });
}

/** Runs one action's step for each component, in dependency order, recording every outcome. */
async function runSteps(runners: RunnerRegistry, action: CampaignAction, ctx: StepContext, components: readonly CampaignComponentRow[]): Promise<StepRecord[]> {
  const out: StepRecord[] = [];
  for (const comp of stepOrder(action, components)) {
    const runner = runners.get(comp.kind);
    const base = { component_id: comp.id, kind: comp.kind, ref_id: comp.ref_id, required: comp.required === 1 };
    let r: StepResult;
    let step = action as string;
    if (!runner) {
      r = { outcome: 'failed', error_code: 'unsupported_component', reason: `components of kind ${comp.kind} are not available on this server` };
    } else {
      step = runner.steps[action];
      try {
        r = await runner[action](ctx, comp.ref_id);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        r = { outcome: 'failed', error_code: err.code, reason: err.message };
      }
    }
    out.push({ ...base, step, ...r });
  }
  return out;
}

/** The step outcomes as campaign.launched / campaign.paused carry them: ids, kinds, steps and codes only. */
function eventSteps(steps: readonly StepRecord[]) {
  return steps.map((s) => ({ component_id: s.ref_id, component: s.kind, step: s.step, outcome: s.outcome, error_code: s.error_code }));
}

/**
 * Launches a draft or paused campaign: every component's launch step runs in ONE write transaction. When a
 * required component's step fails, the transaction is rolled back (none of the steps, nor the status change,
 * stays applied) and a second write records the attempt with its outcomes (result rolled_back); the caller
 * gets a `conflict` error naming the failed steps. Otherwise the campaign is live, the run is recorded and
 * campaign.launched is emitted in the same transaction.
 */
export async function launchCampaign(store: Store, runners: RunnerRegistry, siteId: string, id: string, actor: string): Promise<ActionResult> {
  const now = Date.now();
  const prepared = await prepareSteps(store, runners, 'launch', siteId, await store.campaigns.components(siteId, id), now);
  try {
    return await store.write(async (tx) => {
      const c = await own(tx, siteId, id);
      allowed('launch', c);
      const components = await tx.campaigns.components(siteId, id);
      if (components.length === 0) throw new AppError('validation_failed', 'the campaign has no components to launch', { field: 'id' });
      await transition(tx, siteId, c, afterLaunch(c, now), now);
      const steps = await runSteps(runners, 'launch', { tx, siteId, campaignId: id, actor, now, prepared }, components);
      if (!launchApplies(steps)) throw new LaunchRolledBack(steps);
      const run = await tx.campaigns.addRun({ siteId, campaignId: id, action: 'launch', result: 'applied', steps, actor, now });
      const payload = CATALOGUE['campaign.launched'].schema.parse({
        event: 'campaign.launched',
        site_id: siteId,
        campaign_id: id,
        steps: eventSteps(steps),
        timestamp: iso(now),
      });
      await tx.activity.enqueue(siteId, 'campaign.launched', payload, now);
      return { campaign: await own(tx, siteId, id), run, steps, outcome: null };
    });
  } catch (err) {
    if (!(err instanceof LaunchRolledBack)) throw err;
    const run = await store.write(async (tx) => {
      await own(tx, siteId, id);
      return tx.campaigns.addRun({ siteId, campaignId: id, action: 'launch', result: 'rolled_back', steps: err.steps, actor, now });
    });
    const failedSteps = err.steps.filter((s) => s.required && s.outcome === 'failed');
    throw new AppError(
      'conflict',
      `launch rolled back: ${failedSteps.map((s) => `${s.kind} ${s.ref_id} ${s.step} failed (${s.error_code ?? 'failed'}: ${s.reason})`).join('; ')}`,
      { run_id: run.id, result: 'rolled_back', steps: err.steps },
    );
  }
}

/**
 * Pauses a live campaign: every component's pause step runs (placements and triggers disabled, tests
 * paused, variants kept published, segments untouched). A failed pause step does not undo the others:
 * stopping as much as possible is the point of a pause. Emits campaign.paused with the outcomes.
 */
export async function pauseCampaign(store: Store, runners: RunnerRegistry, siteId: string, id: string, actor: string, reason = 'manual'): Promise<ActionResult> {
  const now = Date.now();
  const prepared = await prepareSteps(store, runners, 'pause', siteId, await store.campaigns.components(siteId, id), now);
  return store.write(async (tx) => {
    const c = await own(tx, siteId, id);
    allowed('pause', c);
    await transition(tx, siteId, c, afterPause(c, now), now);
    const steps = await runSteps(runners, 'pause', { tx, siteId, campaignId: id, actor, now, prepared }, await tx.campaigns.components(siteId, id));
    const run = await tx.campaigns.addRun({ siteId, campaignId: id, action: 'pause', result: 'applied', steps, actor, now });
    const payload = CATALOGUE['campaign.paused'].schema.parse({
      event: 'campaign.paused',
      site_id: siteId,
      campaign_id: id,
      reason,
      steps: eventSteps(steps),
      timestamp: iso(now),
    });
    await tx.activity.enqueue(siteId, 'campaign.paused', payload, now);
    return { campaign: await own(tx, siteId, id), run, steps, outcome: null };
  });
}

/**
 * Closes a campaign (terminal): the close steps run like pause's (variants are disabled too, tests ended),
 * the outcome snapshot is computed from the exposures and conversions since the first launch, stored on
 * the campaign and emitted as campaign.closed. Like pause, a failed step does not undo the others.
 */
export async function closeCampaign(store: Store, runners: RunnerRegistry, siteId: string, id: string, actor: string): Promise<ActionResult> {
  const now = Date.now();
  // The heavy reads (the snapshot's aggregates, the tests' results) run before the write transaction, so
  // it stays short; the transaction re-checks the campaign has not moved meanwhile.
  const before = await own(store, siteId, id);
  allowed('close', before);
  const currency = (await store.sites.get(siteId))?.currency ?? 'USD';
  const stats = before.first_launched_at === null ? null : await store.campaigns.exposureStats(siteId, id, Number(before.first_launched_at), now, currency);
  const prepared = await prepareSteps(store, runners, 'close', siteId, await store.campaigns.components(siteId, id), now);
  return store.write(async (tx) => {
    const c = await own(tx, siteId, id);
    allowed('close', c);
    if (c.first_launched_at !== before.first_launched_at) throw new AppError('conflict', 'the campaign changed meanwhile; close it again', { status: c.status });
    const steps = await runSteps(runners, 'close', { tx, siteId, campaignId: id, actor, now, prepared }, await tx.campaigns.components(siteId, id));
    const outcome = stats === null ? buildOutcome(EMPTY, EMPTY, 0, currency) : buildOutcome(stats.treated, stats.holdout, liveMs(c, now), currency);
    await transition(tx, siteId, c, afterClose(c, now, actor, outcome), now);
    const run = await tx.campaigns.addRun({ siteId, campaignId: id, action: 'close', result: 'applied', steps, actor, now });
    const payload = CATALOGUE['campaign.closed'].schema.parse({
      event: 'campaign.closed',
      site_id: siteId,
      campaign_id: id,
      launched_at: c.first_launched_at === null ? null : iso(Number(c.first_launched_at)),
      outcome,
      timestamp: iso(now),
    });
    await tx.activity.enqueue(siteId, 'campaign.closed', payload, now);
    return { campaign: await own(tx, siteId, id), run, steps, outcome };
  });
}

const EMPTY = { visitors: 0, profiles: 0, sessions: 0, conversions: 0, revenue: 0, converters: 0, leads: 0 };

/**
 * The campaign use cases of one store, returning views. `runners` defaults to
 * every component kind's step runner; launch, pause and close drop the site's
 * cached decision snapshot (what visitors see changed).
 */
export class CampaignsService {
  constructor(
    private readonly store: Store,
    private readonly runners: RunnerRegistry = DEFAULT_RUNNERS,
  ) {}

  private async view(c: CampaignRow): Promise<CampaignView> {
    return campaignOut(c, await this.store.campaigns.components(c.site_id, c.id));
  }

  private async actionOut(r: ActionResult): Promise<z.input<typeof actionView>> {
    return { campaign: await this.view(r.campaign), run: runOut(r.run) };
  }

  /** A page of campaigns, newest first; `before` is the previous page's next_before. */
  async list(siteId: string, f: { status?: CampaignRow['status'] | undefined; before?: string | undefined; limit: number }): Promise<z.input<typeof campaignListView>> {
    const rows = await this.store.campaigns.list(siteId, { status: f.status, before: f.before, limit: f.limit + 1 });
    const page = rows.slice(0, f.limit);
    const counts = await this.store.campaigns.componentCounts(
      siteId,
      page.map((r) => r.id),
    );
    return {
      campaigns: page.map((c) => campaignSummaryOut(c, counts.get(c.id) ?? 0)),
      next_before: rows.length > f.limit ? page[page.length - 1]!.id : null,
    };
  }

  /** One campaign with its `runs` most recent runs. */
  async get(siteId: string, id: string, runs: number): Promise<CampaignView & { runs: z.input<typeof runView>[] }> {
    const c = await own(this.store, siteId, id);
    const rows = await this.store.campaigns.runs(siteId, c.id, runs);
    return { ...(await this.view(c)), runs: rows.map(runOut) };
  }

  async create(siteId: string, actor: string, input: { name: string; description?: string | undefined }): Promise<CampaignView> {
    return this.view(await createCampaign(this.store, siteId, actor, input));
  }

  async update(siteId: string, id: string, input: { name?: string | undefined; description?: string | null | undefined }): Promise<CampaignView> {
    return this.view(await updateCampaign(this.store, siteId, id, input));
  }

  async addComponent(
    siteId: string,
    id: string,
    input: { kind: CampaignComponentKind; ref_id: string; required: boolean },
  ): Promise<{ campaign: CampaignView; component: z.input<typeof componentView>; added: boolean }> {
    const r = await addComponent(this.store, this.runners, siteId, id, input);
    return { campaign: await this.view(await own(this.store, siteId, r.campaign.id)), component: componentOut(r.component), added: r.added };
  }

  async removeComponent(siteId: string, id: string, input: { kind: CampaignComponentKind; ref_id: string }): Promise<{ campaign: CampaignView; removed: z.input<typeof componentView> }> {
    const removed = await removeComponent(this.store, siteId, id, input);
    return { campaign: await this.view(await own(this.store, siteId, id)), removed: componentOut(removed) };
  }

  async launch(siteId: string, id: string, actor: string): Promise<z.input<typeof actionView>> {
    const r = await launchCampaign(this.store, this.runners, siteId, id, actor);
    decisionService(this.store).invalidate(siteId);
    return this.actionOut(r);
  }

  async pause(siteId: string, id: string, actor: string): Promise<z.input<typeof actionView>> {
    const r = await pauseCampaign(this.store, this.runners, siteId, id, actor);
    decisionService(this.store).invalidate(siteId);
    return this.actionOut(r);
  }

  async close(siteId: string, id: string, actor: string): Promise<z.input<typeof actionView> & { outcome: CampaignOutcome }> {
    const r = await closeCampaign(this.store, this.runners, siteId, id, actor);
    decisionService(this.store).invalidate(siteId);
    return { ...(await this.actionOut(r)), outcome: r.outcome! };
  }
}
