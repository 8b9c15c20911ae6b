import type { Store } from '../../store/store.js';
import type { ExperimentRow } from '../../store/experiments.js';
import type { DraftView } from '../drafts/schema.js';
import { proposeExperimentResume, proposeExperimentStart, proposeExperimentUpdate } from '../drafts/propose.js';
import { createExperiment, requireExperiment, updateExperiment, type CreateInput, type UpdateInput } from './definition.js';
import { guardrailStatus } from './guardrails.js';
import { endExperiment, pauseExperiment, resumeExperiment, shipExperiment, startExperiment } from './lifecycle.js';
import { resultsOf } from './results.js';
import type { Status } from './rules.js';
import { ALPHA, SEQUENTIAL_TUNING } from './stats.js';
import { assignmentFor } from './visitor-arm.js';
import { experimentOut, type AssignmentView, type ExperimentView, type GuardrailStatusView, type ResultsView } from './views.js';

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

/** A lifecycle call's result: the test, and the draft when the call was filed for approval. */
export type ExperimentChange = ExperimentView & { draft?: DraftView };

/**
 * The layout-test use cases of one store, returning views. `actor` is who acts
 * (token:<id>); writes run in one write operation each.
 */
export class ExperimentsService {
  constructor(private readonly store: Store) {}

  private async view(row: ExperimentRow): Promise<ExperimentView> {
    return experimentOut(row, await this.store.experiments.arms(row.site_id, row.id));
  }

  async list(siteId: string, status: Status | undefined, limit: number): Promise<ExperimentView[]> {
    const rows = await this.store.experiments.list(siteId, status, limit);
    return Promise.all(rows.map((r) => this.view(r)));
  }

  async get(siteId: string, id: string): Promise<ExperimentView> {
    return this.view(await requireExperiment(this.store, siteId, id));
  }

  async create(siteId: string, actor: string, input: CreateInput): Promise<ExperimentView> {
    return this.view(await this.store.write((tx) => createExperiment(tx, siteId, actor, input, Date.now())));
  }

  /** Changes a test; with `propose` (a propose-only token) a change of a running or paused test is filed as a draft. */
  async update(siteId: string, actor: string, id: string, patch: UpdateInput, opts: { propose: boolean }): Promise<ExperimentChange> {
    if (opts.propose) {
      const proposed = await proposeExperimentUpdate(this.store, siteId, actor, id, patch);
      if (proposed) return { ...(await this.view(proposed.experiment)), draft: proposed.draft };
    }
    return this.view(await this.store.write((tx) => updateExperiment(tx, siteId, id, patch, Date.now())));
  }

  /** Starts a draft test; with `propose` the start is filed as a draft. */
  async start(siteId: string, actor: string, id: string, opts: { propose: boolean }): Promise<ExperimentChange> {
    if (opts.propose) {
      const r = await proposeExperimentStart(this.store, siteId, actor, id);
      return { ...(await this.view(r.experiment)), draft: r.draft };
    }
    return this.view(await this.store.write((tx) => startExperiment(tx, siteId, id, Date.now())));
  }

  async pause(siteId: string, actor: string, id: string): Promise<ExperimentChange> {
    return this.view(await this.store.write((tx) => pauseExperiment(tx, siteId, id, actor, Date.now())));
  }

  /** Resumes a paused test; with `propose` the resume is filed as a draft. */
  async resume(siteId: string, actor: string, id: string, opts: { propose: boolean }): Promise<ExperimentChange> {
    if (opts.propose) {
      const r = await proposeExperimentResume(this.store, siteId, actor, id);
      return { ...(await this.view(r.experiment)), draft: r.draft };
    }
    return this.view(await this.store.write((tx) => resumeExperiment(tx, siteId, id, Date.now())));
  }

  /** Ends a test by hand (reason manual). */
  async end(siteId: string, actor: string, id: string): Promise<ExperimentChange> {
    // Results are aggregated before the write (the transaction re-checks the status and records them).
    const now = Date.now();
    const results = await resultsOf(this.store, await requireExperiment(this.store, siteId, id), now);
    return this.view(await this.store.write((tx) => endExperiment(tx, siteId, id, 'manual', actor, now, undefined, results)));
  }

  /** Ships an ended test: the given arm, or the recorded winner. */
  async ship(siteId: string, actor: string, id: string, armId: string | undefined): Promise<ExperimentView> {
    const now = Date.now();
    const results = await resultsOf(this.store, await requireExperiment(this.store, siteId, id), now);
    return this.view(await this.store.write((tx) => shipExperiment(tx, siteId, id, armId, actor, now, results)));
  }

  async results(siteId: string, id: string): Promise<ResultsView> {
    const row = await requireExperiment(this.store, siteId, id);
    const now = Date.now();
    const r = await resultsOf(this.store, row, now);
    return {
      experiment_id: row.id,
      status: row.status,
      primary_metric: row.primary_metric,
      method: `asymptotic confidence sequence (Waudby-Smith et al. 2023), tuning parameter ${SEQUENTIAL_TUNING}`,
      alpha: ALPHA,
      counted_until: iso(row.ended_at ?? now)!,
      arms: r.arms.map((a) => ({
        arm_id: a.arm_id,
        label: a.label,
        control: a.control,
        variant_id: a.variant_id,
        weight: a.weight,
        visitors: a.visitors,
        converters: a.converters,
        conversions: a.conversions,
        conversion_rate: a.conversion_rate,
        revenue: a.revenue,
        revenue_per_visitor: a.revenue_per_visitor,
        metric_value: a.metric_value,
        difference: a.comparison?.difference ?? null,
        ci_low: a.comparison?.ci_low ?? null,
        ci_high: a.comparison?.ci_high ?? null,
        relative_lift: a.comparison?.relative_lift ?? null,
        chance_to_beat_control: a.comparison?.chance_to_beat_control ?? null,
        verdict: a.comparison?.verdict ?? ('control' as const),
      })),
      winning_arm_id: r.winning_arm_id,
      srm: r.srm,
    };
  }

  async assignment(siteId: string, id: string, visitorId: string): Promise<AssignmentView> {
    const row = await requireExperiment(this.store, siteId, id);
    const a = await assignmentFor(this.store, row, visitorId);
    return {
      experiment_id: row.id,
      visitor_id: visitorId,
      status: row.status,
      arm_id: a.arm_id,
      label: a.label,
      source: a.source,
      from_earlier_exposure: a.source === 'exposure',
      bucket: a.bucket,
      first_exposed_at: iso(a.first_exposed_at),
    };
  }

  async guardrailStatus(siteId: string, id: string): Promise<GuardrailStatusView> {
    const row = await requireExperiment(this.store, siteId, id);
    return {
      experiment_id: row.id,
      status: row.status,
      pause_reason: row.pause_reason,
      window_start: row.started_at === null ? null : iso(Math.max(row.guardrail_since, row.started_at)),
      metrics: await guardrailStatus(this.store, row),
    };
  }
}
