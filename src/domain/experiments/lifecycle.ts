/**
 * The lifecycle of a layout test: start, pause, resume, end and ship (with their webhook events,
 * in the same transaction), and the worker's ends (scheduled end, early stopping). Every function
 * takes the `tx` of one write operation and does every read through it.
 */
import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { ExperimentRow } from '../../store/experiments.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { requireExperiment } from './definition.js';
import { earlyStopVerdict, resultsOf } from './results.js';
import { transition, type EarlyStop, type EndReason, type Results } from './rules.js';

function refuse(row: ExperimentRow, action: string): AppError {
  return new AppError('conflict', `cannot ${action} a ${row.status} test`, { status: row.status, action });
}

export async function startExperiment(tx: Repos, siteId: string, id: string, now: number): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'start') === null) throw refuse(row, 'start');
  if (row.scheduled_end_at !== null && row.scheduled_end_at <= now) throw new AppError('conflict', 'the scheduled end has passed; move it first', { field: 'scheduled_end' });
  const arms = await tx.experiments.arms(siteId, id);
  for (const a of arms) {
    if (a.variant_id === null) continue;
    const v = await tx.experiments.variant(siteId, a.variant_id);
    // A running test shows its variants to visitors: only approved or published content, so that
    // starting a test never bypasses the approval a propose-only token cannot give.
    if (!v || (v.status !== 'approved' && v.status !== 'published')) {
      throw new AppError('conflict', `the variant of arm ${a.label} is ${v?.status ?? 'gone'}; only approved or published variants are tested`, {
        arm_id: a.id,
      });
    }
  }
  const page = row.zone_id !== null ? (await tx.experiments.zone(siteId, row.zone_id))!.page_id : row.page_id!;
  const clash = await tx.experiments.overlapping(siteId, id, row.zone_id, page);
  if (clash.length > 0) {
    throw new AppError('conflict', `another live test shows content in the same zones: ${clash.map((c) => c.id).join(', ')}`, { experiments: clash.map((c) => c.id) });
  }
  await tx.experiments.start(id, now);
  return (await tx.experiments.get(siteId, id))!;
}

export async function pauseExperiment(tx: Repos, siteId: string, id: string, actor: string, now: number): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'pause') === null) throw refuse(row, 'pause');
  await tx.experiments.pause(id, `manual:${actor}`, now);
  return (await tx.experiments.get(siteId, id))!;
}

/** Resumes a paused test. After a guardrail pause the guardrail judges only vitals received from now on. */
export async function resumeExperiment(tx: Repos, siteId: string, id: string, now: number): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'resume') === null) throw refuse(row, 'resume');
  if (row.scheduled_end_at !== null && row.scheduled_end_at <= now) throw new AppError('conflict', 'the scheduled end has passed; end the test or move the end', {});
  await tx.experiments.resume(id, row.pause_reason?.startsWith('guardrail:') === true ? now : row.guardrail_since, now);
  return (await tx.experiments.get(siteId, id))!;
}

/**
 * Ends a running or paused test and emits experiment.ended with the per-arm results.
 * `winner` overrides the results' winner (early stopping decides at its stricter level).
 * `precomputed` results (counted until the same `now`, read before the transaction) keep the
 * aggregation out of the write transaction, so a large test never holds up other writes.
 */
export async function endExperiment(
  tx: Repos,
  siteId: string,
  id: string,
  reason: EndReason,
  actor: string,
  now: number,
  winner?: string | null,
  precomputed?: Results,
): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'end') === null) throw refuse(row, 'end');
  const results = precomputed ?? (await resultsOf(tx, row, now));
  const winning = winner !== undefined ? winner : results.winning_arm_id;
  await tx.experiments.end(id, reason, winning, actor, now);
  const site = await tx.sites.get(siteId);
  const payload = CATALOGUE['experiment.ended'].schema.parse({
    event: 'experiment.ended',
    site_id: siteId,
    experiment_id: id,
    reason,
    started_at: new Date(row.started_at ?? now).toISOString(),
    winning_arm_id: winning,
    currency: site?.currency ?? 'USD',
    arms: results.arms.map((a) => ({
      arm_id: a.arm_id,
      label: a.label,
      control: a.control,
      sessions: a.visitors,
      conversions: a.converters,
      conversion_rate: a.conversion_rate,
      revenue: a.revenue,
      lift: a.comparison?.relative_lift ?? null,
      probability_to_beat_control: a.comparison?.chance_to_beat_control ?? null,
    })),
    timestamp: new Date(now).toISOString(),
  });
  await tx.activity.enqueue(siteId, 'experiment.ended', payload, now);
  return (await tx.experiments.get(siteId, id))!;
}

