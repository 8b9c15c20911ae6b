/**
 * The readout of a layout test: per-arm results counted until it ended (or now), and the
 * early-stopping verdict the worker asks for. Read-only: they take any `Repos`.
 */
import type { Repos } from '../../store/repos.js';
import type { ArmRow, ExperimentRow } from '../../store/experiments.js';
import { computeResults, EARLY_STOP_MIN_RUN_MS, earlyStop, type ArmInfo, type EarlyStop, type Results } from './rules.js';

export function armInfo(a: ArmRow): ArmInfo {
  return { id: a.id, label: a.label, isControl: a.is_control === 1, variantId: a.variant_id, weight: a.weight };
}

/** Per-arm results of a test, counted until it ended (or now). */
export async function resultsOf(r: Repos, row: ExperimentRow, now: number): Promise<Results> {
  const arms = (await r.experiments.arms(row.site_id, row.id)).map(armInfo);
  const aggregates = await r.experiments.aggregates(row.site_id, row.id, row.metric_event, row.ended_at ?? now + 1);
  return computeResults(row.primary_metric, arms, aggregates);
}

/** Whether a running test would stop early now (read-only; the worker asks before it opens a write). */
export async function earlyStopVerdict(r: Repos, row: ExperimentRow, now: number): Promise<EarlyStop> {
  // Too early: answered without aggregating (the worker asks every pass).
  if (row.started_at === null || now - row.started_at < EARLY_STOP_MIN_RUN_MS) return { stop: false, reason: 'too_early', winning_arm_id: null };
  const arms = (await r.experiments.arms(row.site_id, row.id)).map(armInfo);
  const aggregates = await r.experiments.aggregates(row.site_id, row.id, row.metric_event, now + 1);
  return earlyStop(row.primary_metric, arms, aggregates, now - row.started_at);
}