/**
 * Ships an ended test: the given arm, or the winner the end recorded. The arm's variant is
 * published; the decision shows the shipped arm to everyone (the control: the zone default).
 */
export async function shipExperiment(
  tx: Repos,
  siteId: string,
  id: string,
  armId: string | undefined,
  actor: string,
  now: number,
  precomputed?: Results,
): Promise<ExperimentRow> {
  const row = await requireExperiment(tx, siteId, id);
  if (transition(row.status, 'ship') === null) throw refuse(row, 'ship');
  const chosen = armId ?? row.winning_arm_id;
  if (chosen === null) throw new AppError('conflict', 'the test ended without a winner; name the arm to ship', { field: 'arm_id' });
  const arms = await tx.experiments.arms(siteId, id);
  const arm = arms.find((a) => a.id === chosen);
  if (!arm) throw new AppError('not_found', `no arm ${JSON.stringify(chosen)} in this test`, { field: 'arm_id' });
  if (arm.variant_id !== null) {
    const v = await tx.experiments.variant(siteId, arm.variant_id);
    if (!v || v.status === 'disabled' || v.status === 'archived') throw new AppError('conflict', `the arm's variant is ${v?.status ?? 'gone'}`, { arm_id: arm.id });
    await tx.experiments.publishVariant(arm.variant_id, actor, now);
  }
  const results = precomputed ?? (await resultsOf(tx, row, now));
  await tx.experiments.ship(id, arm.id, actor, now);
  const payload = CATALOGUE['experiment.shipped'].schema.parse({
    event: 'experiment.shipped',
    site_id: siteId,
    experiment_id: id,
    arm_id: arm.id,
    arm_label: arm.label,
    lift: results.arms.find((a) => a.arm_id === arm.id)?.comparison?.relative_lift ?? null,
    shipped_by: actor.startsWith('token:') ? 'user' : 'automation',
    timestamp: new Date(now).toISOString(),
  });
  await tx.activity.enqueue(siteId, 'experiment.shipped', payload, now);
  return (await tx.experiments.get(siteId, id))!;
}

/** Ends a test that set stop_early when the extra-strong early-stopping bar is met; returns whether it ended. */
export async function stopIfSignificant(
  tx: Repos,
  siteId: string,
  id: string,
  now: number,
  precomputed?: { verdict: EarlyStop; results: Results },
): Promise<boolean> {
  const row = await tx.experiments.get(siteId, id);
  if (!row || row.status !== 'running' || row.stop_early !== 1) return false;
  const verdict = precomputed?.verdict ?? (await earlyStopVerdict(tx, row, now));
  if (!verdict.stop) return false;
  await endExperiment(tx, siteId, id, 'significance', 'worker', now, verdict.winning_arm_id, precomputed?.results);
  return true;
}

/** Ends a running or paused test whose scheduled end has passed; returns whether it ended. */
export async function endIfDue(tx: Repos, siteId: string, id: string, now: number, precomputed?: Results): Promise<boolean> {
  const row = await tx.experiments.get(siteId, id);
  if (!row || (row.status !== 'running' && row.status !== 'paused') || row.scheduled_end_at === null || row.scheduled_end_at > now) return false;
  await endExperiment(tx, siteId, id, 'scheduled_end', 'worker', now, undefined, precomputed);
  return true;
}
